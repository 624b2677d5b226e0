"""One evaluation, stage by stage: build, validate and baselines, load, trials, timing, post-timing trial,
profile, tamper checks, verdict. The only module that sequences the stages; the workers do the work.
"""

import json
import logging
import os
import re
import secrets
import shutil
import sys
import time

from sandbox import seccomp, settings, timing_lock
from sandbox.config import EvalConfig
from sandbox.errors import BuildError, InvalidProblem
from sandbox.isolation import Jail, isolation_level
from sandbox.problem import Problem, describe_shapes
from sandbox.protocol import ChannelClosed, pipes
from sandbox.reward import reward
from sandbox.scrub import scrub
from sandbox.solution import Solution
from sandbox.verdict import Verdict

log = logging.getLogger(__name__)


class StageFailed(Exception):
    def __init__(self, status, log_text):
        # What users see of a jailed process: no host path, and a word on calls the sandbox refuses.
        log_text = scrub(log_text)
        if "Operation not permitted" in log_text:
            log_text += f"\n{seccomp.DENIED_NOTE}"
        super().__init__(log_text)
        self.status, self.log = status, log_text


class Incorrect(Exception):
    def __init__(self, reason, trial=None):
        super().__init__(reason)
        self.reason, self.trial = reason, trial


class Worker:
    """A jailed worker process and its channel; every receive is bounded by the worker's deadline."""

    def __init__(self, jail, module, role, timeout):
        self.jail, self.role, self.timeout = jail, role, timeout
        self.channel, child_r, child_w = pipes()
        # CPU seconds for every core the worker may keep busy over its whole wall-clock budget, no more.
        cpu_s = int(timeout * max(1, os.cpu_count() or 1)) + 60
        self.proc = jail.start(
            [sys.executable, "-m", module, str(child_r), str(child_w)], pass_fds=(child_r, child_w), cpu_s=cpu_s
        )
        for fd in (child_r, child_w):
            os.close(fd)
        self.deadline = time.monotonic() + timeout

    def restart_clock(self, timeout):
        self.timeout, self.deadline = timeout, time.monotonic() + timeout

    def send(self, kind, stage=None, **data):
        """Send a message; a worker that is gone is a StageFailed naming STAGE, as in recv."""
        try:
            self.channel.send(kind, **data)
        except (BrokenPipeError, OSError):
            self._died(stage)

    def dismiss(self):
        """Tell the worker to exit once everything is measured: one that is already gone (a kernel that faulted at
        another size in the shape trials takes its process with it) changes nothing."""
        try:
            self.channel.send("exit")
        except (BrokenPipeError, OSError):
            pass

    def recv(self, *expected, stage=None):
        """The next message, one of EXPECTED; STAGE names what the worker is doing, for a verdict that it ran out of
        time there."""
        try:
            msg = self.channel.recv(max(0.0, self.deadline - time.monotonic()))
        except TimeoutError:
            self.jail.kill(self.proc)
            exit = self.jail.wait(self.proc, 5)
            raise StageFailed(
                "timeout",
                f"{_ran_out(stage, exit.output)}: the {self.role} took longer than "
                f"{self.timeout:.0f} s and was stopped\n{exit.output}",
            ) from None
        except ChannelClosed:
            self._died(stage)
        if msg["kind"] == "failed":
            raise StageFailed(msg["status"], msg["log"] + self._output_note())
        if expected and msg["kind"] not in expected:
            raise StageFailed("crashed", f"the {self.role} sent {msg['kind']!r} where {expected} was due")
        return msg

    def _output_note(self):
        text = self.proc.output.text(wait=0.5).strip()
        return f"\n--- {self.role} output ---\n{text}" if text else ""

    def _died(self, stage):
        # Its channel closed: the process has EXIT_GRACE_S from now to exit (Jail.wait counts from the process's start:
        # one that ran longer than that before it crashed would otherwise read as a timeout).
        exit = self.jail.wait(self.proc, time.monotonic() - self.proc.started + EXIT_GRACE_S)
        if exit.timed_out:
            raise StageFailed(
                "timeout", f"{_ran_out(stage, exit.output)}: the {self.role} process {exit.describe()}\n{exit.output}"
            )
        raise StageFailed("crashed", f"the {self.role} process {exit.describe()}\n{exit.output}")

    def close(self):
        self.channel.close()

    def wait_exit(self, seconds):
        """Wait up to SECONDS for the worker, told to exit or its channel closed, to be gone; killed after that."""
        self.jail.wait(self.proc, time.monotonic() - self.proc.started + seconds)


def _ran_out(stage, output):
    """'stage "NAME" ran out of time', NAME refined by the worker's output: a load_inline build still running names
    the extension being built."""
    from sandbox.native.inline import BUILDING, BUILT

    name = stage or "unknown"
    if stage == LOAD_STAGE:
        started = re.findall(re.escape(BUILDING) + r" '([^']+)'", output or "")
        finished = set(re.findall(re.escape(BUILT) + r" '([^']+)'", output or ""))
        if started and started[-1] not in finished:
            name = f"{stage} (building the extension '{started[-1]}')"
        else:
            name = f"{stage} (importing it)"
    return f'stage "{name}" ran out of time'


LOAD_STAGE = "load solution"
# Seconds a worker whose channel closed has to exit before it reads as hung rather than crashed.
EXIT_GRACE_S = 10.0


def _baseline_key(problem, config):
    """The problem and timing config the cached baselines belong to, as the reference's cache and the harness's
    measuring_once lock both key them."""
    return json.dumps([problem.sha256, config.timing_key()], sort_keys=True)


def _store_cache(name, data):
    """Write DATA as the cache entry NAME (baselines, or a solution's float64 errors) that reference workers read."""
    path = settings.cache_dir() / "baselines" / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data))
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def evaluate(problem_path, solution_path, config=None, **overrides):
    config = (config or EvalConfig()).replace(**overrides) if overrides else (config or EvalConfig())
    problem = Problem.read(problem_path)
    solution = Solution.read(solution_path)
    t0 = time.monotonic()
    verdict = Verdict(
        status="ok",
        device=config.device,
        problem_hash=problem.sha256,
        solution_hash=solution.sha256,
        isolation=isolation_level(),
    )
    try:
        _run(problem, solution, config, verdict)
    except StageFailed as failure:
        verdict.status, verdict.correct = failure.status, False
        verdict.log = _cap(failure.log)
    except Incorrect as bad:
        verdict.status, verdict.correct = "incorrect", False
        verdict.log = _cap(bad.reason)
    if verdict.status == "ok" and verdict.violations:
        verdict.status = "violation"
    verdict.correct = verdict.correct and verdict.status == "ok"
    verdict.reward_schedule = config.reward
    verdict.reward = reward(
        config.reward, verdict.correct, verdict.speedup_vs_eager, verdict.speedup_vs_compiled, config.margin
    )
    verdict.wall_s = round(time.monotonic() - t0, 3)
    log.info("evaluated %s with %s: %s", problem.name, solution.path, verdict.summary())
    return verdict


def _cap(text):
    limit = settings.LOG_LIMIT
    return text if len(text) <= limit else text[: limit // 2] + "\n[... truncated ...]\n" + text[-limit // 2 :]


class Stages:
    """Wall time per stage, reported in the verdict so a slow evaluation says where its time went."""

    def __init__(self, verdict):
        self.times = verdict.timing.setdefault("stages_s", {})
        self.last = time.monotonic()

    def done(self, name):
        now = time.monotonic()
        self.times[name] = round(self.times.get(name, 0.0) + now - self.last, 3)
        self.last = now


def _run(problem, solution, config, verdict):
    stage = Stages(verdict)
    timing_lock.ensure(config.device)
    with Jail("ref", config.device, uid_slot=0) as ref_jail, Jail("cand", config.device, uid_slot=1) as cand_jail:
        problem_ref = ref_jail.give(problem.path, "problem.py")
        problem_cand = cand_jail.give(problem.path, "problem.py")
        _expose_reference_cache(ref_jail, config.device)
        if solution.kind == "workspace":
            entry = cand_jail.give(solution.path, "workspace") / "model_new.py"
            cand_jail.expose(_build_output(solution, config.device))
        else:
            entry = cand_jail.give(solution.path, "solution.py")
            with timing_lock.off_timing_cores():
                headers = _expose_inline_headers(solution, cand_jail, config.device)
            if headers:
                stage.done("precompiled header")
        ref = Worker(ref_jail, "sandbox.workers.reference", "reference", settings.BASELINE_TIMEOUT_S)
        # The shared hold on the device's timing lock while this evaluation's workers run kernels that are not timed
        # (the candidate's load and trials, the reference's checks): no other evaluation times meanwhile.
        gpu_work = timing_lock.SharedHold(config.device)
        cand = Worker(cand_jail, "sandbox.workers.candidate", "solution", config.timeout_s + 60)
        try:
            # The reference validates the problem while the solution builds and the candidate starts; its baselines (or
            # the probe of cached ones) wait for both, and the candidate loads after them (_reference_ready).
            init_seed = _start_reference(ref, problem, solution, problem_ref, config)
            with timing_lock.off_timing_cores():
                build_s = _build(solution, cand_jail, config) if solution.kind == "workspace" else 0.0
            stage.done("build")
            cand.recv("started", stage="start workers")
            stage.done("start workers")
            ready = _reference_ready(ref, problem, config, verdict, init_seed)
            stage.done("validate and baselines")
            # Not before: the reference times its baselines under the exclusive lock, which this would block.
            gpu_work.take()
            cand.restart_clock(config.timeout_s)
            cand.send(
                "start",
                device=config.device,
                config=config.to_json(),
                problem=str(problem_cand),
                solution=str(entry),
                init_seed=init_seed,
            )
            cand.send("spec", spec=ready["spec"])
            loaded = cand.recv("loaded", stage=LOAD_STAGE)
            verdict.compile_s = round(build_s + loaded["compile_s"], 3)
            if loaded.get("extensions"):
                verdict.timing["extensions"] = loaded["extensions"]  # each load_inline: how it was built, seconds
            stage.done(LOAD_STAGE)
            precision = ready["precision"]
            _trials(ref, cand, ref_jail, cand_jail, config, ready["spec"], verdict, precision.get("errors") is None)
            _float64_errors(verdict, precision)
            stage.done("trials")
            gpu_work.release()
            with timing_lock.exclusive(config.device):  # no other evaluation's kernels on this device meanwhile
                cand.restart_clock(config.timeout_s)
                cand.send(
                    "time", seeds=[secrets.randbits(31) for _ in range(config.input_sets)], protocol=ready["protocol"]
                )
                timing = cand.recv("timed", stage="timing")["timing"]
            verdict.timing = {"candidate": timing, **verdict.timing}
            verdict.runtime_ms = timing["median_ms"]
            stage.done("timing")
            gpu_work.take()
            _one_trial(ref, cand, ref_jail, cand_jail, config, ready["spec"], verdict, "post", "post-timing")
            stage.done("post-timing trial")
            if config.profile:
                cand.send("profile")
                verdict.profile["candidate"] = cand.recv("profiled", stage="profile")["table"]
                stage.done("profile")
            if config.ncu:
                _ncu(problem_ref, ref_jail, problem_cand, entry, cand_jail, config, verdict)
                stage.done("ncu")
            cand.send("finish")
            final = cand.recv("final", stage="finish")
            verdict.violations += final["violations"]
            if final["notes"]:
                verdict.log = "\n".join(final["notes"])
            stage.done("finish")
            if config.shape_check:
                _shape_trials(ref, cand, ref_jail, cand_jail, config, ready, verdict)
                stage.done("shape trials")
            cand.dismiss()
            verdict.correct = True
            if verdict.eager_ms and verdict.runtime_ms:
                verdict.speedup_vs_eager = round(verdict.eager_ms / max(verdict.runtime_ms, 1e-6), 4)
            if verdict.compiled_ms and verdict.runtime_ms:
                verdict.speedup_vs_compiled = round(verdict.compiled_ms / max(verdict.runtime_ms, 1e-6), 4)
            _precision_matched_speedups(verdict)
            ref.dismiss()
        finally:
            cand.close()
            ref.close()
            if gpu_work.held:
                # Their exit tears their CUDA contexts down, which would disturb the timing that waits for this hold.
                # On the CPU nothing is left to read from them: they are stopped at once rather than left a second or
                # two of interpreter teardown on the cores another evaluation times on.
                grace = EXIT_GRACE_S if config.device == "cuda" else 0.0
                cand.wait_exit(grace)
                ref.wait_exit(grace)
            gpu_work.release()
    stage.done("clean up")


def _expose_reference_cache(jail, device):
    """The reference reads cached baselines and locks the device's timing lock: only those of the cache."""
    baselines = settings.cache_dir() / "baselines"
    try:
        baselines.mkdir(parents=True, exist_ok=True)
        os.chmod(baselines, 0o755)
    except OSError as exc:
        log.warning("no baseline cache at %s (%s): baselines are measured every time", baselines, exc)
    jail.expose(baselines)
    jail.expose(timing_lock.lock_path(device))
    jail.expose(timing_lock.gate_path(device))


def _expose_inline_headers(solution, jail, device):
    """Prepare (once per worker) and expose the precompiled torch headers the solution's load_inline calls will want:
    its jail cannot build them. False where the solution does not build through torch.utils.cpp_extension."""
    from sandbox.native import inline

    source = solution.files["solution.py"]
    if not inline.wanted(source):
        return False
    try:
        folders = inline.prepare_headers(source, solution.path, device)
    except (BuildError, inline.Fallback, OSError, RuntimeError) as exc:
        log.warning("no precompiled torch header for %s (%s): its load_inline builds in full", solution.path, exc)
        return True
    for folder in folders:
        jail.expose(folder)
    return True


def _build_output(solution, device):
    """The folder the workspace's library lands in (made now, empty until built): the only build the candidate
    sees."""
    from sandbox.native.build import build_folder

    try:
        return build_folder(solution.path, device)
    except BuildError:
        return settings.cache_dir() / "builds" / "missing"  # the build stage reports the error


def _build(solution, jail, config):
    """Compile a native workspace with its compilers jailed; the library lands in the worker's build cache."""
    from sandbox.native.build import build_workspace

    try:
        result = build_workspace(solution.path, config.device, jail=jail, timeout=config.timeout_s)
    except BuildError as exc:
        raise StageFailed("compile_error", f"{exc}\n--- compiler output ---\n{exc.log}") from None
    return result.seconds


def _start_reference(ref, problem, solution, problem_copy, config):
    """Ask the reference to validate the problem and look its baselines up; the init seed both models are made with."""
    init_seed = secrets.randbits(31)
    ref.send(
        "start",
        device=config.device,
        config=config.to_json(),
        problem=str(problem_copy),
        init_seed=init_seed,
        validation_seed=secrets.randbits(31),
        timing_seeds=[secrets.randbits(31) for _ in range(config.input_sets)],
        cache_key=_baseline_key(problem, config),
        precision_key=f"{problem.sha256}|{solution.sha256}",
        profile=config.profile,
        measure=True,
        shape_check=config.shape_check,
    )
    return init_seed


def _reference_ready(ref, problem, config, verdict, init_seed):
    """The validated problem's spec and baselines (from the cache where a probe agrees with them, or measured now: once
    the solution is built and the candidate idle, before any solution code is imported)."""
    msg = ref.recv("validated", "invalid", stage="validate and baselines")
    if msg["kind"] == "invalid":
        raise InvalidProblem(f"invalid problem {problem.path}: {msg['reason']}")
    # One evaluation of a problem measures (or probes) its baselines at a time; one that waited finds them cached.
    with timing_lock.measuring_once(_baseline_key(problem, config), config.device, config.timeout_s / 2):
        ref.send("measure")
        msg = ref.recv("ready", stage="validate and baselines")
        if not msg["cached"]:
            _store_cache(msg["cache_name"], msg["baselines"])
    base = msg["baselines"]
    # Where the baselines came from: measured by this evaluation, or by an earlier (or concurrent) one of the problem,
    # or measured again because the cached ones were slower than a probe: measured under load.
    verdict.timing["baselines"] = (
        "cached" if msg["cached"] else f"re-measured: {msg['stale']}" if msg["stale"] else "measured"
    )
    if "probe" in msg:
        verdict.timing["eager_probe"] = msg["probe"]
    verdict.eager_ms = base["eager"]["median_ms"]
    verdict.timing["eager"] = base["eager"]
    if "compiled" in base:
        verdict.compiled_ms = base["compiled"]["median_ms"]
        verdict.timing["compiled"] = base["compiled"]
    elif config.compiled_baseline:
        verdict.compiled_ms = verdict.eager_ms
        verdict.timing["compiled_error"] = base.get("compiled_error", "")
    if "eager_tf32" in base:
        verdict.eager_tf32_ms = base["eager_tf32"]["median_ms"]
        verdict.timing["eager_tf32"] = base["eager_tf32"]
    if "compiled_tf32" in base:
        verdict.compiled_tf32_ms = base["compiled_tf32"]["median_ms"]
        verdict.timing["compiled_tf32"] = base["compiled_tf32"]
    if config.profile:
        verdict.profile["reference"] = msg.get("profile", [])
    # The baselines' protocol times the candidate too (a cache entry from before it was stored: the config's).
    protocol = base.get("protocol") or (None if config.timing == "auto" else config.timing)
    verdict.timing["protocol"] = protocol
    return {
        "spec": msg["spec"],
        "init_seed": init_seed,
        "variants": msg.get("variants", []),
        "protocol": protocol,
        "precision": msg.get("precision") or {},
    }


def _precision_matched_speedups(verdict):
    """Speedups against the baselines timed with TF32 allowed (CUDA only): what is left once precision matches."""
    if verdict.runtime_ms:
        if verdict.eager_tf32_ms:
            verdict.speedup_vs_eager_tf32 = round(verdict.eager_tf32_ms / max(verdict.runtime_ms, 1e-6), 4)
        if verdict.compiled_tf32_ms:
            verdict.speedup_vs_compiled_tf32 = round(verdict.compiled_tf32_ms / max(verdict.runtime_ms, 1e-6), 4)


def _trials(ref, cand, ref_jail, cand_jail, config, spec, verdict, precise):
    for index in range(config.trials):
        label = f"trial {index + 1}"
        _one_trial(ref, cand, ref_jail, cand_jail, config, spec, verdict, "trial", label, precise and not index)


FP64_FIELDS = ("max_abs_error_fp64", "max_rel_error_fp64", "reference_abs_error_fp64", "fp64_error")


def _float64_errors(verdict, precision):
    """The first trial's float64 errors: those stored for this problem and solution (they report the precision a
    solution gives up, and decide nothing), else the ones just measured, stored for the next evaluation."""
    stored, name = precision.get("errors"), precision.get("cache_name")
    if not verdict.trials:
        return
    if stored is not None:
        verdict.trials[0].update(stored)
        for key in FP64_FIELDS[:3]:
            if key in stored:
                setattr(verdict, key, stored[key])
        verdict.timing["fp64"] = "cached: measured by an earlier evaluation of this problem and solution"
    elif name:
        measured = {k: verdict.trials[0][k] for k in FP64_FIELDS if k in verdict.trials[0]}
        if measured:
            _store_cache(name, measured)


def _one_trial(ref, cand, ref_jail, cand_jail, config, spec, verdict, kind, label, precise=False):
    result = _run_trial(
        ref,
        cand,
        ref_jail,
        cand_jail,
        config,
        kind,
        label,
        spec["outputs"],
        spec["output_bytes"],
        precise=precise,
    )
    trial = {
        "trial": label,
        "ok": result["ok"],
        "max_abs_error": result["max_abs_error"],
        "max_rel_error": result["max_rel_error"],
        "sampled": result["sampled"],
    }
    trial.update({k: result[k] for k in FP64_FIELDS + ("judged_by",) if k in result})
    verdict.trials.append(trial)
    verdict.max_abs_error = max(verdict.max_abs_error or 0.0, result["max_abs_error"])
    verdict.max_rel_error = max(verdict.max_rel_error or 0.0, result["max_rel_error"])
    for key in FP64_FIELDS[:3]:
        if key in result:
            setattr(verdict, key, max(getattr(verdict, key) or 0.0, result[key]))
    if not result["ok"]:
        raise Incorrect(f"{label}: {result['reason']}")


def _run_trial(ref, cand, ref_jail, cand_jail, config, kind, label, outputs, output_bytes, precise=False, variant=None):
    """One trial on fresh inputs from a secret seed (of VARIANT's shapes where given): the candidate computes and
    saves, the reference checks; returns the reference's comparison (plus whether it was sampled). Incorrect where the
    output is not what the reference's spec (OUTPUTS) says."""
    seed = secrets.randbits(31)
    cand.send(kind, seed=seed, variant=variant, output_bytes=output_bytes)
    computed = cand.recv("computed", stage=label)
    if not computed["tensor"]:
        raise Incorrect(f"{label}: ModelNew.forward returned {computed['spec']}; expected tensors like {outputs}")
    if computed["spec"] != outputs:
        raise Incorrect(f"{label}: output shapes/dtypes {computed['spec']} differ from the reference's {outputs}")
    sampled = output_bytes > (config.full_compare_mb << 20)
    # A sampled output holding NaN or Inf also sends where they are: the reference checks all of those positions
    # against its own (an output that overflows where eager's does is right; a sample alone could miss a stray NaN).
    special = sampled and not computed["finite"]
    sample_seed = secrets.randbits(31) if sampled else None
    name = f"{kind}-{secrets.token_hex(4)}.pt"
    cand.send("save", path=str(cand_jail.path(name)), sample_seed=sample_seed, special=special)
    cand.recv("saved", stage=label)
    moved = ref_jail.path(name)
    shutil.move(str(cand_jail.path(name)), moved)
    # The solution controls that path: a link there must not make this (root) process chown or the reference
    # read what it points to. Checked after the move, where the solution can no longer swap it.
    if moved.is_symlink() or not moved.is_file():
        raise StageFailed("violation", f"{label}: the solution replaced its output file with a link or a non-file")
    if ref_jail.uid is not None:
        os.chown(moved, ref_jail.uid, ref_jail.uid, follow_symlinks=False)
    # The float64 comparison once, on the first trial: it reports precision, it decides nothing.
    ref.send(
        "check", seed=seed, path=str(moved), sample_seed=sample_seed, special=special, precise=precise, variant=variant
    )
    result = ref.recv("checked", stage=label)
    moved.unlink(missing_ok=True)
    return {**result, "sampled": sampled, "fallbacks": computed.get("fallbacks") or {}}


def _shape_trials(ref, cand, ref_jail, cand_jail, config, ready, verdict):
    """One trial at each shape variant the reference accepts (issue 22), after timing so a kernel that faults at
    another size costs the verdict nothing else: shape_general is whether the solution was right at all of them.

    The candidate stays up after a failure of its own (it reports one and waits); where it died, its violations
    were collected before these trials, and what it did here can no longer change anything measured."""
    verdict.shapes_checked = [describe_shapes(ready["spec"]["inputs"])]
    verdict.shapes_skipped = [f"{v['shapes']}: {v['skipped']}" for v in ready["variants"] if v.get("skipped")]
    variants = [v for v in ready["variants"] if not v.get("skipped")]
    if not variants:
        return
    cand.restart_clock(config.timeout_s)
    for variant in variants:
        label = f"inputs {variant['shapes']}"
        verdict.shapes_checked.append(variant["shapes"])
        record = {k: variant[k] for k in ("kind", "index", "scale", "inputs") if k in variant}
        try:
            result = _run_trial(
                ref,
                cand,
                ref_jail,
                cand_jail,
                config,
                "trial",
                label,
                variant["outputs"],
                variant["output_bytes"],
                variant=record,
            )
            reason = "" if result["ok"] else result["reason"]
            if not reason and result["fallbacks"] and config.strict:
                # sandbox.guard imports torch: only where it is needed
                from sandbox.guard import fallback_violation

                reason = f"at these shapes only: {fallback_violation(result['fallbacks'])}"
        except Incorrect as bad:
            reason = bad.reason[len(label) + 2 :] if bad.reason.startswith(label) else bad.reason
        except StageFailed as failure:  # the solution raised, faulted, hung or died at these shapes
            if failure.status == "violation":
                raise
            reason = f"{failure.status}: {failure.log.strip()[-1500:]}"
        if reason:
            verdict.shape_general, verdict.failing_shape, verdict.shape_failure = False, variant["shapes"], reason
            break
    else:
        verdict.shape_general = True
    if cand.proc.poll() is None:
        cand.send("finish")
        final = cand.recv("final", stage="finish")
        verdict.violations += [v for v in final["violations"] if v not in verdict.violations]


def _ncu(problem_ref, ref_jail, problem_cand, entry, cand_jail, config, verdict):
    """Achieved DRAM and SM throughput of the top kernels, from Nsight Compute, for both sides."""
    from sandbox.profiling import ncu_available, ncu_metrics

    if config.device != "cuda" or not ncu_available():
        verdict.profile["ncu_note"] = "ncu is not available here"
        return
    seed = secrets.randbits(31)
    for role, jail, problem_copy in (("reference", ref_jail, problem_ref), ("candidate", cand_jail, problem_cand)):
        argv = [sys.executable, "-m", "sandbox.workers.kernels", role, str(problem_copy), str(entry), "cuda", str(seed)]
        rows, error = ncu_metrics(argv, jail, timeout=config.timeout_s)
        verdict.profile[f"ncu_{role}"] = rows
        if error:
            verdict.profile[f"ncu_{role}_error"] = error
