"""One candidate through the pipeline: compose, fingerprint and claim, then the jailed probe stage by stage with a
filter after each, rescaling the batch when the eager time misses the window. `synthesize_one` is what a runner
thread or an RQ job calls; it returns an Attempt and never raises for a bad candidate.
"""

import logging
import math
import random
import secrets
import time
from contextlib import contextmanager
from pathlib import Path

from sandbox import timing_lock
from sandbox.config import EvalConfig
from sandbox.harness import StageFailed, Worker
from sandbox.isolation import Jail
from training.synthesis import filters
from training.synthesis.compose import LLMComposer, batch_of, compose, draw_depth, rescale
from training.synthesis.dataset import Attempt, TaskRecord
from training.synthesis.dedup import fingerprint
from training.synthesis.seeds import catalogue

log = logging.getLogger(__name__)
# Per-sample bytes (inputs + output) times this bounds the memory a rescaled batch may use.
MEMORY_BUDGET_BYTES = {"cuda": 16 << 30, "cpu": 2 << 30}
INTERMEDIATES = 8


@contextmanager
def device_lock(device):
    """Timing is exclusive per device across every thread and worker process of this host, evaluations included:
    concurrent probes would slow each other's measurements. Compiling and validating stay parallel."""
    timing_lock.ensure(device)
    with timing_lock.exclusive(device):
        yield


def eval_config(run):
    return EvalConfig(
        device=run.device,
        time_budget_s=run.time_budget_s,
        min_samples=5,
        max_samples=100,
        warmup_s=0.05,
        input_sets=2,
        timeout_s=run.timeout_s,
    )


class Probe:
    """The parent side of training.synthesis.probe for one problem source: each stage behind a filter."""

    def __init__(self, source, run, claims, owner):
        self.source, self.run, self.claims, self.owner = source, run, claims, owner
        self.verdicts, self.facts = [], {}
        self.exec_s = 0.0

    def _stage(self, worker, kind, reply, **data):
        worker.restart_clock(self.run.timeout_s)
        worker.send(kind, **data)
        return worker.recv(reply)

    def run_stages(self, fp):
        """Verdicts in filter order; stops at the first failure. FP: the fingerprint when already known."""
        t0 = time.monotonic()
        config = eval_config(self.run)
        try:
            with Jail("synth", self.run.device) as jail:
                problem = Path(jail.path("problem.py"))
                problem.write_text(self.source)
                jail.own(problem)
                worker = Worker(jail, "training.synthesis.probe", "probe", self.run.timeout_s)
                try:
                    return self._drive(worker, problem, config, fp)
                finally:
                    worker.close()
        except StageFailed as failure:
            what = "took too long" if failure.status == "timeout" else "crashed"
            self.verdicts.append(filters.FilterVerdict("runs", False, f"the probe {what}: {failure.log[-1500:]}"))
            return self.verdicts
        finally:
            self.exec_s += time.monotonic() - t0

    def _check(self, verdict):
        self.verdicts.append(verdict)
        return verdict.passed

    def _drive(self, worker, problem, config, fp):
        checked = self._stage(
            worker,
            "start",
            "checked",
            device=self.run.device,
            config=config.to_json(),
            problem=str(problem),
            init_seed=secrets.randbits(31),
            validation_seed=secrets.randbits(31),
            fact_seeds=[secrets.randbits(31), secrets.randbits(31)],
            timing_seeds=[secrets.randbits(31) for _ in range(config.input_sets)],
            fingerprint=fp is None,
        )
        self.facts["spec"] = checked.get("spec")
        self.facts["device_name"] = (checked.get("facts") or {}).get("device_name", "")
        if not (
            self._check(filters.runs(checked))
            and self._check(filters.deterministic(checked))
            and self._check(filters.well_conditioned(checked))
            and self._check(filters.not_trivial(checked))
        ):
            return self.verdicts
        if fp is None:
            self.facts["fingerprint"] = checked.get("fingerprint")
            if not self._check(filters.not_duplicate(checked.get("fingerprint"), self.claims, self.owner)):
                return self.verdicts
        with device_lock(self.run.device):
            eager = self._stage(worker, "eager", "eager")
        self.facts["eager"] = eager["timing"]
        if not (
            self._check(filters.eager_window(eager["timing"]["median_ms"], self.run.window_ms))
            and self._check(filters.not_dominated(eager["profile"], self.run.max_share))
        ):
            return self.verdicts
        compiled = self._stage(worker, "compile", "compiled", fullgraph=self.run.fullgraph)
        self.facts["compile_s"] = compiled.get("compile_s")
        if not self._check(filters.compiles(compiled)):
            return self.verdicts
        with device_lock(self.run.device):
            self.facts["compiled"] = self._stage(worker, "time_compiled", "compiled_timing")["timing"]
        worker.send("exit")
        return self.verdicts


def _composer(run):
    if run.composer == "llm":
        from agent.policies import make_policy

        return LLMComposer(make_policy("openai", **run.llm))
    return None


def synthesize_one(index, run, claims, run_id="run"):
    """Candidate INDEX of RUN (deterministic in run.seed and INDEX) through every filter (only composition and
    de-duplication with run.compose_only): an Attempt."""
    t0 = time.monotonic()
    rng = random.Random(f"{run.seed}:{index}")
    owner = f"{run_id}/task-{index:06d}"
    seeds = catalogue()
    try:
        llm = _composer(run)
        if llm is not None:
            candidate = llm.compose(rng, seeds, depth=draw_depth(rng, run.max_depth), classes=run.classes)
            fp = None  # untrusted source: fingerprinted inside the jail
        else:
            candidate = compose(
                rng, seeds, run.profile, depth=draw_depth(rng, run.max_depth), dtype=run.dtype, classes=run.classes
            )
            fp = fingerprint(candidate.source, f"ks_candidate_{index}")
    except Exception as exc:  # noqa: BLE001 -- composition errors and unreachable LLM back-ends alike
        return Attempt(
            index,
            "",
            [],
            [],
            0,
            run.composer,
            False,
            [filters.composes(str(exc)[:500]).to_json()],
            "composes",
            0.0,
            time.monotonic() - t0,
        )
    verdicts = [filters.composes(None)]
    attempt = Attempt(
        index, candidate.name, candidate.seeds, candidate.op_classes, candidate.depth, candidate.composer, False, []
    )
    if fp is not None:
        dup = filters.not_duplicate(fp, claims, owner)
        verdicts.append(dup)
        if not dup.passed:
            return _finish(attempt, verdicts, t0)
        if run.compose_only:
            attempt.kept = True
            attempt.task = _record(run, run_id, index, candidate, candidate.source, fp, verdicts, {})
            return _finish(attempt, verdicts, t0)
    source, probe = candidate.source, None
    for resize in range(run.max_resizes + 1):
        probe = Probe(source, run, claims, owner)
        probe_verdicts = probe.run_stages(fp)
        attempt.exec_s += probe.exec_s
        fp = fp or probe.facts.get("fingerprint")
        failed = next((v for v in probe_verdicts if not v.passed), None)
        eager_ms = (probe.facts.get("eager") or {}).get("median_ms")
        attempt.eager_ms = eager_ms
        if failed is None or failed.filter != "eager_window" or resize == run.max_resizes:
            break
        bigger = _resized(source, eager_ms, run, probe.facts.get("spec") or {})
        if bigger is None:
            break
        source = bigger
        attempt.resizes += 1
    verdicts += probe.verdicts
    if all(v.passed for v in verdicts):
        attempt.kept = True
        attempt.task = _record(run, run_id, index, candidate, source, fp, verdicts, probe.facts)
    elif fp:
        claims.release(fp, owner)
    return _finish(attempt, verdicts, t0)


def _record(run, run_id, index, candidate, source, fp, verdicts, facts):
    """The kept task's record (JSON); FACTS are the probe's (empty for a composed-only candidate: no shapes or
    timings)."""
    import torch

    spec = facts.get("spec") or {}
    return TaskRecord(
        task_id=f"{run_id}-{index:06d}",
        name=candidate.name,
        source=source,
        seeds=candidate.seeds,
        op_classes=candidate.op_classes,
        fusion_depth=candidate.depth,
        inputs=spec.get("inputs", []),
        outputs=spec.get("outputs"),
        dtype=candidate.dtype,
        device=run.device,
        eager_ms=(facts.get("eager") or {}).get("median_ms"),
        compiled_ms=(facts.get("compiled") or {}).get("median_ms"),
        compile_s=facts.get("compile_s") or 0.0,
        fingerprint=fp,
        verdicts=[v.to_json() for v in verdicts],
        composer=candidate.composer,
        device_name=facts.get("device_name", ""),
        torch_version=torch.__version__,
        eager_spread_pct=(facts.get("eager") or {}).get("spread_pct", 0.0),
    ).to_json()


def _resized(source, eager_ms, run, spec):
    """SOURCE with its batch scaled toward the window's geometric middle, within the memory budget."""
    lo, hi = run.window_ms
    target = math.sqrt(lo * hi)
    factor = max(1 / 64, min(64.0, target / max(eager_ms, 1e-3)))
    batch = batch_of(source)
    if not batch:
        return None
    per_sample = (spec.get("input_bytes", 0) + spec.get("output_bytes", 0)) / batch
    limit = int(MEMORY_BUDGET_BYTES[run.device] / max(1.0, per_sample * INTERMEDIATES))
    return rescale(source, factor, limit=max(1, min(1 << 16, limit)))


def _finish(attempt, verdicts, t0):
    attempt.verdicts = [v.to_json() for v in verdicts]
    failed = next((v for v in verdicts if not v.passed), None)
    attempt.removed_by = failed.filter if failed else ""
    attempt.pipeline_s = round(max(0.0, time.monotonic() - t0 - attempt.exec_s), 3)
    attempt.exec_s = round(attempt.exec_s, 3)
    return attempt


def probe_source(source, run, claims=None, owner="probe"):
    """Every filter's verdict on one problem SOURCE (untrusted: fingerprinted in the jail); for tests and tools."""
    from training.synthesis.dedup import LocalClaims

    if claims is None:
        import multiprocessing

        claims = LocalClaims(multiprocessing.Manager())
    probe = Probe(source, run, claims, owner)
    return probe.run_stages(None), probe.facts
