"""Re-timing an evaluation's stored solutions: each correct result's solution.py evaluated again under its arm's
sandbox setting, through the same local scheduler as episodes, its verdict replaced and the speedups it had kept
beside it.

For results measured under an older timing protocol (before the per-device timing lock, episodes timed on one GPU
at once): the solutions stand, only their measurement is redone, in a fraction of the episodes' time.
"""

import ast
import os
import tempfile
from datetime import datetime, timezone

from sandbox.reward import schedule_of
from sandbox.workers.reference import BASELINE_PROTOCOL

from training.evaluation import archive, runner
from training.evaluation.jobs import EpisodeRequest, episodes_of
from training.evaluation.problems import BenchProblem
from training.evaluation.results import EpisodeResult


def measured_now(result):
    """Whether RESULT's speedups were measured under the current timing protocol: in its episode, or re-timed."""
    return BASELINE_PROTOCOL in (
        result.extra.get("timing_protocol"),
        (result.extra.get("retimed") or {}).get("protocol"),
    )


def stale(folder):
    """The stored correct results not measured under the current protocol, with a solution file to re-time;
    the oldest measurements first, so that a re-timing cut short has redone the oldest."""
    out = []
    todo = {
        (arm, key): result
        for (arm, key), result in sorted(folder.finished().items())
        if result.correct and not measured_now(result)
    }
    packed = folder.path / archive.ARCHIVE
    missing = {
        f"{arm}/{key}" for arm, key in todo if not (folder.path / "episodes" / arm / key / "solution.py").is_file()
    }
    if missing and packed.is_file():
        archive.unpack(packed, folder.path, keys=missing)
    for (arm, key), result in todo.items():
        solution = folder.path / "episodes" / arm / key / "solution.py"
        if solution.is_file():
            out.append((result, solution))
    return sorted(out, key=lambda pair: pair[0].finished_at or "")


def exported_files(solution_path):
    """The workspace files inside an exported solution.py (its SOURCES literal), or None for any other file."""
    try:
        tree = ast.parse(open(solution_path, encoding="utf-8").read())
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["SOURCES"]:
            try:
                files = ast.literal_eval(node.value)
            except ValueError:
                return None
            return files if isinstance(files, dict) and "model_new.py" in files else None
    return None


def retime_job(request):
    """The scheduler's job: the stored result of REQUEST with a verdict measured now. An exported workspace is
    evaluated as the workspace it was, so that it builds as it did in its episode. If the evaluation itself
    breaks, the stored result comes back unchanged, with the reason, so that nothing stored is lost."""
    import sandbox
    from agent.workspace import write_files

    req = EpisodeRequest.from_json(request)
    result = EpisodeResult.from_json(req.retime["result"])
    old = result.verdict
    try:
        with tempfile.TemporaryDirectory(prefix="ks-retime-") as tmp:
            os.chmod(tmp, 0o755)
            solution, files = req.retime["solution"], exported_files(req.retime["solution"])
            if files is not None:
                solution = os.path.join(tmp, "workspace")
                write_files(solution, files)
            problem = BenchProblem.from_json(req.problem).write(tmp)
            result.verdict = sandbox.evaluate(problem, solution, req.episode.eval).to_json()
    except Exception as exc:  # noqa: BLE001
        result.extra = {**result.extra, "retime_error": f"{type(exc).__name__}: {exc}"}
        return {"result": result.to_json(), "trajectory": None}
    result.extra = {
        **{k: v for k, v in result.extra.items() if k != "retime_error"},
        "retimed": {
            "protocol": BASELINE_PROTOCOL,
            "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "previous_speedup_vs_eager": old.get("speedup_vs_eager"),
            "previous_speedup_vs_compiled": old.get("speedup_vs_compiled"),
            "previous_reward": old.get("reward"),
            "previous_reward_schedule": schedule_of(old),
            "previous_solution_hash": old.get("solution_hash"),
        },
    }
    return {"result": result.to_json(), "trajectory": None}


def retime(folder, problems, work, workers=1, note=print):
    """Re-time FOLDER's stale results (PROBLEMS: {key: BenchProblem}) with WORK (a runner.Runner);
    returns (requests run, skipped)."""
    episodes, requests, skipped = episodes_of(folder.spec), [], 0
    for result, solution in stale(folder):
        problem = problems.get(result.key)
        if problem is None or problem.sha256 != result.problem_sha256 or result.arm not in episodes:
            note(f"{result.arm}/{result.key}: its problem is not in --problems as it was evaluated; not re-timed")
            skipped += 1
            continue
        requests.append(
            EpisodeRequest(
                arm=result.arm,
                problem=problem.to_json(),
                policy=result.policy,
                episode=episodes[result.arm],
                retime={"result": result.to_json(), "solution": str(solution)},
            )
        )
    runner.run_local(requests, work, workers, job=retime_job)
    return len(requests) - work.not_started, skipped
