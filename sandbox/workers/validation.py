"""Whether a problem is one the sandbox can serve: its Model, get_inputs and get_init_inputs exist, construct, run
deterministically and return tensors (validate), and which other input sizes its Model accepts (shape_variants). Every
refusal is a ValueError whose message the problem's author reads."""

import os

import torch

from sandbox import settings
from sandbox.problem import (
    batch_candidates,
    declared_variants,
    describe_shapes,
    make_inputs,
    make_model,
    spec_of,
    tensors_of,
    variant_inputs,
)
from sandbox.workers.common import release_memory, synchronize


def validate(module, device, init_seed, seed):
    """The problem's model and its spec; raises ValueError with a message a problem author can act on."""
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, name):
            raise ValueError(
                f"the problem defines no {name}: a KernelBench problem needs class Model(nn.Module), "
                f"get_inputs() and get_init_inputs()"
            )
    if not (isinstance(module.Model, type) and issubclass(module.Model, torch.nn.Module)):
        raise ValueError("Model must be a subclass of torch.nn.Module")
    try:
        model = make_model(module.Model, module, init_seed, device)
    except Exception as exc:
        raise ValueError(f"constructing Model(*get_init_inputs()) failed: {type(exc).__name__}: {exc}") from exc
    runs = []
    for run in range(2):
        try:
            inputs = make_inputs(module, seed, device)
        except Exception as exc:
            raise ValueError(f"get_inputs() failed: {type(exc).__name__}: {exc}") from exc
        if run:
            # The same inputs under another random state: a forward that draws random numbers (dropout in
            # training mode) now differs, as it would for any kernel that cannot replay torch's generator.
            torch.manual_seed(seed + 1)
        try:
            with torch.no_grad():
                out = model(*inputs)
            synchronize(device)
        except Exception as exc:
            raise ValueError(f"Model.forward failed on get_inputs(): {type(exc).__name__}: {exc}") from exc
        tensors = tensors_of(out)
        if tensors is None:
            raise ValueError(
                f"Model.forward returned {type(out).__name__}; it must return a tensor or a tuple of tensors"
            )
        runs.append((inputs, tensors))
    (in1, out1), (in2, out2) = runs
    for a, b in zip(in1, in2):
        if isinstance(a, torch.Tensor) and not torch.equal(a, b):
            raise ValueError(
                "get_inputs() is not deterministic under a fixed seed: draw inputs with torch's "
                "random functions (seeded by the harness), not from other sources"
            )
    for a, b in zip(out1, out2):
        same = (
            torch.equal(a, b)
            if not a.is_floating_point()
            else torch.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True)
        )
        if not same:
            raise ValueError(
                "Model.forward is not deterministic: two runs on the same inputs differ (dropout in "
                "training mode, or another random operator?)"
            )
    ptrs = {t.data_ptr() for t in in1 if isinstance(t, torch.Tensor)}
    spec = {
        "inputs": spec_of(in1),
        "outputs": spec_of(out1 if len(out1) > 1 else out1[0]),
        "output_bytes": sum(t.numel() * t.element_size() for t in out1),
        "input_bytes": sum(t.numel() * t.element_size() for t in in1 if isinstance(t, torch.Tensor)),
        "aliases_input": any(t.data_ptr() in ptrs for t in out1),
    }
    return model, spec


def memory_budget(device):
    """Bytes one process may use for a shape trial that scales the batch up: a share of the device's memory (the
    host's, within the jail's limit, on the CPU), since the reference and the candidate hold their tensors at once."""
    if device == "cuda":
        total = torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory
    else:
        total = min(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), settings.MEMORY_MB << 20)
    return int(total * settings.SHAPE_TRIAL_MEMORY_SHARE), total


def _peak_bytes(device, inputs, tensors, base):
    """What the reference held at its peak for one variant: the allocator's peak on CUDA; on the CPU its inputs, the
    batch's first draw (from which the larger batch was concatenated) and its outputs."""
    if device == "cuda":
        return torch.cuda.max_memory_allocated() - base
    held = [t for t in list(inputs) + list(tensors) if isinstance(t, torch.Tensor)]
    return 2 * sum(t.numel() * t.element_size() for t in held)


def shape_variants(module, model, device, seed):
    """The input variants the reference Model accepts (sandbox.problem's records), each with its input shapes and its
    output's spec: the problem's declared get_input_variants(), else its batch scaled down and up. A declared variant
    the Model rejects makes the problem invalid (ValueError); a batch size it rejects is not a variant. A larger batch
    whose reference alone needs more than memory_budget() is returned with "skipped" (its reason) and not tried:
    two processes holding it at once would run the device out of memory, whatever the solution."""
    budget, total = memory_budget(device)
    try:
        declared = declared_variants(module)
    except Exception as exc:
        raise ValueError(f"get_input_variants() failed: {type(exc).__name__}: {exc}") from exc
    if declared:
        candidates = [{"kind": "declared", "index": i} for i in range(declared)]
    else:
        candidates = batch_candidates(make_inputs(module, seed, device))
    found, scales = [], set()
    for variant in candidates:
        if variant["kind"] == "batch" and variant["scale"] in scales:
            continue  # this batch size is covered by a more inclusive variant already
        where = f"get_input_variants()[{variant.get('index')}]"
        base = 0
        if device == "cuda":
            release_memory(device)
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
        try:
            inputs = variant_inputs(module, variant, seed, device)
            with torch.no_grad():
                out = model(*inputs)
            synchronize(device)
            tensors = tensors_of(out)
        except Exception as exc:
            release_memory(device)
            if declared:
                raise ValueError(f"{where}: Model.forward failed: {type(exc).__name__}: {exc}") from exc
            continue
        if tensors is None:
            if declared:
                raise ValueError(f"{where}: Model.forward returned {type(out).__name__}, not tensors")
            continue
        record = {
            **variant,
            "shapes": describe_shapes(spec_of(inputs)),
            "outputs": spec_of(out if len(tensors) > 1 else tensors[0]),
            "output_bytes": sum(t.numel() * t.element_size() for t in tensors),
        }
        peak = _peak_bytes(device, inputs, tensors, base)
        inputs = out = tensors = None
        release_memory(device)
        if variant["kind"] == "batch" and variant["scale"] > 1 and peak > budget:
            record["skipped"] = (
                f"the reference alone needs {peak / 2**30:.1f} GiB at these shapes, over "
                f"{settings.SHAPE_TRIAL_MEMORY_SHARE:.0%} of the {'device' if device == 'cuda' else 'host'}'s "
                f"{total / 2**30:.1f} GiB (KS_SHAPE_TRIAL_MEMORY_SHARE)"
            )
        found.append(record)
        scales.add(variant.get("scale"))
    return found
