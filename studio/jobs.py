"""RQ jobs: everything that runs user code or the sandbox happens here, on a worker, never in the web process."""

import hashlib
import logging
import tempfile
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from agent.workspace import write_files
from sandbox.errors import InvalidProblem
from sandbox.validate import validate_problem as validate_problem_file
from studio.models import Problem

log = logging.getLogger(__name__)


def validate_problem(owner_id, name, source, device):
    """Validate an uploaded module in the sandbox; store it only if it is valid. {"problem_id"} or {"error"}."""
    with tempfile.TemporaryDirectory(prefix="ks-upload-") as tmp:
        path = Path(tmp) / "problem.py"
        path.write_text(source, encoding="utf-8")
        try:
            spec = validate_problem_file(path, device, timeout=settings.KS_VALIDATE_TIMEOUT)
        except InvalidProblem as exc:
            log.info("upload %r of user %s rejected: %s", name, owner_id, exc)
            return {"error": str(exc).replace(f"invalid problem {path}: ", "").replace(str(path), name)}
    problem = Problem.objects.create(
        owner_id=owner_id,
        name=name,
        source=source,
        device=device,
        spec=spec,
        sha256=hashlib.sha256(source.encode()).hexdigest(),
    )
    log.info("upload %r of user %s stored as problem %s", name, owner_id, problem.pk)
    return {"problem_id": problem.pk}


class RunCancelled(Exception):
    """The run was cancelled from the studio; the episode stops at the next turn boundary."""


def compact_turn(turn, limit=20000):
    """A turn as stored and streamed: everything but token ids, long texts cut with a note."""

    def cut(text):
        text = text or ""
        return text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} more characters]"

    calls = []
    for call in turn.tool_calls:
        arguments = {k: cut(v) if isinstance(v, str) else v for k, v in call.arguments.items()}
        verdict = call.verdict and {
            k: call.verdict.get(k)
            for k in (
                "status",
                "correct",
                "reward",
                "reward_schedule",
                "runtime_ms",
                "eager_ms",
                "compiled_ms",
                "speedup_vs_eager",
                "speedup_vs_compiled",
                "speedup_vs_eager_tf32",
                "speedup_vs_compiled_tf32",
                "max_abs_error",
                "max_abs_error_fp64",
                "violations",
                "trials",
            )
        }
        calls.append(
            {
                "name": call.name,
                "arguments": arguments,
                "error": call.error,
                "observation": cut(call.observation),
                "verdict": verdict,
                "seconds": call.seconds,
            }
        )
    return {
        "index": turn.index,
        "thought": cut(turn.thought),
        "tool_calls": calls,
        "policy_s": turn.policy_s,
        "tools_s": turn.tools_s,
        "prompt_tokens": turn.prompt_tokens,
        "completion_tokens": turn.completion_tokens,
    }


def run_episode(run_id):
    """One optimization run: the agent's episode, every turn stored then streamed, verified versions kept."""
    from agent.loop import Episode, EpisodeConfig
    from agent.policies import PolicyError, make_policy
    from agent.workspace import Workspace
    from sandbox import EvalConfig
    from studio import actions
    from studio.models import Run
    from studio.serving import policy_for

    run = Run.objects.select_related("problem", "start_version").get(pk=run_id)
    if run.status != Run.Status.QUEUED:
        log.info("run %s: not queued (%s), nothing to do", run_id, run.status)
        return
    actions.set_status(run_id, Run.Status.RUNNING)
    with tempfile.TemporaryDirectory(prefix=f"ks-run-{run_id}-") as tmp:
        problem_path = Path(tmp) / f"{run.problem.name}.py"
        problem_path.write_text(run.problem.source, encoding="utf-8")
        workspace = Path(tmp) / "workspace"

        def on_turn(turn):
            actions.append_event(run_id, "turn", compact_turn(turn))
            if turn.verdict and turn.verdict.get("status") == "ok":
                actions.record_version(run_id, Workspace(workspace, run.device).solution_files(), turn.verdict)
            if Run.objects.filter(pk=run_id, status=Run.Status.CANCELLED).exists():
                raise RunCancelled()

        config = EpisodeConfig(device=run.device, max_turns=run.max_turns, eval=EvalConfig(device=run.device))
        start_files = run.start_version.files if run.start_version else None
        try:
            backend, options = policy_for(run.policy)
            policy = make_policy(backend, **options)
            trajectory = Episode(
                problem_path, policy, workspace, config, on_turn=on_turn, start_files=start_files
            ).run()
        except RunCancelled:
            log.info("run %s: cancelled", run_id)
            return
        except PolicyError as exc:
            actions.set_status(run_id, Run.Status.FAILED, error=str(exc))
            return
        except Exception as exc:
            # Never leave a run "running" behind a crashed job; RQ keeps the traceback in its failed registry.
            actions.set_status(run_id, Run.Status.FAILED, error=f"the run crashed: {type(exc).__name__}: {exc}")
            raise
    error = "" if trajectory.verdict.get("correct") else f"no correct solution ({trajectory.stop_reason})"
    actions.finish_run(run_id, trajectory.to_json(), error=error)


def package_version(version_id, allow_specialized=False):
    """Build the pip-installable package of a verified version on this worker; the web process only serves it. A
    version specialised to the problem's shapes is refused unless ALLOW_SPECIALIZED (the user asked for it)."""
    from sandbox.errors import SandboxError
    from sandbox.package import package_solution
    from sandbox.verdict import specialization
    from studio.models import KernelVersion

    version = KernelVersion.objects.select_related("problem").get(pk=version_id)
    out = settings.KS_PACKAGES_DIR / str(version.pk)
    with tempfile.TemporaryDirectory(prefix=f"ks-package-{version_id}-") as tmp:
        problem = Path(tmp) / f"{version.problem.name}.py"
        problem.write_text(version.problem.source, encoding="utf-8")
        workspace = write_files(Path(tmp) / "workspace", version.files)
        try:
            result = package_solution(
                problem,
                workspace,
                out,
                name=f"ks-{version.problem.name}-v{version.pk}",
                verdict=version.verdict,
                allow_specialized=allow_specialized,
            )
        except SandboxError as exc:
            KernelVersion.objects.filter(pk=version_id).update(package_error=str(exc))
            return {"error": str(exc)}
    package = {
        "sdist": Path(result.sdist).name,
        "wheel": Path(result.wheel).name if result.wheel else None,
        "notes": list(result.notes),
        "specialised": specialization(version.verdict),
    }
    KernelVersion.objects.filter(pk=version_id).update(package=package, package_error="")
    log.info("version %s packaged: %s", version_id, package)
    return package


def evaluate_edit(evaluation_id):
    """Evaluate a person's edit in the sandbox on this worker; the verdict is stored, then streamed to the run."""
    import sandbox
    from sandbox import EvalConfig
    from sandbox.errors import SandboxError
    from studio import actions
    from studio.models import Evaluation

    evaluation = Evaluation.objects.select_related("run__problem").get(pk=evaluation_id)
    if evaluation.status != Evaluation.Status.QUEUED:
        return {"status": evaluation.status}
    actions.set_evaluation(evaluation_id, Evaluation.Status.RUNNING)
    run = evaluation.run
    with tempfile.TemporaryDirectory(prefix=f"ks-edit-{evaluation_id}-") as tmp:
        problem = Path(tmp) / f"{run.problem.name}.py"
        problem.write_text(run.problem.source, encoding="utf-8")
        workspace = write_files(Path(tmp) / "workspace", evaluation.files)
        try:
            verdict = sandbox.evaluate(problem, workspace, EvalConfig(device=run.device)).to_json()
        except SandboxError as exc:
            # A solution the sandbox cannot even load (no ModelNew, say) is the edit's verdict, not a crash.
            verdict = sandbox.Verdict(status="load_error", log=str(exc), device=run.device).to_json()
        except Exception as exc:
            actions.set_evaluation(
                evaluation_id, Evaluation.Status.FAILED, error=f"the evaluation crashed: {type(exc).__name__}: {exc}"
            )
            raise
    verdict.pop("profile", None)
    actions.set_evaluation(evaluation_id, Evaluation.Status.DONE, verdict=verdict)
    return {"status": verdict["status"], "reward": verdict["reward"]}


def _start(model, pk, **fields):
    """Move a staff job's row from queued to running; False when it was stopped meanwhile (then nothing runs)."""
    return bool(
        model.objects.filter(pk=pk, status=model.Status.QUEUED).update(
            status=model.Status.RUNNING, started_at=timezone.now(), **fields
        )
    )


def _close(model, pk, **fields):
    """Close a staff job's row, only while it is still running: one stopped from the studio meanwhile stays stopped."""
    model.objects.filter(pk=pk, status=model.Status.RUNNING).update(finished_at=timezone.now(), **fields)


def _evaluation_progress(evaluation_id, folder, keys):
    """Store how far the evaluation's folder has come (its results.jsonl) and the problem it is on (the first of KEYS,
    in the order they run, with no result yet); the page reads the database only."""
    from training.evaluation.results import ResultsFile
    from studio.models import BenchEvaluation

    results = ResultsFile(Path(folder) / "results.jsonl").read().values() if Path(folder).exists() else []
    finished = {r.key for r in results}
    progress = {
        "done": len(results),
        "total": len(keys),
        "correct": sum(r.correct for r in results),
        "current": next((key for key in keys if key not in finished), ""),
    }
    BenchEvaluation.objects.filter(pk=evaluation_id).update(progress=progress)


def _training_cli(argv, crashed, progress=None, poll_s=2.0):
    """`python -m training ARGV` in-process; its exit status. progress() runs every poll_s on a thread of its own
    (with its own database connection) while it works; a crash is handed to crashed(message), then raised. A Stop
    kills the work horse's process group (this CLI and its pool); the worker ends what they started in sessions of
    their own (the jails) and removes the job's scratch folder (studio.workers)."""
    import threading

    from django.db import connection

    from training.cli import main as training_main

    stop = threading.Event()

    def follow():
        try:
            while not stop.wait(poll_s):
                progress()
        finally:
            connection.close()  # this thread's own connection

    follower = threading.Thread(target=follow, name=f"{argv[0]}-progress", daemon=True) if progress else None
    if follower:
        follower.start()
    try:
        return training_main(argv)
    except SystemExit as exc:  # argparse refused a flag (from the KS_*_ARGS settings): its message is in the log
        return exc.code
    except Exception as exc:
        crashed(f"{type(exc).__name__}: {exc}")
        raise
    finally:
        stop.set()
        if follower:
            follower.join()


def run_bench_evaluation(evaluation_id, poll_s=2.0):
    """A KernelBench evaluation through `python -m training evaluate`, here in-process; progress stored as it goes."""
    import json
    import shlex

    from training.evaluation import problems as problem_source
    from studio.models import BenchEvaluation

    evaluation = BenchEvaluation.objects.get(pk=evaluation_id)
    if evaluation.status != BenchEvaluation.Status.QUEUED:
        return {"status": evaluation.status}
    folder = settings.KS_EVALUATIONS_DIR / str(evaluation.pk)
    if not _start(BenchEvaluation, evaluation_id, folder=str(folder)):
        return {"status": "stopped"}
    argv = [
        "evaluate",
        "--problems",
        str(settings.KS_KERNELBENCH_PROBLEMS),
        "--levels",
        evaluation.levels,
        "--policy",
        evaluation.policy,
        "--device",
        evaluation.device,
        "--out",
        str(folder),
        "--resume",
        "--in-process",
        "-q",
        *shlex.split(settings.KS_EVALUATION_ARGS),
    ]
    if evaluation.model:
        argv += ["--model", evaluation.model]
    if evaluation.limit:
        argv += ["--limit", str(evaluation.limit)]
    setting = evaluation.sandbox or "strict"
    argv += ["--compare", setting] if "," in setting else ["--sandbox", setting]
    try:
        chosen = problem_source.select(
            problem_source.read_problems(settings.KS_KERNELBENCH_PROBLEMS),
            problem_source.parse_levels(evaluation.levels),
            None,
            None,
            evaluation.limit,
            None,
        )
    except problem_source.ProblemsError as exc:
        _close(BenchEvaluation, evaluation_id, status=BenchEvaluation.Status.FAILED, error=str(exc))
        return {"error": str(exc)}

    def crashed(message):
        _close(
            BenchEvaluation,
            evaluation_id,
            status=BenchEvaluation.Status.FAILED,
            error=f"the evaluation crashed: {message}",
        )

    keys = [p.key for p in chosen]
    code = _training_cli(argv, crashed, lambda: _evaluation_progress(evaluation_id, folder, keys), poll_s)
    _evaluation_progress(evaluation_id, folder, keys)
    metrics_file = folder / "metrics.json"
    metrics = json.loads(metrics_file.read_text()) if metrics_file.exists() else None
    done = code == 0 and metrics is not None
    status = BenchEvaluation.Status.DONE if done else BenchEvaluation.Status.FAILED
    _close(
        BenchEvaluation,
        evaluation_id,
        status=status,
        metrics=metrics,
        error="" if done else f"`python -m training {shlex.join(argv)}` ended with status {code}; see the worker's log",
    )
    log.info("KernelBench evaluation %s: exit %s", evaluation_id, code)
    return {"status": "done" if done else "failed"}


def run_synthesis(synthesis_id):
    """A task-synthesis run through `python -m training synthesize`, here in-process; its files are its progress."""
    import json
    import shlex

    from training.synthesis.dataset import paths
    from studio.models import SynthesisRun

    run = SynthesisRun.objects.get(pk=synthesis_id)
    if run.status != SynthesisRun.Status.QUEUED:
        return {"status": run.status}
    dataset = settings.KS_SYNTHESIS_DIR / str(run.pk) / "tasks.jsonl"
    dataset.parent.mkdir(parents=True, exist_ok=True)
    if not _start(SynthesisRun, synthesis_id, dataset=str(dataset)):
        return {"status": "stopped"}
    argv = [
        "synthesize",
        "--count",
        str(run.count),
        "--device",
        run.device,
        "--workers",
        str(run.workers),
        "--out",
        str(dataset),
        "--no-progress",
        *shlex.split(settings.KS_SYNTHESIS_ARGS),
    ]

    def crashed(message):
        _close(SynthesisRun, synthesis_id, status=SynthesisRun.Status.FAILED, error=f"the synthesis crashed: {message}")

    code = _training_cli(argv, crashed)
    summary_file = paths(dataset)["summary"]
    summary = json.loads(summary_file.read_text()) if summary_file.exists() else None
    # Exit 1: fewer tasks kept than asked (out of attempts or time); what was kept is still a dataset.
    done = code in (0, 1) and summary is not None
    error = (
        ""
        if code == 0
        else (
            f"kept {summary['kept']} of {run.count} asked"
            if done
            else f"`python -m training {shlex.join(argv)}` ended with status {code}; see the worker's log"
        )
    )
    _close(
        SynthesisRun,
        synthesis_id,
        status=SynthesisRun.Status.DONE if done else SynthesisRun.Status.FAILED,
        summary=summary,
        error=error,
    )
    log.info("synthesis run %s: exit %s", synthesis_id, code)
    return {"status": "done" if done else "failed"}


def _training_progress(training_id, folder):
    """Store the newest metrics record and its stage; the list page reads the database only."""
    from sandbox.jsonl import read_jsonl
    from studio.models import TrainingRun

    records = read_jsonl(Path(folder) / "metrics.jsonl", skip_bad=True)
    if records:
        TrainingRun.objects.filter(pk=training_id).update(
            last_metrics=records[-1], current_stage=records[-1].get("stage", "")
        )


def run_training(training_id, poll_s=2.0):
    """An RL training run through `python -m training train`, here in-process, into its run folder; a re-queued run
    (resume) goes on in the same folder, where every stage resumes from its last checkpoint."""
    import contextlib
    import io
    import shlex

    from studio.models import TrainingRun

    run = TrainingRun.objects.get(pk=training_id)
    if run.status != TrainingRun.Status.QUEUED:
        return {"status": run.status}
    folder = settings.KS_TRAINING_DIR / str(run.pk)
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "submitted.yaml"  # the run folder's config.yaml is the training package's record, as run
    config.write_text(run.config, encoding="utf-8")
    if not _start(TrainingRun, training_id, folder=str(folder), error="", finished_at=None):
        return {"status": "stopped"}
    argv = ["train", str(config), "--run-dir", str(folder), "-q"]
    for item in run.overrides:
        argv += ["--set", item]
    if run.stage:
        argv += ["--stage", run.stage]

    def crashed(message):
        _close(TrainingRun, training_id, status=TrainingRun.Status.FAILED, error=f"the training run crashed: {message}")

    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        code = _training_cli(argv, crashed, lambda: _training_progress(training_id, folder), poll_s)
    _training_progress(training_id, folder)
    said = [line for line in stderr.getvalue().splitlines() if line.startswith(("error:", "stopped:"))]
    error = (
        ""
        if code == 0
        else (
            said[-1]
            if said
            else f"`python -m training {shlex.join(argv)}` ended with status {code}; see the worker's log"
        )
    )
    _close(
        TrainingRun,
        training_id,
        status=TrainingRun.Status.DONE if code == 0 else TrainingRun.Status.FAILED,
        error=error,
    )
    log.info("training run %s: exit %s", training_id, code)
    return {"status": "done" if code == 0 else "failed", "exit": code}
