"""Downloads: a verified version's pip-installable package is built on a real worker; the web process only serves it."""

import pytest
from django.contrib.auth import get_user_model

import sandbox
from agent.heuristic.analyze import analyze
from agent.heuristic.codegen import workspace_files
from agent.heuristic.plan import make_plan
from studio.models import KernelVersion, Problem

pytestmark = pytest.mark.django_db(transaction=True)
SOURCE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.sigmoid(x) * 3.0 + 1.0

def get_inputs():
    return [torch.randn(16, 256)]

def get_init_inputs():
    return []
"""


@pytest.fixture
def version(tmp_path, settings):
    settings.KS_PACKAGES_DIR = tmp_path / "packages"
    owner = get_user_model().objects.create_user("ada", password="pw")
    problem_path = tmp_path / "sigmoid.py"
    problem_path.write_text(SOURCE)
    files = workspace_files(make_plan(analyze(str(problem_path))), "cpu", SOURCE)
    workspace = tmp_path / "workspace"
    for rel, text in files.items():
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text(text)
    verdict = sandbox.evaluate(problem_path, workspace, device="cpu", compiled_baseline=False, time_budget_s=0.2)
    assert verdict.status == "ok", verdict.log
    problem = Problem.objects.create(owner=owner, name="sigmoid", source=SOURCE, sha256="0" * 64, device="cpu")
    return KernelVersion.objects.create(problem=problem, files=files, verdict=verdict.to_json())


def test_a_version_is_packaged_on_a_worker_and_downloaded(client, version, drain_queue, settings):
    client.force_login(version.problem.owner)
    started = client.post(f"/versions/{version.pk}/package", HTTP_HX_REQUEST="true")
    assert b"building the package on a worker" in started.content
    drain_queue(KS_PACKAGES_DIR=str(settings.KS_PACKAGES_DIR))
    version.refresh_from_db()
    assert version.package and version.package["sdist"].endswith(".tar.gz"), version.package_error
    links = client.get(f"/versions/{version.pk}/package", HTTP_HX_REQUEST="true").content.decode()
    assert version.package["sdist"] in links and (version.package["wheel"] or "") in links
    download = client.get(f"/versions/{version.pk}/package/{version.package['sdist']}")
    assert download.status_code == 200 and b"".join(download.streaming_content)[:2] == b"\x1f\x8b"
    assert client.get(f"/versions/{version.pk}/package/..%2F..%2Fsettings.py").status_code == 404


def test_another_users_version_cannot_be_packaged_or_downloaded(client, version):
    client.force_login(get_user_model().objects.create_user("eve", password="pw"))
    assert client.post(f"/versions/{version.pk}/package").status_code == 404
    assert client.get(f"/versions/{version.pk}/package/x.tar.gz").status_code == 404
