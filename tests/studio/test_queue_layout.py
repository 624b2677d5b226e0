"""Users' jobs and staff jobs have queues of their own: every job kind goes to its audience's queue, the training
package's episodes go to the staff queues, and a user's upload is served by real workers laid out as deployed while a
staff evaluation occupies the staff worker and another waits in the staff queue."""

import json
import time

import django_rq
import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from studio import queues
from studio.models import BenchEvaluation, Problem

USERS_KINDS = ("validation", "run", "edit", "package")
STAFF_KINDS = ("evaluation", "synthesis", "training")
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


def test_users_jobs_and_staff_jobs_never_share_a_queue():
    users = {queues.queue_name(kind, device) for kind in USERS_KINDS for device in ("cuda", "cpu")}
    staff = {queues.queue_name(kind, device) for kind in STAFF_KINDS for device in ("cuda", "cpu")}
    assert users == {"gpu", "cpu"} and staff == {"staff-gpu", "staff-cpu", "train"}
    assert users | staff == set(queues.NAMES) == set(settings.RQ_QUEUES)
    with pytest.raises(ValueError, match="no queue for jobs of kind 'upload'"):
        queues.queue_name("upload", "cpu")


def test_the_training_packages_episodes_go_to_the_staff_queues():
    from training.evaluation.queues import queue_name
    from training.rl.config import RolloutsConfig

    for device in ("cuda", "cpu"):
        assert queue_name(device) == queues.queue_name("evaluation", device)
    assert RolloutsConfig().queue == queues.queue_name("evaluation", "cuda")


def wait_for(check, what, timeout=180):
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what() if callable(what) else what}"
        time.sleep(0.2)


@pytest.mark.django_db(transaction=True)
def test_a_users_upload_is_served_while_a_staff_evaluation_occupies_the_staff_queue(client, tmp_path, start_worker):
    for name in ("cpu", "staff-cpu"):
        django_rq.get_queue(name).empty()
    client.force_login(get_user_model().objects.create_user("root", password="pw", is_staff=True))
    problems = tmp_path / "problems.jsonl"
    problems.write_text(
        "".join(
            json.dumps({"level": 1, "problem_id": i, "name": f"{i}_Scale_ReLU", "code": RELU.format(scale=i + 1.5)})
            + "\n"
            for i in range(1, 4)
        )
    )
    for _ in range(2):
        client.post("/staff/evaluations/", {"levels": ["1"], "policy": "heuristic", "device": "cpu"})
    busy, waiting = BenchEvaluation.objects.order_by("pk")
    env = {
        "KS_KERNELBENCH_PROBLEMS": str(problems),
        "KS_EVALUATIONS_DIR": str(tmp_path / "evals"),
        "KS_CPU_THREADS": "1",
        "KS_SANDBOX_MEMORY_MB": "4096",
        "KS_VALIDATE_TIMEOUT": "120",
    }
    # As deployed (docker/compose.yml): a staff worker takes its staff queue first, then users'; users' take theirs.
    staff_worker = start_worker("staff-cpu", "cpu", **env)
    users_worker = start_worker("cpu", **env)
    wait_for(
        lambda: BenchEvaluation.objects.get(pk=busy.pk).status == "running",
        lambda: f"the staff evaluation to start; {staff_worker.log.read_text()[-3000:]}",
    )

    ada = Client()
    ada.force_login(get_user_model().objects.create_user("ada", password="pw"))
    ada.post(
        "/problems/new", {"device": "cpu", "code": RELU.format(scale=2.0), "name": "relu2"}, HTTP_HX_REQUEST="true"
    )
    wait_for(
        lambda: Problem.objects.filter(name="relu2").exists(),
        lambda: f"the upload to be validated; {users_worker.log.read_text()[-3000:]}",
    )
    busy.refresh_from_db()
    waiting.refresh_from_db()
    assert busy.status == "running" and waiting.status == "queued", "the staff jobs were still there all along"
    assert queues.waiting(waiting.job_id) == queues.Waiting(0, "staff-cpu")
    for evaluation in (busy, waiting):
        client.post(f"/staff/evaluations/{evaluation.pk}/stop")
