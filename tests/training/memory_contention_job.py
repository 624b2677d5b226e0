"""A stand-in episode for the evaluation scheduler's tests: it "uses the GPU" for a moment and reports out of
memory, the way torch words it, when another big episode held the card at the same time (marker files)."""

import os
import time
from pathlib import Path

from training.evaluation.jobs import EpisodeRequest
from training.evaluation.problems import BenchProblem
from training.evaluation.results import EpisodeResult


def run(request):
    req = EpisodeRequest.from_json(request)
    problem = BenchProblem.from_json(req.problem)
    folder = Path(req.policy_options["folder"])
    big = problem.name.startswith("big")
    mine = folder / f"{problem.name}.{req.attempt}.{os.getpid()}.running"
    mine.write_text("")
    time.sleep(0.6)
    beside = [p.name for p in folder.glob("*.running") if p != mine]
    mine.unlink()
    with open(folder / "log", "a") as fh:
        fh.write(f"{problem.name} beside={len(beside)}\n")
    result = EpisodeResult(
        arm=req.arm,
        key=problem.key,
        level=problem.level,
        problem_id=problem.problem_id,
        name=problem.name,
        problem_sha256=problem.sha256,
        attempt=req.attempt,
        policy=req.policy,
    )
    if big and beside:
        result.verdict = {
            "status": "crashed",
            "correct": False,
            "reward": -1,
            "log": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.00 GiB.",
        }
    else:
        result.verdict = {"status": "ok", "correct": True, "reward": 1, "log": ""}
    return {"result": result.to_json(), "trajectory": None}
