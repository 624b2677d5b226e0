"""Forms answer with each error beside its field (htmx swaps 4xx answers in), targets default to what the
deployment can run, and the admin holds problems, runs and versions."""

import django_rq
import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile

from studio import devices

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def user_client(client):
    client.force_login(get_user_model().objects.create_user("ada", password="pw"))
    django_rq.get_queue("cpu").empty()
    return client


def test_an_oversized_file_is_refused_beside_the_file_field(user_client, settings):
    settings.KS_UPLOAD_LIMIT_BYTES = 1 << 20
    big = SimpleUploadedFile("big.py", b"#" * (3 << 20))
    response = user_client.post("/problems/new", {"device": "cpu", "file": big}, HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert response.status_code == 400 and '<form class="panel upload-form"' in page
    assert 'id="id_file-error" role="alert">The file is 3.0 MB; the limit is 1.0 MB.</div>' in page


def test_neither_file_nor_code_is_said_at_the_top_of_the_form(user_client):
    response = user_client.post("/problems/new", {"device": "cpu"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 400
    assert b'<div class="form-error" role="alert">Upload a .py file or paste' in response.content


def test_the_pages_tell_htmx_to_swap_error_answers():
    from django.template.loader import render_to_string

    head = render_to_string("base.html")
    assert '{"code": "4..", "swap": true, "error": false}' in head


def test_a_run_form_error_stays_beside_its_field(user_client):
    from studio.models import Problem

    problem = Problem.objects.create(owner=get_user_model().objects.get(), name="p", source="#", sha256="0" * 64)
    response = user_client.post(
        f"/problems/{problem.pk}/runs", {"policy": "heuristic", "device": "cpu", "max_turns": 9999}
    )
    assert response.status_code == 400
    assert (
        b'<div class="field-error" role="alert">Ensure this value is less than or equal to 500.</div>'
        in response.content
    )


def test_forms_default_to_the_cpu_on_a_host_without_a_gpu(user_client, monkeypatch):
    monkeypatch.setattr(devices, "gpu_on_this_host", lambda: False)
    page = user_client.get("/problems/new").content.decode()
    assert '<option value="cpu" selected>' in page and devices.default_device() == "cpu"
    monkeypatch.setattr(devices, "gpu_on_this_host", lambda: True)
    assert '<option value="cuda" selected>' in user_client.get("/problems/new").content.decode()


def test_an_operator_can_pin_the_default_target(settings):
    settings.KS_DEFAULT_DEVICE = "cuda"
    assert devices.default_device() == "cuda"


def test_problems_runs_and_versions_are_in_the_admin(client):
    client.force_login(get_user_model().objects.create_superuser("root", password="pw"))
    index = client.get("/admin/").content.decode()
    for path in (
        "/admin/studio/problem/",
        "/admin/studio/run/",
        "/admin/studio/kernelversion/",
        "/admin/studio/evaluation/",
        "/admin/studio/synthesisrun/",
    ):
        assert path in index
        assert client.get(path).status_code == 200
