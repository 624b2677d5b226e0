"""Whether a problem is one the sandbox can serve: its Model, get_inputs and get_init_inputs exist, construct, run
deterministically and return tensors (validate), and which other input sizes its Model accepts (shape_variants). Every
refusal is a ValueError whose message the problem's author reads."""

import torch

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


def shape_variants(module, model, device, seed):
    """The input variants the reference Model accepts (sandbox.problem's records), each with its input shapes and its
    output's spec: the problem's declared get_input_variants(), else its batch scaled down and up. A declared variant
    the Model rejects makes the problem invalid (ValueError); a batch size it rejects is not a variant."""
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
        found.append(
            {
                **variant,
                "shapes": describe_shapes(spec_of(inputs)),
                "outputs": spec_of(out if len(tensors) > 1 else tensors[0]),
                "output_bytes": sum(t.numel() * t.element_size() for t in tensors),
            }
        )
        scales.add(variant.get("scale"))
        inputs = out = tensors = None
    return found
