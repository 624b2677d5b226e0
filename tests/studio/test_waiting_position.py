"""A waiting job shows its place: the pages of a queued upload, run, edit evaluation, staff evaluation and synthesis
run say how many jobs are ahead of it in which queue (a real queue on the real Redis holding jobs ahead), and say it
again, updated, while it waits."""

import re

import django_rq
import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from studio import actions
from studio.models import BenchEvaluation, Evaluation, KernelVersion, Problem, Run, SynthesisRun

pytestmark = pytest.mark.django_db(transaction=True)

SOURCE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.tanh(x) * 2

def get_inputs():
    return [torch.randn(64, 32)]

def get_init_inputs():
    return []
"""


@pytest.fixture
def ahead():
    """ahead(queue, n): N jobs put on QUEUE before the test's own (no worker takes them); every queue used is
    emptied afterwards."""
    used = set()

    def put(queue, n):
        used.add(queue)
        django_rq.get_queue(queue).empty()
        return [django_rq.get_queue(queue).enqueue("time.sleep", 0) for _ in range(n)]

    yield put
    for queue in used:
        django_rq.get_queue(queue).empty()


@pytest.fixture
def ada(client):
    client.force_login(get_user_model().objects.create_user("ada", password="pw"))
    return client


def test_a_queued_upload_shows_the_jobs_ahead_and_counts_down_as_they_leave(ada, ahead):
    first, _ = ahead("cpu", 2)
    response = ada.post("/problems/new", {"device": "cpu", "code": SOURCE, "name": "tanh2"}, HTTP_HX_REQUEST="true")
    assert "waiting: 2 jobs ahead in the cpu queue" in response.content.decode()
    job_id = response.content.decode().split("/problems/validation/")[1].split('"')[0]
    first.cancel()
    polled = ada.get(f"/problems/validation/{job_id}", HTTP_HX_REQUEST="true").content.decode()
    assert "waiting: 1 job ahead in the cpu queue" in polled and 'hx-trigger="every 1s"' in polled
    # Whether a worker serves that queue at all (live or offline: whichever this Redis has; tests/studio/test_liveness
    # pins each state against real workers).
    assert re.search(r'<span class="worker-status (live|offline)">worker (live|offline): ', polled)


def test_a_queued_runs_page_shows_its_place_and_stops_polling_once_a_worker_takes_it(ada, ahead):
    user = get_user_model().objects.get(username="ada")
    problem = Problem.objects.create(owner=user, name="tanh2", source=SOURCE, sha256="0" * 64, device="cpu")
    first, _, _ = ahead("cpu", 3)
    ada.post(f"/problems/{problem.pk}/runs", {"policy": "heuristic", "device": "cpu", "max_turns": 5})
    run = Run.objects.get()
    page = ada.get(f"/runs/{run.pk}").content.decode()
    assert "waiting: 3 jobs ahead in the cpu queue" in page and f'hx-get="/runs/{run.pk}/waiting"' in page
    first.cancel()
    polled = ada.get(f"/runs/{run.pk}/waiting").content.decode()
    assert "waiting: 2 jobs ahead in the cpu queue" in polled and 'hx-trigger="every 2s"' in polled

    actions.set_status(run.pk, Run.Status.RUNNING)  # as a worker does when it takes the run
    polled = ada.get(f"/runs/{run.pk}/waiting").content.decode()
    assert "ahead in the" not in polled and "hx-trigger" not in polled
    other = Client()
    other.force_login(get_user_model().objects.create_user("eve", password="pw"))
    assert other.get(f"/runs/{run.pk}/waiting").status_code == 404


def test_a_queued_edit_evaluation_reports_its_place_to_the_editor(ada, ahead):
    user = get_user_model().objects.get(username="ada")
    problem = Problem.objects.create(owner=user, name="tanh2", source=SOURCE, sha256="0" * 64, device="cpu")
    run = Run.objects.create(owner=user, problem=problem, status="succeeded", policy="heuristic", max_turns=8)
    version = KernelVersion.objects.create(problem=problem, run=run, files={"model_new.py": "class ModelNew: pass\n"})
    ahead("cpu", 1)
    response = ada.post(
        f"/versions/{version.pk}/evaluations", {"files": version.files}, content_type="application/json"
    )
    assert response.status_code == 202
    evaluation = Evaluation.objects.get()
    assert ada.get(f"/evaluations/{evaluation.pk}").json()["waiting"] == {"ahead": 1, "queue": "cpu"}
    actions.set_evaluation(evaluation.pk, Evaluation.Status.RUNNING)
    assert ada.get(f"/evaluations/{evaluation.pk}").json()["waiting"] is None
    editor = ada.get(f"/versions/{version.pk}/edit").content.decode()
    assert 'id="verdict-waiting"' in editor  # where editor.js writes it while it polls


def test_queued_staff_evaluations_and_synthesis_runs_show_their_place_in_the_staff_queue(client, ahead):
    client.force_login(get_user_model().objects.create_user("root", password="pw", is_staff=True))
    ahead("staff-cpu", 1)
    client.post("/staff/evaluations/", {"levels": ["1"], "policy": "heuristic", "device": "cpu"})
    client.post("/staff/synthesis/", {"count": 5, "device": "cpu", "workers": 1})
    evaluation, run = BenchEvaluation.objects.get(), SynthesisRun.objects.get()
    page = client.get(f"/staff/evaluations/{evaluation.pk}").content.decode()
    assert "waiting: 1 job ahead in the staff-cpu queue" in page
    polled = client.get(f"/staff/synthesis/{run.pk}", HTTP_HX_REQUEST="true").content.decode()
    assert "waiting: 2 jobs ahead in the staff-cpu queue" in polled and 'hx-trigger="every 3s"' in polled

    client.post(f"/staff/evaluations/{evaluation.pk}/stop")  # leaves the queue: the synthesis moves up
    polled = client.get(f"/staff/synthesis/{run.pk}", HTTP_HX_REQUEST="true").content.decode()
    assert "waiting: 1 job ahead in the staff-cpu queue" in polled
    assert "ahead in the" not in client.get(f"/staff/evaluations/{evaluation.pk}").content.decode()
