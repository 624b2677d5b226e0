"""The live/offline indicator of a job's worker on the run page and the staff job pages, against real RQ workers."""

import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from redis import Redis
from rq import Queue

from studio.models import BenchEvaluation, Problem, Run, SynthesisRun
from studio.testing import kill_family

pytestmark = pytest.mark.django_db


@pytest.fixture
def queue():
    """A queue of this test's own in the configured Redis (no other test's worker serves it); deleted after."""
    queue = Queue(f"test-liveness-{uuid.uuid4().hex[:8]}", connection=Redis.from_url(settings.REDIS_URL))
    yield queue
    for job_id in queue.job_ids + queue.started_job_registry.get_job_ids():
        queue.connection.delete(f"rq:job:{job_id}")
    queue.delete(delete_jobs=True)


def start_worker(queue):
    """A real, long-running RQ worker on QUEUE (a plain `rq worker`: the jobs here are time.sleep)."""
    rq = Path(sys.executable).with_name("rq")
    return subprocess.Popen(
        [str(rq), "worker", "--url", settings.REDIS_URL, queue.name],
        cwd=settings.BASE_DIR,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def wait_for(condition, timeout=60, what="the condition"):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout} s"
        time.sleep(0.1)


@pytest.fixture
def owner(client):
    user = get_user_model().objects.create_user("ada", password="pw", is_staff=True)
    client.force_login(user)
    return user


def run_with(owner, job):
    problem = Problem.objects.create(owner=owner, name="relu", source="# relu", sha256="0" * 64)
    return Run.objects.create(owner=owner, problem=problem, job_id=job.id if job else "")


def test_pages_say_offline_while_no_worker_serves_the_jobs_queue(client, owner, queue):
    job = queue.enqueue(time.sleep, 60, meta={"owner_id": owner.pk})
    run = run_with(owner, job)
    offline = f"worker offline: no worker serves the {queue.name} queue: the job waits until one starts"
    assert offline in client.get(f"/runs/{run.pk}").content.decode()
    evaluation = BenchEvaluation.objects.create(created_by=owner, job_id=job.id)
    assert offline in client.get(f"/staff/evaluations/{evaluation.pk}").content.decode()
    synthesis = SynthesisRun.objects.create(created_by=owner, count=1, job_id=job.id)
    assert offline in client.get(f"/staff/synthesis/{synthesis.pk}").content.decode()
    # The run page's indicator refreshes itself from its own URL.
    partial = client.get(f"/jobs/{job.id}/worker").content.decode()
    assert offline in partial and f'hx-get="/jobs/{job.id}/worker"' in partial


def test_pages_say_live_while_a_worker_runs_the_job_and_offline_once_it_dies(client, owner, queue):
    running = queue.enqueue(time.sleep, 60, meta={"owner_id": owner.pk})
    waiting = queue.enqueue(time.sleep, 60, meta={"owner_id": owner.pk})
    worker = start_worker(queue)
    try:
        wait_for(lambda: running.get_status(refresh=True) == "started", what="the worker taking the job")
        running.refresh()
        page = client.get(f"/runs/{run_with(owner, running).pk}").content.decode()
        assert f"worker live: running on {running.worker_name}" in page
        partial = client.get(f"/jobs/{waiting.id}/worker").content.decode()
        assert f"worker live: 1 worker on the {queue.name} queue" in partial
    finally:
        kill_family(worker.pid)
        worker.wait(30)
    # RQ still says "started"; the worker's process is gone.
    assert running.get_status(refresh=True) == "started"
    assert (
        f"worker offline: its worker {running.worker_name} stopped answering"
        in client.get(f"/jobs/{running.id}/worker").content.decode()
    )


def test_nothing_is_shown_for_a_run_without_a_pending_job_and_strangers_get_404(client, owner, queue):
    page = client.get(f"/runs/{run_with(owner, None).pk}").content.decode()
    assert "worker live" not in page and "worker offline" not in page
    job = queue.enqueue(time.sleep, 60, meta={"owner_id": owner.pk})
    stranger = get_user_model().objects.create_user("eve", password="pw")
    client.force_login(stranger)
    assert client.get(f"/jobs/{job.id}/worker").status_code == 404


def test_a_finished_run_shows_no_worker_even_while_its_job_still_says_it_pends(client, owner, queue):
    # The run job stores the final status before RQ marks the job finished: a page loaded between says nothing.
    job = queue.enqueue(time.sleep, 60, meta={"owner_id": owner.pk})
    run = run_with(owner, job)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.SUCCEEDED)
    page = client.get(f"/runs/{run.pk}").content.decode()
    assert "worker offline" not in page and "worker live" not in page
