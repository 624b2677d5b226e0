"""An evaluation through real `rq worker` processes on the real Redis: the worker (and the evaluation command) are
SIGKILLed mid-run, the results file keeps what finished, and --resume re-runs only the episode that was lost and
the ones never started."""

import json
import subprocess
import sys
import time
from pathlib import Path

from rq import Queue
from rq.job import Job
from rq.registry import StartedJobRegistry

from training.cli import main

ROOT = Path(__file__).resolve().parents[2]


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def wait_for_a_result_and_a_running_job(coordinator, results, registry, timeout=300):
    """(results so far, the id of the job running now) once one episode is stored and the next one runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert coordinator.poll() is None, f"the evaluation exited early ({coordinator.returncode})"
        done, running = lines(results), registry.get_job_ids()
        if done and running:
            return done, running[0]
        time.sleep(0.2)
    raise AssertionError(f"after {timeout} s: {len(lines(results))} result(s), running {registry.get_job_ids()}")


def test_an_rq_evaluation_survives_a_killed_worker_and_resumes_without_rerunning_finished_episodes(
    tmp_path, evaluation_rq, evaluation_env, evaluation_problems, evaluation_flags
):
    rq = evaluation_rq
    out, results = tmp_path / "out", tmp_path / "out" / "results.jsonl"
    args = [
        "evaluate",
        "--problems",
        str(evaluation_problems()),
        "--out",
        str(out),
        "--redis-url",
        rq["url"],
        "--queue",
        rq["queue"],
        *evaluation_flags,
    ]
    log = open(tmp_path / "coordinator.log", "w")
    coordinator = subprocess.Popen(
        [sys.executable, "-m", "training", *args],
        cwd=ROOT,
        env=evaluation_env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    worker = rq["start_worker"]()
    registry = StartedJobRegistry(rq["queue"], connection=rq["connection"])
    try:
        kept, running = wait_for_a_result_and_a_running_job(coordinator, results, registry)
    finally:
        rq["kill"](worker)  # mid-episode: the machine died
        rq["kill"](coordinator)
    lost = Job.fetch(running, connection=rq["connection"]).args[0]["problem"]["name"]
    assert lines(results) == kept and len(kept) == 1  # what finished stays, nothing half-written
    first = kept[0]
    assert first["verdict"]["correct"] and first["attempt"] == 1 and lost != first["name"]
    assert (out / first["trajectory"]).exists()

    rq["start_worker"]()
    assert main([*args, "--resume"]) == 0
    final = lines(results)
    by_name = {r["name"]: r for r in final}
    assert sorted(by_name) == ["1_Batched_Inverse", "1_Scale_ReLU", "2_Softmax"]
    assert len(final) == 3 and final[0] == first  # the finished episode did not run again
    assert by_name[lost]["attempt"] == 2  # the killed worker's episode ran again, once
    assert by_name["1_Scale_ReLU"]["verdict"]["correct"] and by_name["2_Softmax"]["verdict"]["correct"]
    inverse = by_name["1_Batched_Inverse"]  # no kernel for it: a failed result, not an error
    assert not inverse["verdict"]["correct"] and inverse["stop_reason"].startswith("policy_error")
    assert inverse["error"] == "" and inverse["worker"] and inverse["attempt"] == 1
    for r in final:
        assert json.loads((out / r["trajectory"]).read_text())["verdict"] == r["verdict"]

    metrics = json.loads((out / "metrics.json").read_text())["arms"]["strict"]
    assert metrics["overall"]["problems"] == 3 and metrics["overall"]["correct"] == 2
    assert metrics["levels"]["2"]["correct_rate"] == 0.0
    assert json.loads((out / "jobs.json").read_text()) == {}  # every job collected
    assert Queue(rq["queue"], connection=rq["connection"]).count == 0
