"""Re-timing an evaluation's stored solutions: each correct result's solution.py evaluated again under its arm's
sandbox setting, in fresh processes, its verdict replaced and the speedups it had kept beside it.

For results measured under an older timing protocol (before the per-device timing lock, episodes timed on one GPU
at once): the solutions stand, only their measurement is redone, in a fraction of the episodes' time.
"""
import ast
import multiprocessing
import os
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from datetime import datetime, timezone

from sandbox.config import EvalConfig
from sandbox.workers.reference import BASELINE_PROTOCOL

from training.evaluation.problems import BenchProblem
from training.evaluation.runner import _interrupt


def stale(folder):
    """The stored correct results not re-timed under the current protocol, with a solution file to re-time."""
    out = []
    for (arm, key), result in sorted(folder.finished().items()):
        if not result.correct or (result.extra.get("retimed") or {}).get("protocol") == BASELINE_PROTOCOL:
            continue
        solution = folder.path / "episodes" / arm / key / "solution.py"
        if solution.is_file():
            out.append((result, solution))
    return out


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


def retime_one(problem_json, solution_path, eval_json):
    """The verdict JSON of SOLUTION_PATH on the problem, evaluated now (runs in a pool process). An exported
    workspace is evaluated as the workspace it was, so that it builds as it did in its episode."""
    import sandbox
    from agent.workspace import write_files
    problem = BenchProblem.from_json(problem_json)
    with tempfile.TemporaryDirectory(prefix="ks-retime-") as tmp:
        os.chmod(tmp, 0o755)
        solution, files = solution_path, exported_files(solution_path)
        if files is not None:
            solution = os.path.join(tmp, "workspace")
            write_files(solution, files)
        return sandbox.evaluate(problem.write(tmp), solution, EvalConfig.from_json(eval_json)).to_json()


def retime(folder, problems, workers=1, stop_after_s=None, note=print):
    """Re-time FOLDER's stale results (PROBLEMS: {key: BenchProblem}); returns (re-timed, skipped, left)."""
    arms = folder.spec["arms"]
    todo, skipped = [], 0
    for result, solution in stale(folder):
        problem = problems.get(result.key)
        if problem is None or problem.sha256 != result.problem_sha256 or result.arm not in arms:
            note(f"{result.arm}/{result.key}: its problem is not in --problems as it was evaluated; not re-timed")
            skipped += 1
            continue
        todo.append((result, solution, problem))
    deadline = None if stop_after_s is None else time.monotonic() + stop_after_s
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
    running, done = {}, 0
    try:
        while todo or running:
            while todo and len(running) < workers and (deadline is None or time.monotonic() < deadline):
                result, solution, problem = todo.pop(0)
                running[pool.submit(retime_one, problem.to_json(), str(solution), arms[result.arm])] = result
            if not running:
                break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                result = running.pop(future)
                old = result.verdict
                try:
                    result.verdict = future.result()
                except Exception as exc:  # noqa: BLE001 -- the stored result stays as it was
                    note(f"{result.arm}/{result.key}: re-timing failed ({type(exc).__name__}: {exc}); kept as it was")
                    continue
                result.extra = {**result.extra, "retimed": {
                    "protocol": BASELINE_PROTOCOL, "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                    "previous_speedup_vs_eager": old.get("speedup_vs_eager"),
                    "previous_speedup_vs_compiled": old.get("speedup_vs_compiled"),
                    "previous_reward": old.get("reward")}}
                folder.results.append(result)
                done += 1
                v = result.verdict
                note(f"[{done}] {result.arm}/{result.key}: {v['status']}, reward {v['reward']} (was "
                     f"{old.get('reward')}), {v.get('speedup_vs_eager') or 0:.2f}x eager (was "
                     f"{old.get('speedup_vs_eager') or 0:.2f}x), {v.get('speedup_vs_compiled') or 0:.2f}x compile "
                     f"(was {old.get('speedup_vs_compiled') or 0:.2f}x)")
    except BaseException:
        _interrupt(pool)  # evaluations in flight stop the way Ctrl-C stops them: their jailed workers end too
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return done, skipped, len(todo)
