"""Stop on a staff evaluation or synthesis run: the row is stopped, its RQ job cancelled or its work horse killed,
and nothing of it is left behind on the worker's host: no process (the horse, its pool, the jailed processes) and
no folder (the job's scratch folder, the jails' private folders); the worker itself goes on."""

import json
import time

import django_rq
import psutil
import pytest
from django.contrib.auth import get_user_model

from studio.models import BenchEvaluation, SynthesisRun

pytestmark = pytest.mark.django_db(transaction=True)

RELU = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * {scale}

def get_inputs():
    return [torch.randn(64, 256)]

def get_init_inputs():
    return []
"""
SYNTHESIS = "--profile tiny --min-ms 0 --max-ms 10000 --max-depth 2 --classes activation,elementwise,binary"
LIMITS = {"KS_CPU_THREADS": "1", "KS_SANDBOX_MEMORY_MB": "4096"}


@pytest.fixture
def staff(client):
    user = get_user_model().objects.create_user("root", password="pw", is_staff=True)
    client.force_login(user)
    django_rq.get_queue("staff-cpu").empty()
    return user


@pytest.fixture
def problems(tmp_path):
    """Three level-1 problems: the evaluation is still busy with them when it is stopped."""
    path = tmp_path / "problems.jsonl"
    path.write_text(
        "".join(
            json.dumps({"level": 1, "problem_id": i, "name": f"{i}_Scale_ReLU", "code": RELU.format(scale=i + 1.5)})
            + "\n"
            for i in range(1, 4)
        )
    )
    return path


def naming(roots):
    """{pid: process} of every process on this host whose command line or working folder names one of ROOTS."""
    found = {}
    for process in psutil.process_iter(["cmdline", "cwd"]):
        text = " ".join(process.info["cmdline"] or []) + " " + (process.info["cwd"] or "")
        if any(str(root) in text for root in roots):
            found[process.pid] = process
    return found


def job_processes(worker, roots):
    """{pid: process} of the worker's jobs: the worker's descendants, and any process naming one of ROOTS (this
    test's scratch and jail folders), wherever it was reparented."""
    found = naming(roots)
    try:
        found.update((p.pid, p) for p in psutil.Process(worker.pid).children(recursive=True))
    except psutil.NoSuchProcess:
        pass
    return found


def wait_for(check, what, timeout=240):
    deadline = time.monotonic() + timeout
    while not (result := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what() if callable(what) else what}"
        time.sleep(0.2)
    return result


def folders(root, but=()):
    return sorted(p.name for p in root.iterdir() if p.name not in but) if root.is_dir() else []


def leftovers(scratch, sandbox):
    """What is left under the worker's job scratch root and jail root (the jails' uid reservations are host-wide
    bookkeeping, not a job's)."""
    return folders(scratch) + folders(sandbox, but=("uids",))


def stop_mid_run_and_check_nothing_is_left(client, row, stop_url, worker, scratch, sandbox):
    roots = [scratch, sandbox]
    wait_for(
        lambda: type(row).objects.get(pk=row.pk).status == "running",
        lambda: f"the job to start; the worker said {worker.log.read_text()[-3000:]}",
    )
    wait_for(
        lambda: naming([sandbox]),
        lambda: f"a jailed process of the job; the worker said {worker.log.read_text()[-3000:]}",
    )
    before = job_processes(worker, roots)
    assert len(before) >= 2 and len(folders(scratch)) == 1 and folders(sandbox, but=("uids",))

    assert client.post(stop_url).status_code == 302
    row.refresh_from_db()
    assert row.status == "stopped" and row.error == "stopped by root" and row.finished_at

    wait_for(
        lambda: not job_processes(worker, roots),
        lambda: f"every process of the job to end: {[p.info for p in job_processes(worker, roots).values()]}",
        timeout=60,
    )
    wait_for(
        lambda: not leftovers(scratch, sandbox),
        lambda: f"the job's folders to go: {leftovers(scratch, sandbox)}",
        timeout=30,
    )
    for process in before.values():
        assert not process.is_running(), process  # psutil also tells a reused pid from the original process
    job = django_rq.get_queue("staff-cpu").fetch_job(row.job_id)
    assert job.get_status(refresh=True) == "stopped"
    assert worker.poll() is None, "the worker itself must go on"
    row.refresh_from_db()
    assert row.status == "stopped", "the killed job must not have closed the row otherwise"
    page = client.get(stop_url.rsplit("/", 1)[0]).content.decode()
    assert "stopped by root" in page and "Stop</button>" not in page


def test_stop_on_a_running_evaluation_leaves_no_process_and_no_folder_behind(
    client, staff, problems, tmp_path, start_worker
):
    client.post("/staff/evaluations/", {"levels": ["1"], "policy": "heuristic", "device": "cpu"})
    evaluation = BenchEvaluation.objects.get()
    assert "Stop</button>" in client.get(f"/staff/evaluations/{evaluation.pk}").content.decode()
    worker = start_worker(
        "staff-cpu",
        KS_KERNELBENCH_PROBLEMS=str(problems),
        KS_EVALUATIONS_DIR=str(tmp_path / "evals"),
        KS_EVALUATION_ARGS="--no-compiled",
        **LIMITS,
    )
    stop_mid_run_and_check_nothing_is_left(
        client,
        evaluation,
        f"/staff/evaluations/{evaluation.pk}/stop",
        worker,
        start_worker.scratch,
        start_worker.sandbox,
    )
    assert (tmp_path / "evals" / str(evaluation.pk)).is_dir()  # what it stored is the evaluation's, not scratch


def test_stop_on_a_running_synthesis_leaves_no_process_and_no_folder_behind(client, staff, tmp_path, start_worker):
    client.post("/staff/synthesis/", {"count": 50, "device": "cpu", "workers": 1})
    run = SynthesisRun.objects.get()
    assert "Stop</button>" in client.get(f"/staff/synthesis/{run.pk}").content.decode()
    worker = start_worker(
        "staff-cpu", KS_SYNTHESIS_DIR=str(tmp_path / "synthesis"), KS_SYNTHESIS_ARGS=SYNTHESIS, **LIMITS
    )
    stop_mid_run_and_check_nothing_is_left(
        client, run, f"/staff/synthesis/{run.pk}/stop", worker, start_worker.scratch, start_worker.sandbox
    )


def test_stop_on_a_queued_evaluation_cancels_its_job_and_it_never_runs(client, staff, problems, tmp_path, drain_queue):
    client.post("/staff/evaluations/", {"levels": ["1"], "policy": "heuristic", "device": "cpu"})
    evaluation = BenchEvaluation.objects.get()
    assert client.post(f"/staff/evaluations/{evaluation.pk}/stop").status_code == 302
    evaluation.refresh_from_db()
    assert evaluation.status == "stopped"
    assert django_rq.get_queue("staff-cpu").fetch_job(evaluation.job_id).get_status() == "canceled"
    drain_queue("staff-cpu", KS_KERNELBENCH_PROBLEMS=str(problems), KS_EVALUATIONS_DIR=str(tmp_path / "evals"))
    evaluation.refresh_from_db()
    assert evaluation.status == "stopped" and not evaluation.folder and not (tmp_path / "evals").exists()


def test_stop_is_refused_to_users_who_are_not_staff(client):
    user = get_user_model().objects.create_user("ada", password="pw")
    client.force_login(user)
    evaluation = BenchEvaluation.objects.create(created_by=user)
    run = SynthesisRun.objects.create(created_by=user, count=1)
    assert client.post(f"/staff/evaluations/{evaluation.pk}/stop").status_code == 403
    assert client.post(f"/staff/synthesis/{run.pk}/stop").status_code == 403
    evaluation.refresh_from_db()
    run.refresh_from_db()
    assert evaluation.status == run.status == "queued"
