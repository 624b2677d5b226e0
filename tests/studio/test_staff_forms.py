"""Staff launch forms start at what this host can run, and a staff job's failure reads as a sentence to act on with
the raw text folded."""

import pytest
from django.contrib.auth import get_user_model

from studio import devices
from studio.models import SynthesisRun

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client):
    user = get_user_model().objects.create_user("root", password="pw", is_staff=True)
    client.force_login(user)
    return user


@pytest.mark.parametrize("page", ["/staff/evaluations/", "/staff/synthesis/"])
def test_launch_forms_default_to_the_cpu_without_a_gpu_and_to_cuda_with_one(client, staff, monkeypatch, settings, page):
    settings.KS_DEFAULT_DEVICE = ""
    monkeypatch.setattr(devices, "gpu_on_this_host", lambda: False)
    assert '<option value="cpu" selected>' in client.get(page).content.decode()
    monkeypatch.setattr(devices, "gpu_on_this_host", lambda: True)
    assert '<option value="cuda" selected>' in client.get(page).content.decode()


def test_a_synthesis_run_whose_worker_died_says_what_to_do_with_the_details_folded(client, staff):
    raw = "its job failed: Work-horse terminated unexpectedly; waitpid returned 9 (signal 9); "
    run = SynthesisRun.objects.create(created_by=staff, count=4, status=SynthesisRun.Status.FAILED, error=raw)
    page = client.get(f"/staff/synthesis/{run.pk}").content.decode()
    assert "The worker&#x27;s process was killed (SIGKILL), most often because it ran out of memory." in page
    assert '<details class="failure-details"><summary>details</summary>' in page and "waitpid returned 9" in page
