"""RQ jobs: everything that runs user code or the sandbox happens here, on a worker, never in the web process."""
import hashlib
import logging
import tempfile
from pathlib import Path

from django.conf import settings

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
    problem = Problem.objects.create(owner_id=owner_id, name=name, source=source, device=device, spec=spec,
                                     sha256=hashlib.sha256(source.encode()).hexdigest())
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
        verdict = call.verdict and {k: call.verdict.get(k) for k in (
            "status", "correct", "reward", "runtime_ms", "eager_ms", "compiled_ms", "speedup_vs_eager",
            "speedup_vs_compiled", "max_abs_error", "violations", "trials")}
        calls.append({"name": call.name, "arguments": arguments, "error": call.error,
                      "observation": cut(call.observation), "verdict": verdict, "seconds": call.seconds})
    return {"index": turn.index, "thought": cut(turn.thought), "tool_calls": calls, "policy_s": turn.policy_s,
            "tools_s": turn.tools_s, "prompt_tokens": turn.prompt_tokens, "completion_tokens": turn.completion_tokens}


def run_episode(run_id):
    """One optimization run: the agent's episode, every turn stored then streamed, verified versions kept."""
    from agent.loop import Episode, EpisodeConfig
    from agent.policies import PolicyError, make_policy
    from agent.workspace import Workspace
    from sandbox import EvalConfig
    from studio import actions
    from studio.models import Run

    run = Run.objects.select_related("problem").get(pk=run_id)
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
        try:
            policy = make_policy(run.policy, **settings.KS_POLICY_OPTIONS)
            trajectory = Episode(problem_path, policy, workspace, config, on_turn=on_turn).run()
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


def package_version(version_id):
    """Build the pip-installable package of a verified version on this worker; the web process only serves it."""
    from sandbox.errors import SandboxError
    from sandbox.package import package_solution
    from studio.models import KernelVersion

    version = KernelVersion.objects.select_related("problem").get(pk=version_id)
    out = settings.KS_PACKAGES_DIR / str(version.pk)
    with tempfile.TemporaryDirectory(prefix=f"ks-package-{version_id}-") as tmp:
        problem = Path(tmp) / f"{version.problem.name}.py"
        problem.write_text(version.problem.source, encoding="utf-8")
        workspace = Path(tmp) / "workspace"
        for rel, text in version.files.items():
            (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
            (workspace / rel).write_text(text, encoding="utf-8")
        try:
            result = package_solution(problem, workspace, out, name=f"ks-{version.problem.name}-v{version.pk}",
                                      verdict=version.verdict)
        except SandboxError as exc:
            KernelVersion.objects.filter(pk=version_id).update(package_error=str(exc))
            return {"error": str(exc)}
    package = {"sdist": Path(result.sdist).name, "wheel": Path(result.wheel).name if result.wheel else None,
               "notes": list(result.notes)}
    KernelVersion.objects.filter(pk=version_id).update(package=package, package_error="")
    log.info("version %s packaged: %s", version_id, package)
    return package
