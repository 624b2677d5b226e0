"""Reference worker: runs only the problem. Validates it, times the eager and torch.compile baselines, profiles
the reference, and checks candidate outputs against outputs it computes itself from the same secret seeds.

It runs in its own process and measures baselines before any solution code is imported, so a solution can neither
slow the baselines nor see the reference outputs (they are computed after the candidate has written its own). Cached
baselines are trusted once a short probe of eager agrees with them: one measured under load is measured again.

Messages (an evaluation): start -> invalid, or validated -> measure -> ready -> check/checked ... -> exit.
"""

import copy
import hashlib
import json
import os
import platform
import threading
import time
from contextlib import contextmanager

import torch

from sandbox import settings, timing_lock
from sandbox.config import EvalConfig
from sandbox.correctness import Comparison, compare, compare_special, precise_errors
from sandbox.problem import make_inputs, tensors_of, variant_inputs
from sandbox.timing import measure
from sandbox.transfer import load_tensors
from sandbox.worker_start import ProblemRejected, open_problem, worker_main
from sandbox.workers.common import release_memory, select, synchronize


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
    # Under the device's timing lock (on the cores the worker has): the first call autotunes the generated kernels
    # by timing them, and beside another evaluation's timing it both picks slower ones and disturbs that timing (on
    # the H100, a 1 us problem's torch.compile baseline measured 1.23-2.03 us beside other evaluations, 1.42-1.50 us
    # alone). Fresh compiles still differ: inductor's autotuning picks between near-tied configs by noise (1.15-1.76 us
    # across five compiles, pinned or not), so concurrent evaluations of a problem share one measurement
    # (timing_lock.measuring_once) and later ones the cache.
    try:
        with timing_lock.exclusive(device, pin=False), tf32(allowed), torch.no_grad():
            compiled = torch.compile(model)
            compiled(*sets[0])
            synchronize(device)
        return compiled
    except Exception as exc:  # noqa: BLE001 -- the eager time stands in, and the verdict says why
        result[f"compiled{suffix}_error"] = f"{type(exc).__name__}: {str(exc)[:500]}"
        return None


def baselines(model, sets, device, config):
    """Eager and torch.compile timings at PyTorch's default precision (the reward's basis, as in the paper) and, on
    CUDA, precision-matched with TF32 allowed (suffix _tf32), so that no reader takes TF32 for an optimization; with
    the conditions they were measured under, for a person reading the cache."""
    loadavg = _loadavg()
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
    result["conditions"] = {
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "loadavg": loadavg,
        "eager_spread_pct": result["eager"]["spread_pct"],
    }
    return result


def _loadavg():
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # no /proc/loadavg in this jail
        return None


# The probe of cached baselines: a few samples, a fraction of a second for a problem of up to a few milliseconds.
PROBE = {"warmup_s": 0.02, "time_budget_s": 0.05, "min_samples": 5, "max_samples": 20}


def probe(model, sets, device, config, cached):
    """Eager timed again, briefly, by the cached baselines' protocol and under the same lock: (its Timing as JSON, why
    the cached baselines are stale or ""). Only a cached median well above the probe's is stale: a probe slower than
    the cache says the machine is busy now, and the quieter figure stands."""
    with timing_lock.exclusive(device), tf32(False):
        now = measure(model, sets, device, config.replace(**PROBE), cached.get("protocol")).to_json()
    then = cached["eager"]["median_ms"]
    if then > settings.STALE_BASELINE_RATIO * now["median_ms"]:
        return now, f"the cached eager median {then:.4g} ms was slower than a probe's {now['median_ms']:.4g} ms"
    return now, ""


# Bumped when the way baselines are measured changes, so that older cache entries are measured again
# (2: under the host's timing lock, with the timer's own overhead taken as its minimum rather than its median;
# 3: precision-matched (TF32) baselines beside PyTorch's defaults on CUDA;
# 4: `auto` timing, launch-bound problems by graph replay, the protocol stored for the candidate;
# 5: torch.compile's first call, which autotunes, under the timing lock).
BASELINE_PROTOCOL = 5


def cache_entry(key, device, kind=""):
    """(cache file name, the JSON stored under it or None): keyed by KEY, GPU model (or CPU), torch version and timing
    protocol. KIND names what it holds besides baselines ('fp64-': a solution's float64 errors)."""
    hardware = torch.cuda.get_device_name() if device == "cuda" else platform.processor() or platform.machine()
    name = kind + hashlib.sha256(f"{key}|{hardware}|{torch.__version__}|{BASELINE_PROTOCOL}".encode()).hexdigest()
    path = settings.cache_dir() / "baselines" / f"{name}.json"
    try:
        return name, json.loads(path.read_text())
    except (OSError, ValueError):
        return name, None


def serve(channel):
    start = channel.recv()
    device, config = start["device"], EvalConfig.from_json(start["config"])
    try:
        # Kernels that are not timed hold the device's lock shared (without its gate: the harness may hold it
        # shared for this evaluation's candidate and wait for this): no timing of another evaluation meanwhile.
        with timing_lock.shared(device, gate=False):
            module, model, spec, variants = open_problem(start)
    except ProblemRejected as exc:
        channel.send("invalid", reason=exc.reason, log=exc.log)
        return
    ready = {"spec": spec, "variants": variants}
    sets = None
    if start.get("measure"):
        channel.send("validated")
        if channel.recv()["kind"] != "measure":  # sent once the solution is built and the candidate idle
            return
        # Looked up now: an evaluation of the same problem may have measured them while this one waited.
        name, cached = cache_entry(start["cache_key"], device)
        sets = timing_sets(module, start["timing_seeds"], device, config, spec["input_bytes"])
        stale = ""
        if cached is not None:
            ready["probe"], stale = probe(model, sets, device, config, cached)
        ready.update(cache_name=name, cached=cached is not None and not stale, stale=stale)
        if ready["cached"]:
            ready["baselines"] = cached
        else:
            ready["baselines"] = baselines(model, sets, device, config)
            if stale:  # what the entry replaces, beside what it was measured under
                ready["baselines"]["conditions"]["replaced"] = stale
    if start.get("profile"):
        from sandbox.profiling import kernel_table

        with timing_lock.shared(device, gate=False):
            first = (sets or timing_sets(module, start["timing_seeds"][:1], device, config, spec["input_bytes"]))[0]
            ready["profile"] = kernel_table(lambda: model(*first), device)
    sets = first = None  # free the timing inputs before the trials, and give their memory to the candidate
    release_memory(device)
    stored = None
    if config.precision_check and start.get("precision_key"):
        # The float64 errors report, they decide nothing: a problem and solution measured before are not run again.
        name, stored = cache_entry(start["precision_key"], device, "fp64-")
        ready["precision"] = {"cache_name": name, "errors": stored}
    channel.send("ready", **ready)
    precise = (
        Float64Reference(model, module, device, start["validation_seed"])
        if config.precision_check and stored is None
        else None
    )
    while True:
        msg = channel.recv()
        if msg["kind"] != "check":
            return
        variant = msg.get("variant")
        if precise is not None:
            # Its warm-up draws inputs too, from the same global generator: drawing beside it would reseed this
            # check's draw halfway (a loaded machine saw a correct solution judged incorrect, 66% of outputs off).
            precise.wait()
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
        special = None
        if msg.get("special"):  # NaN/Inf in a sampled output: every position of them, after the sample
            got, specials = got[: len(reference)], got[len(reference) :]
            special = (
                compare_special(reference, specials)
                if len(specials) == 2 * len(reference)
                else Comparison(False, "the output's NaN/Inf positions did not come back whole", mismatched=1)
            )
        result = (special or compare(expected, got, config.atol, config.rtol)).to_json()
        if (
            special is None
            and not result["ok"]
            and config.precision_check
            and 0 < result["mismatched"] <= SETTLED * result["compared"]
        ):
            # The FP32 reference can be the one that is off (cuDNN's RNNs and convolutions take TF32 by default, a
            # division by a near-zero input magnifies its rounding): float64 settles it. Only a few values apart:
            # that is rounding; an output mostly off is a wrong kernel, and is not run again in float64.
            if precise is None:
                precise = Float64Reference(model, module, device, start["validation_seed"])
            result.update(
                precise.settle(
                    msg["seed"],
                    msg.get("sample_seed"),
                    config.sample_elements,
                    expected,
                    got,
                    config.atol,
                    config.rtol,
                    variant,
                )
            )
        if precise is not None and msg.get("precise"):
            result.update(precise.errors(msg["seed"], msg.get("sample_seed"), config.sample_elements, expected, got))
        reference = expected = got = None
        release_memory(device)
        channel.send("checked", **result)


SETTLED = 0.01  # the largest share of values outside tolerance that float64 is asked to settle


class Float64Reference:
    """The problem's model in float64: the solution's error against it, beside the FP32 reference's own, shows the
    precision a solution gives up (a TF32 GEMM, say). A model that cannot run in float64 reports no such error.

    The copy is made and warmed (its first float64 kernels loaded) in a thread while the candidate loads, so the
    first trial does not wait for it; it is joined before any check draws inputs, and long before the candidate is
    timed."""

    def __init__(self, model, module, device, warm_seed):
        self.module, self.device = module, device
        self.model, self.failed = None, ""
        self._thread = threading.Thread(target=self._prepare, args=(model, warm_seed), daemon=True)
        self._thread.start()

    def _inputs(self, seed, variant=None):
        inputs = (
            variant_inputs(self.module, variant, seed, self.device)
            if variant
            else make_inputs(self.module, seed, self.device)
        )
        return [t.double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in inputs]

    def _run(self, seed, variant=None):
        with torch.no_grad():
            return tensors_of(self.model(*self._inputs(seed, variant)))

    def _prepare(self, model, seed):
        try:
            with timing_lock.shared(self.device, gate=False):
                self.model = copy.deepcopy(model).double()
                self._run(seed)
                synchronize(self.device)
        except Exception as exc:  # noqa: BLE001 -- float64 is a report, never a verdict
            self.failed = f"the model does not run in float64: {type(exc).__name__}: {str(exc)[:200]}"
            self.model = None

    def wait(self):
        """Until the warm-up is done: it draws its inputs from torch's global generator, as every check does."""
        self._thread.join()

    def settle(self, seed, sample_seed, sample_elements, expected, got, atol, rtol, variant=None):
        """Where the solution (GOT) and the FP32 reference (EXPECTED) disagree beyond tolerance: the fields that make
        the comparison pass when the solution is within ATOL/RTOL of the float64 outputs, which the FP32 reference is
        not; else nothing. Inputs come from SEED as the trial's did, so the solution cannot steer this."""
        self.wait()
        if self.failed:
            return {}
        try:
            precise = select(self._run(seed, variant), sample_seed, sample_elements)
        except Exception as exc:  # noqa: BLE001
            self.failed = f"the model does not run in float64: {type(exc).__name__}: {str(exc)[:200]}"
            return {}
        rounded = [p.to(g.dtype) if p.is_floating_point() else p for p, g in zip(precise, got)]
        against = compare(rounded, got, atol, rtol)
        if not against.ok or compare(rounded, expected, atol, rtol).ok:
            return {}  # the solution is off float64 too, or the reference is not: the FP32 verdict stands
        solution_abs, solution_rel = precise_errors(precise, got)
        reference_abs, _ = precise_errors(precise, expected)
        return {
            "ok": True,
            "reason": "",
            "judged_by": (
                f"float64: the FP32 reference is off by {reference_abs:.3g} here, the solution by {solution_abs:.3g} "
                f"(within atol={atol}, rtol={rtol} of float64)"
            ),
            "max_abs_error_fp64": solution_abs,
            "max_rel_error_fp64": solution_rel,
            "reference_abs_error_fp64": reference_abs,
        }

    def errors(self, seed, sample_seed, sample_elements, expected, got):
        self.wait()
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
    worker_main(serve, "sandbox.workers.reference", __doc__.split("\n\n")[0])
