"""The jailed probe: runs one candidate problem stage by stage for the filters, reusing the sandbox's reference
worker (validation, timing sets) and timing protocol. Started by training.synthesis.pipeline through the
sandbox's Jail; the parent decides after every stage whether the next one is worth its cost.

Messages: start -> checked (validation, triviality facts, fingerprint); eager -> eager (timing, profile);
compile -> compiled (traced, ran, agreed with eager); time_compiled -> compiled_timing; exit.
"""

import platform
import time
from pathlib import Path

import torch

from sandbox.config import EvalConfig
from sandbox.correctness import compare
from sandbox.problem import make_inputs, tensors_of
from sandbox.profiling import kernel_table
from sandbox.timing import measure
from sandbox.worker_start import ProblemRejected, open_problem, worker_main
from sandbox.workers.common import error_text, synchronize
from sandbox.workers.reference import timing_sets


def float64_mismatch(model, inputs, outputs, atol, rtol):
    """The share of OUTPUTS' values (MODEL's float32 outputs on INPUTS) outside ATOL/RTOL of the same model run in
    float64 and rounded back: where float32's own rounding decides the result; None where the model has no
    floating output or does not run in float64."""
    import copy

    if not any(t.is_floating_point() for t in outputs):
        return None
    try:
        precise = copy.deepcopy(model).double()
        with torch.no_grad():
            wide = tensors_of(precise(*[t.double() if t.is_floating_point() else t for t in inputs]))
    except Exception:  # noqa: BLE001 -- float64 is a check where it runs, never a failure of its own
        return None
    mismatched = total = 0
    for out, ref in zip(outputs, wide):
        if out.is_floating_point():
            result = compare([ref.to(out.dtype)], [out], atol, rtol)
            mismatched, total = mismatched + result.mismatched, total + max(result.compared, out.numel())
    return mismatched / max(total, 1)


def facts_of(module, model, spec, device, seeds, tolerance=(1e-2, 1e-2)):
    """What the not_trivial, runs and well_conditioned filters look at, from outputs on two different input draws
    (TOLERANCE: the sandbox's atol and rtol)."""
    outs, inputs = [], None
    for seed in seeds:
        drawn = make_inputs(module, seed, device)
        with torch.no_grad():
            outs.append(tensors_of(model(*drawn)))
        inputs = inputs or drawn
    synchronize(device)
    first, second = outs
    equals = None
    for k, t in enumerate(inputs):
        if (
            isinstance(t, torch.Tensor)
            and len(first) == 1
            and t.shape == first[0].shape
            and t.dtype == first[0].dtype
            and torch.allclose(first[0].float(), t.float(), rtol=1e-5, atol=1e-6)
        ):
            equals = k
    return {
        "device_name": torch.cuda.get_device_name() if device == "cuda" else platform.processor() or platform.machine(),
        "finite": all(bool(torch.isfinite(t).all()) for t in first if t.is_floating_point()),
        "constant": all(t.numel() > 1 and bool((t == t.reshape(-1)[0]).all()) for t in first),
        "input_independent": all(torch.equal(a, b) for a, b in zip(first, second)),
        "equals_input": equals,
        "aliases_input": spec.get("aliases_input", False),
        "float64_mismatch": float64_mismatch(model, inputs, first, *tolerance),
    }


def serve(channel):
    start = channel.recv()
    device, config = start["device"], EvalConfig.from_json(start["config"])
    try:
        module, model, spec, _ = open_problem(start)
    except ProblemRejected as exc:  # every failure is a filter's reason
        which = "deterministic" if "not deterministic" in exc.reason else "runs"
        channel.send("checked", ok=False, filter=which, reason=exc.reason[:2000], log=exc.log)
        return
    try:
        facts = facts_of(module, model, spec, device, start["fact_seeds"], (config.atol, config.rtol))
    except Exception as exc:  # noqa: BLE001
        reason = f"a second run failed: {type(exc).__name__}: {exc}"
        channel.send("checked", ok=False, filter="runs", reason=reason[:2000], log=error_text(exc))
        return
    fingerprint = None
    if start.get("fingerprint"):
        from training.synthesis.dedup import fingerprint as fingerprint_of

        fingerprint = fingerprint_of(Path(start["problem"]).read_text(), "ks_problem_meta")
    channel.send("checked", ok=True, spec=spec, facts=facts, fingerprint=fingerprint)
    sets, eager_out = None, None
    while True:
        msg = channel.recv()
        kind = msg["kind"]
        if kind == "eager":
            sets = timing_sets(module, start["timing_seeds"], device, config, spec["input_bytes"])
            timing = measure(model, sets, device, config)
            rows = kernel_table(lambda: model(*sets[0]), device, reps=3)
            channel.send("eager", timing=timing.to_json(), profile=rows)
        elif kind == "compile":
            with torch.no_grad():
                eager_out = tensors_of(model(*sets[0]))
            t0 = time.monotonic()
            try:
                compiled = torch.compile(model, fullgraph=msg.get("fullgraph", True))
                with torch.no_grad():
                    got = tensors_of(compiled(*sets[0]))
                synchronize(device)
            except Exception as exc:  # noqa: BLE001 -- the compiles filter's reason
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                channel.send(
                    "compiled",
                    ok=False,
                    reason=f"torch.compile failed: {type(exc).__name__}: {first}"[:1000],
                    compile_s=round(time.monotonic() - t0, 3),
                    log=error_text(exc),
                )
                continue
            compile_s = round(time.monotonic() - t0, 3)
            if got is None:
                channel.send("compiled", ok=False, reason="the compiled model returned no tensors", compile_s=compile_s)
                continue
            agreed = compare([t.cpu() for t in eager_out], [t.cpu() for t in got], config.atol, config.rtol)
            if not agreed.ok:
                channel.send(
                    "compiled",
                    ok=False,
                    compile_s=compile_s,
                    reason=f"the compiled model disagrees with eager: {agreed.reason}",
                )
                continue
            channel.send("compiled", ok=True, compile_s=compile_s)
        elif kind == "time_compiled":
            channel.send("compiled_timing", timing=measure(compiled, sets, device, config).to_json())
        else:
            return


if __name__ == "__main__":
    worker_main(serve, "training.synthesis.probe", __doc__.split("\n\n")[0])
