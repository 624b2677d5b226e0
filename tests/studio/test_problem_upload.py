"""Problem uploads: validated by the sandbox on a real RQ worker; stored only when valid, with the reason otherwise."""

import django_rq
import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile

from studio.models import Problem

pytestmark = pytest.mark.django_db(transaction=True)

VALID = """
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
NO_GET_INPUTS = "import torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n        return x\n"


@pytest.fixture
def client_of(client):
    user = get_user_model().objects.create_user("ada", password="pw")
    client.force_login(user)
    django_rq.get_queue("cpu").empty()
    return client


def upload(client, **data):
    return client.post("/problems/new", {"device": "cpu", **data}, HTTP_HX_REQUEST="true")


def job_id_of(response):
    text = response.content.decode()
    return text.split("/problems/validation/")[1].split('"')[0]


def test_a_valid_upload_is_validated_on_a_worker_and_stored(client_of, drain_queue):
    response = upload(client_of, file=SimpleUploadedFile("tanh2.py", VALID.encode()))
    assert response.status_code == 200 and Problem.objects.count() == 0
    job_id = job_id_of(response)
    drain_queue(KS_VALIDATE_TIMEOUT="60")
    status = client_of.get(f"/problems/validation/{job_id}", HTTP_HX_REQUEST="true")
    problem = Problem.objects.get()
    assert status["HX-Redirect"] == f"/problems/{problem.pk}"
    assert problem.name == "tanh2" and problem.spec["inputs"] == [{"shape": [64, 32], "dtype": "float32"}]
    page = client_of.get(f"/problems/{problem.pk}")
    assert b"torch.tanh(x) * 2" in page.content


def test_an_invalid_upload_says_why_and_stores_nothing(client_of, drain_queue):
    job_id = job_id_of(upload(client_of, code=NO_GET_INPUTS, name="broken"))
    drain_queue(KS_VALIDATE_TIMEOUT="60")
    status = client_of.get(f"/problems/validation/{job_id}", HTTP_HX_REQUEST="true")
    assert b"defines no get_inputs" in status.content and b"Nothing was stored" in status.content
    assert Problem.objects.count() == 0


def test_a_non_utf8_file_is_refused_at_once(client_of):
    response = upload(client_of, file=SimpleUploadedFile("bad.py", b"x = '\xff\xfe'\n"))
    assert response.status_code == 400 and b"not UTF-8" in response.content
    assert django_rq.get_queue("cpu").count == 0


def test_an_upload_over_the_size_limit_is_refused(client_of, settings):
    settings.KS_UPLOAD_LIMIT_BYTES = 100
    response = upload(client_of, file=SimpleUploadedFile("big.py", b"#" * 500))
    assert response.status_code == 400 and b"the limit is 100 bytes" in response.content
    assert django_rq.get_queue("cpu").count == 0


def test_users_see_only_their_own_problems(client_of):
    other = get_user_model().objects.create_user("eve", password="pw")
    theirs = Problem.objects.create(owner=other, name="secret-problem", source="#", sha256="0" * 64)
    assert client_of.get(f"/problems/{theirs.pk}").status_code == 404
    assert b"secret-problem" not in client_of.get("/").content


def test_another_users_validation_job_is_not_visible(client_of, client):
    job_id = job_id_of(upload(client_of, code=VALID, name="mine"))
    other = get_user_model().objects.create_user("eve", password="pw")
    client.force_login(other)
    assert client.get(f"/problems/validation/{job_id}").status_code == 404
