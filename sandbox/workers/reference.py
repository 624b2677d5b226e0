"""Reference worker: runs only the problem. Validates it, times the eager and torch.compile baselines, profiles
the reference, and checks candidate outputs against outputs it computes itself from the same secret seeds.

It runs before any solution code is imported and in its own process, so a solution can neither slow the
baselines nor see the reference outputs (they are computed after the candidate has written its own).
"""

import copy
import hashlib
import json
import platform
import sys
import threading
from contextlib import contextmanager

import torch

from sandbox import settings, timing_lock
from sandbox.config import EvalConfig
from sandbox.correctness import compare, precise_errors
from sandbox.problem import (
    batch_candidates,
    declared_variants,
    describe_shapes,
    import_file,
    make_inputs,
    make_model,
    spec_of,
    tensors_of,
    variant_inputs,
)
from sandbox.protocol import Channel
from sandbox.timing import measure
from sandbox.transfer import load_tensors
from sandbox.workers.common import (
    become_worker,
    error_text,
    reap_children,
    release_memory,
    select,
    setup_device,
    synchronize,
)


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


def timing_sets(module, seeds, device, config, input_bytes):
    n = max(1, min(config.input_sets, (config.input_budget_mb << 20) // max(1, input_bytes)))
    return [make_inputs(module, s, device) for s in seeds[:n]]


@contextmanager
def tf32(allowed):
    """PyTorch's default precision (allowed=False: full-FP32 matmuls, TF32 convolutions, as PyTorch ships) or the
    precision-matched one (allowed=True: TF32 for matmuls and convolutions alike)."""
    matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = allowed
    torch.backends.cudnn.allow_tf32 = True if allowed else cudnn
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn


def _compiled(model, sets, device, result, suffix, allowed):
    """torch.compile(model) warmed under the precision it will be timed in; None (and the reason) on failure."""
    try:  # compiled before taking the timing lock: compiling takes seconds of CPU, and times nothing
        with tf32(allowed), torch.no_grad():
            compiled = torch.compile(model)
            compiled(*sets[0])
        synchronize(device)
        return compiled
    except Exception as exc:  # noqa: BLE001 -- the eager time stands in, and the verdict says why
        result[f"compiled{suffix}_error"] = f"{type(exc).__name__}: {str(exc)[:500]}"
        return None


def baselines(model, module, device, config, seeds, input_bytes):
    """Eager and torch.compile timings at PyTorch's default precision (the reward's basis, as in the paper) and, on
    CUDA, precision-matched with TF32 allowed (suffix _tf32), so that no reader takes TF32 for an optimization."""
    sets = timing_sets(module, seeds, device, config, input_bytes)
    precisions = [("", False)] + ([("_tf32", True)] if device == "cuda" else [])
    result, compiled = {}, {}
    if config.compiled_baseline:
        for suffix, allowed in precisions:
            compiled[suffix] = _compiled(model, sets, device, result, suffix, allowed)
    protocol = None  # chosen by the first eager timing (launch-bound or not), then kept for every other one
    with timing_lock.exclusive(device):
        for suffix, allowed in precisions:
            with tf32(allowed):
                eager = measure(model, sets, device, config, protocol)
                result[f"eager{suffix}"], protocol = eager.to_json(), protocol or eager.protocol
                if compiled.get(suffix) is not None:
                    try:
                        result[f"compiled{suffix}"] = measure(
                            compiled[suffix], sets, device, config, protocol
                        ).to_json()
                    except Exception as exc:  # noqa: BLE001
                        result[f"compiled{suffix}_error"] = f"{type(exc).__name__}: {str(exc)[:500]}"
    result["protocol"] = protocol
    return result, sets


# Bumped when the way baselines are measured changes, so that older cache entries are measured again
# (2: under the host's timing lock, with the timer's own overhead taken as its minimum rather than its median;
# 3: precision-matched (TF32) baselines beside PyTorch's defaults on CUDA;
# 4: `auto` timing, launch-bound problems by graph replay, the protocol stored for the candidate).
BASELINE_PROTOCOL = 4


def cached_baselines(key, device):
    """(cache file name, baselines or None): keyed by problem, timing protocol, GPU model and torch version."""
    hardware = torch.cuda.get_device_name() if device == "cuda" else platform.processor() or platform.machine()
    name = hashlib.sha256(f"{key}|{hardware}|{torch.__version__}|{BASELINE_PROTOCOL}".encode()).hexdigest()
    path = settings.cache_dir() / "baselines" / f"{name}.json"
    try:
        return name, json.loads(path.read_text())
    except (OSError, ValueError):
        return name, None


def main(read_fd, write_fd):
    become_worker()
    try:
        serve(Channel(read_fd, write_fd))
    finally:
        reap_children()


def serve(channel):
    start = channel.recv()
    device, config = start["device"], EvalConfig.from_json(start["config"])
    try:
        setup_device(device)
        module = import_file(start["problem"], "ks_problem")
        model, spec = validate(module, device, start["init_seed"], start["validation_seed"])
        variants = shape_variants(module, model, device, start["validation_seed"]) if start.get("shape_check") else []
    except Exception as exc:  # noqa: BLE001 -- every failure becomes the problem's error message
        reason = (
            str(exc) if isinstance(exc, ValueError) else f"importing the problem failed: {type(exc).__name__}: {exc}"
        )
        channel.send("invalid", reason=reason, log=error_text(exc))
        return
    ready = {"spec": spec, "variants": variants}
    sets = None
    if start.get("measure"):
        name, cached = cached_baselines(start["cache_key"], device)
        ready.update(cache_name=name, cached=cached is not None)
        if cached is not None:
            ready["baselines"] = cached
        else:
            ready["baselines"], sets = baselines(
                model, module, device, config, start["timing_seeds"], spec["input_bytes"]
            )
    if start.get("profile"):
        from sandbox.profiling import kernel_table

        first = (sets or timing_sets(module, start["timing_seeds"][:1], device, config, spec["input_bytes"]))[0]
        ready["profile"] = kernel_table(lambda: model(*first), device)
    sets = first = None  # free the timing inputs before the trials, and give their memory to the candidate
    release_memory(device)
    channel.send("ready", **ready)
    precise = Float64Reference(model, module, device, start["validation_seed"]) if config.precision_check else None
    while True:
        msg = channel.recv()
        if msg["kind"] != "check":
            return
        variant = msg.get("variant")
        inputs = (
            variant_inputs(module, variant, msg["seed"], device)
            if variant
            else make_inputs(module, msg["seed"], device)
        )
        with torch.no_grad():
            reference = tensors_of(model(*inputs))
        inputs = None
        expected = select(reference, msg.get("sample_seed"), config.sample_elements)
        got = load_tensors(msg["path"])
        result = compare(expected, got, config.atol, config.rtol).to_json()
        if precise is not None and msg.get("precise"):
            result.update(precise.errors(msg["seed"], msg.get("sample_seed"), config.sample_elements, expected, got))
        reference = expected = got = None
        release_memory(device)
        channel.send("checked", **result)


class Float64Reference:
    """The problem's model in float64: the solution's error against it, beside the FP32 reference's own, shows the
    precision a solution gives up (a TF32 GEMM, say). A model that cannot run in float64 reports no such error.

    The copy is made and warmed (its first float64 kernels loaded) in a thread while the candidate loads, so the
    first trial does not wait for it; it is joined before any check, and long before the candidate is timed."""

    def __init__(self, model, module, device, warm_seed):
        self.module, self.device = module, device
        self.model, self.failed = None, ""
        self._thread = threading.Thread(target=self._prepare, args=(model, warm_seed), daemon=True)
        self._thread.start()

    def _inputs(self, seed):
        return [
            t.double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t
            for t in make_inputs(self.module, seed, self.device)
        ]

    def _run(self, seed):
        with torch.no_grad():
            return tensors_of(self.model(*self._inputs(seed)))

    def _prepare(self, model, seed):
        try:
            self.model = copy.deepcopy(model).double()
            self._run(seed)
            synchronize(self.device)
        except Exception as exc:  # noqa: BLE001 -- float64 is a report, never a verdict
            self.failed = f"the model does not run in float64: {type(exc).__name__}: {str(exc)[:200]}"
            self.model = None

    def errors(self, seed, sample_seed, sample_elements, expected, got):
        self._thread.join()
        if not self.failed:
            try:
                precise = select(self._run(seed), sample_seed, sample_elements)
            except Exception as exc:  # noqa: BLE001
                self.failed = f"the model does not run in float64: {type(exc).__name__}: {str(exc)[:200]}"
        if self.failed:
            return {"fp64_error": self.failed}
        solution_abs, solution_rel = precise_errors(precise, got)
        reference_abs, _ = precise_errors(precise, expected)
        return {
            "max_abs_error_fp64": solution_abs,
            "max_rel_error_fp64": solution_rel,
            "reference_abs_error_fp64": reference_abs,
        }


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
