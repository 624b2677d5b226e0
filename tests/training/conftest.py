"""Fixtures of the training tests, shared by their modules; each name says which tests it serves.

evaluation_*: tiny KernelBench-format problems that CPU episodes of the heuristic finish in seconds, the fast
sandbox flags, an environment with a private sandbox cache (shared by the session, so builds of the same kernel
are reused), and real `rq worker` processes on a queue of the test's own against the real Redis.
"""

import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from studio.testing import kill_tree

ROOT = Path(__file__).resolve().parents[2]

EVALUATION_PROBLEMS = [
    # level, id, name, code: an elementwise chain and a row softmax the heuristic fuses, a matrix inverse it has no kernel for
    (
        1,
        1,
        "1_Scale_ReLU",
        """
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x):
                return torch.relu(x) * 2.0

        def get_inputs():
            return [torch.randn(64, 256)]

        def get_init_inputs():
            return []
        """,
    ),
    (
        1,
        2,
        "2_Softmax",
        """
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x):
                return torch.softmax(x, dim=-1)

        def get_inputs():
            return [torch.randn(32, 128)]

        def get_init_inputs():
            return []
        """,
    ),
    (
        2,
        1,
        "1_Batched_Inverse",
        """
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x):
                return torch.linalg.inv(x)

        def get_inputs():
            return [torch.randn(8, 4, 4)]

        def get_init_inputs():
            return []
        """,
    ),
]


@pytest.fixture
def evaluation_problems(tmp_path):
    """Write problems.jsonl with the given names (default: all three); returns its path."""

    def write(*names, folder=tmp_path):
        rows = [
            {"level": lv, "problem_id": pid, "name": name, "code": textwrap.dedent(code).lstrip()}
            for lv, pid, name, code in EVALUATION_PROBLEMS
            if not names or name in names
        ]
        path = Path(folder) / "problems.jsonl"
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
        return path

    return write


@pytest.fixture
def evaluation_flags():
    """A heuristic CPU evaluation with a short timing budget and no torch.compile baseline."""
    return [
        "--policy",
        "heuristic",
        "--device",
        "cpu",
        "--no-compiled",
        "--max-turns",
        "8",
        "-q",
        "--sandbox-option",
        "time_budget_s=0.2",
        "--sandbox-option",
        "warmup_s=0.05",
    ]


@pytest.fixture
def evaluation_env(monkeypatch):
    """This process's environment (inherited by episodes' processes) for quick CPU evaluations against the run's
    sandbox cache (the autouse ks_cache_dir); REDIS_URL unset."""
    monkeypatch.setenv("KS_CPU_THREADS", "1")
    monkeypatch.setenv("KS_SANDBOX_MEMORY_MB", "4096")
    monkeypatch.delenv("REDIS_URL", raising=False)
    return dict(os.environ)


@pytest.fixture
def evaluation_rq(evaluation_env, tmp_path):
    """A queue of this test's own on the real Redis: {"url", "queue", "connection", "start_worker"}. Workers are
    `rq worker QUEUE` processes; every one still running is killed at the end and the queue deleted."""
    from redis import Redis
    from rq import Queue, Worker
    from rq.job import Job

    url = os.environ.get("KS_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    name = f"ks-test-evaluation-{uuid.uuid4().hex[:10]}"
    connection = Redis.from_url(url)
    workers = []

    def start_worker():
        log = open(tmp_path / f"worker-{len(workers)}.log", "w")
        proc = subprocess.Popen(
            [str(Path(sys.executable).with_name("rq")), "worker", name, "--url", url],
            cwd=ROOT,
            env=evaluation_env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        workers.append(proc)
        return proc

    yield {"url": url, "queue": name, "connection": connection, "start_worker": start_worker, "kill": kill_tree}
    for proc in workers:
        if proc.poll() is None:
            kill_tree(proc)
    queue = Queue(name, connection=connection)
    for worker in Worker.all(queue=queue):
        worker.register_death()  # a killed worker's registration would outlive the test
    for registry in (
        queue.started_job_registry,
        queue.failed_job_registry,
        queue.finished_job_registry,
        queue.canceled_job_registry,
    ):
        for job in Job.fetch_many(registry.get_job_ids(), connection=connection):
            if job is not None:
                job.delete()
    queue.delete(delete_jobs=True)
