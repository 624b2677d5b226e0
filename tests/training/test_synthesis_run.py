"""A small synthesis run end to end: `python -m training synthesize` enqueues candidates as RQ jobs on a queue of
the test's own, a real `rq worker` runs them (jailed probes, torch.compile on the CPU), the dataset and its
summary land beside --out; rerunning the same command continues the run instead of starting over."""

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from sandbox.validate import InvalidProblem, validate_problem
from studio.testing import kill_tree
from training.synthesis.filters import FILTERS

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = os.environ.get("KS_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture
def synthesis_queue(tmp_path):
    """(queue name, environment) with one `rq worker` on that queue; the worker and the queue go at the end."""
    from redis import Redis
    from rq import Queue, Worker

    name = f"ks-test-synthesis-{uuid.uuid4().hex[:10]}"
    env = {**os.environ, "KS_CPU_THREADS": "1", "KS_SANDBOX_MEMORY_MB": "4096", "REDIS_URL": REDIS_URL}
    log = open(tmp_path / "worker.log", "w")
    worker = subprocess.Popen(
        [str(Path(sys.executable).with_name("rq")), "worker", name, "--url", REDIS_URL],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    yield name, env, tmp_path / "worker.log"
    if worker.poll() is None:
        kill_tree(worker)
    connection = Redis.from_url(REDIS_URL)
    queue = Queue(name, connection=connection)
    for registered in Worker.all(queue=queue):
        registered.register_death()
    for registry in (queue.finished_job_registry, queue.failed_job_registry, queue.started_job_registry):
        for job_id in registry.get_job_ids():
            connection.delete(f"rq:job:{job_id}")
    queue.delete(delete_jobs=True)


def synthesize(out, queue, env, *extra):
    cmd = [
        sys.executable,
        "-m",
        "training",
        "synthesize",
        "--device",
        "cpu",
        "--profile",
        "tiny",
        "--out",
        str(out),
        "--min-ms",
        "0",
        "--max-ms",
        "10000",
        "--max-depth",
        "2",
        "--classes",
        "activation,elementwise,binary",
        "--time-budget",
        "0.05",
        "--backend",
        "rq",
        "--queue",
        queue,
        "--workers",
        "2",
        "--no-progress",
        *extra,
    ]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def test_a_small_run_through_a_real_rq_worker_keeps_valid_tasks_and_resumes(synthesis_queue, tmp_path):
    queue, env, worker_log = synthesis_queue
    out = tmp_path / "ops.jsonl"
    stopped = synthesize(out, queue, env, "--count", "1", "--max-attempts", "2")
    assert stopped.returncode in (0, 1), stopped.stderr + worker_log.read_text()
    first = [json.loads(line) for line in open(f"{out}.attempts.jsonl")]
    assert sorted(a["index"] for a in first) == [0, 1]

    done = synthesize(out, queue, env, "--count", "1")
    assert done.returncode == 0, done.stderr + worker_log.read_text()
    assert f"into {out}" in done.stdout
    attempts = [json.loads(line) for line in open(f"{out}.attempts.jsonl")]
    indexes = [a["index"] for a in attempts]
    assert indexes[:2] == [a["index"] for a in first] and sorted(indexes) == list(range(len(indexes)))  # continued

    tasks = [json.loads(line) for line in open(out)]
    assert len(tasks) >= 1 and len(tasks) == sum(a["kept"] for a in attempts)
    run = json.loads(Path(f"{out}.run.json").read_text())
    for task in tasks:
        assert task["task_id"].startswith(run["run_id"]) and task["version"] == 1
        assert sorted(v["filter"] for v in task["verdicts"]) == sorted(FILTERS)
        assert all(v["passed"] for v in task["verdicts"])
        assert task["eager_ms"] > 0 and task["compiled_ms"] > 0 and 1 <= task["fusion_depth"] <= 2
        assert task["fingerprint"].startswith("graph:") and task["device"] == "cpu"
        problem = tmp_path / f"{task['task_id']}.py"
        problem.write_text(task["source"])
        assert validate_problem(problem, "cpu")["outputs"] == task["outputs"]  # a usable KernelBench problem
    for attempt in attempts:
        if not attempt["kept"]:
            assert attempt["removed_by"] in FILTERS
            assert [v["filter"] for v in attempt["verdicts"] if not v["passed"]] == [attempt["removed_by"]]

    summary = json.loads(Path(f"{out}.summary.json").read_text())
    assert summary["attempts"] == len(attempts) and summary["kept"] == len(tasks)
    assert sum(summary["removed_by"].values()) == len(attempts) - len(tasks)
    assert sum(summary["distribution"]["fusion_depth"].values()) == len(tasks)
    assert summary["time"]["exec_share"] > 0.5  # execution, not the pipeline, is where the time goes
    assert f"Job OK (ks-synth-{run['run_id']}-000000)" in worker_log.read_text()

    from redis import Redis

    Redis.from_url(REDIS_URL).delete(f"ks:synthesis:{run['run_id']}:claims")
    other = synthesize(out, queue, env, "--count", "1", "--seed", "5")
    assert other.returncode == 2 and "started with other settings (seed differ)" in other.stderr


def test_compose_only_keeps_distinct_candidates_unrun_and_a_data_build_reads_them(tmp_path):
    from training.rl.tasks import read_rows

    out = tmp_path / "composed.jsonl"
    cmd = [sys.executable, "-m", "training", "synthesize", "--device", "cpu", "--profile", "tiny", "--compose-only"]
    result = subprocess.run(
        cmd + ["--count", "12", "--max-depth", "3", "--out", str(out), "-q"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) >= 12 and len({r["fingerprint"] for r in rows}) == len(rows)
    for row in rows:  # composed and de-duplicated, nothing executed
        assert [v["filter"] for v in row["verdicts"]] == ["composes", "not_duplicate"]
        assert row["eager_ms"] is None and row["inputs"] == [] and 1 <= row["fusion_depth"] <= 3
    summary = json.loads(Path(f"{out}.summary.json").read_text())
    assert summary["kept"] == len(rows) and summary["time"]["exec_s"] == 0
    problems = read_rows(str(out))
    assert [p["name"] for p in problems] == [r["name"] for r in rows] and all(
        "class Model" in p["code"] for p in problems
    )
    ran = 0
    for problem in problems[:4]:  # composed problems run as written (shapes were traced on the meta device)
        path = tmp_path / f"{problem['name']}.py"
        path.write_text(problem["code"])
        try:
            validate_problem(path, device="cpu")
            ran += 1
        except InvalidProblem:
            pass
    assert ran >= 3
