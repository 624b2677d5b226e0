"""A worker that dies mid-run leaves the run failed with the reason, not stuck as running."""

import os
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

import django_rq
import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from studio.models import Problem, Run
from studio.reconcile import reconcile
from studio.testing import kill_family

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]
SLOW = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.tanh(x) + 1.0

def get_inputs():
    return [torch.randn(64, 64)]

def get_init_inputs():
    return []
"""


def test_a_run_whose_worker_dies_is_marked_failed_with_the_reason(client, tmp_path):
    owner = get_user_model().objects.create_user("ada", password="pw")
    client.force_login(owner)
    django_rq.get_queue("cpu").empty()
    problem = Problem.objects.create(owner=owner, name="tanh", source=SLOW, sha256="0" * 64, device="cpu")
    client.post(f"/problems/{problem.pk}/runs", {"policy": "heuristic", "device": "cpu", "max_turns": 5})
    run = Run.objects.get()
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "KS_CACHE_DIR": str(tmp_path / "cache"),
    }
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "rqworker", "cpu"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while Run.objects.get(pk=run.pk).status != "running":
            assert time.monotonic() < deadline, "the worker never started the run"
            time.sleep(0.2)
        assert reconcile() == 0  # alive and working: left alone
        kill_family(worker.pid)
        worker.wait(10)
        assert reconcile() == 1
    finally:
        if worker.poll() is None:
            kill_family(worker.pid)
    run.refresh_from_db()
    assert run.status == "failed" and "stopped answering" in run.error


def test_a_run_whose_job_vanished_is_marked_failed():
    owner = get_user_model().objects.create_user("ada", password="pw")
    problem = Problem.objects.create(owner=owner, name="tanh", source=SLOW, sha256="0" * 64)
    run = Run.objects.create(owner=owner, problem=problem, status="running", job_id="no-such-job")
    assert reconcile() == 1
    run.refresh_from_db()
    assert run.status == "failed" and "gone from the queue" in run.error


def test_an_evaluation_whose_job_vanished_is_failed_and_says_so_on_the_run_stream():
    from studio.models import Evaluation, KernelVersion, RunEvent

    owner = get_user_model().objects.create_user("ada", password="pw")
    problem = Problem.objects.create(owner=owner, name="tanh", source=SLOW, sha256="0" * 64)
    run = Run.objects.create(owner=owner, problem=problem, status="succeeded")
    base = KernelVersion.objects.create(problem=problem, run=run, files={"model_new.py": ""})
    stuck = Evaluation.objects.create(owner=owner, base=base, run=run, status="running", job_id="no-such-job")
    fresh = Evaluation.objects.create(owner=owner, base=base, run=run, status="queued")  # not enqueued yet
    assert reconcile() == 1
    stuck.refresh_from_db()
    fresh.refresh_from_db()
    assert stuck.status == "failed" and "gone from the queue" in stuck.error and fresh.status == "queued"
    event = RunEvent.objects.get(run=run, kind="evaluation")
    assert event.payload["status"] == "failed" and event.payload["evaluation"] == stuck.pk


def test_staff_jobs_whose_job_is_gone_are_failed_and_those_still_queued_are_left(client):
    from studio.models import BenchEvaluation, SynthesisRun, TrainingRun

    user = get_user_model().objects.create_user("root", password="pw", is_staff=True)
    queue = django_rq.get_queue("train")
    queue.empty()
    gone = [
        BenchEvaluation.objects.create(created_by=user, job_id="no-such-job", status="running"),
        SynthesisRun.objects.create(created_by=user, count=1, job_id="no-such-job", status="queued"),
        TrainingRun.objects.create(created_by=user, name="t", config="seed: 0", job_id="no-such-job", status="running"),
    ]
    # Scheduled an hour ahead: no worker (other test runs share this Redis) takes it meanwhile.
    waiting = queue.enqueue_in(timedelta(hours=1), "studio.jobs.run_training", 0, job_id=f"ks-test-{uuid.uuid4().hex}")
    alive = TrainingRun.objects.create(created_by=user, name="w", config="seed: 0", job_id=waiting.id)
    unsaved = TrainingRun.objects.create(created_by=user, name="u", config="seed: 0")  # job id not saved yet
    try:
        assert reconcile() == 3
    finally:
        waiting.delete()
    for row in gone:
        row.refresh_from_db()
        assert row.status == "failed" and "its job is gone" in row.error and row.finished_at, row
    alive.refresh_from_db()
    unsaved.refresh_from_db()
    assert alive.status == "queued" and unsaved.status == "queued"
