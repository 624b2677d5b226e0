"""The run page's kernel viewer: vendored Monaco served from our origin, and the versions it shows and diffs."""

import pytest
from django.contrib.auth import get_user_model

from studio.models import KernelVersion, Problem, Run
from studio.vendor import static_path

pytestmark = pytest.mark.django_db


@pytest.fixture
def run():
    owner = get_user_model().objects.create_user("ada", password="pw")
    problem = Problem.objects.create(owner=owner, name="relu", source="#", sha256="0" * 64)
    run = Run.objects.create(owner=owner, problem=problem, status="succeeded")
    first = KernelVersion.objects.create(
        problem=problem,
        run=run,
        files={"kernels/k.cu": "__global__ void a() {}"},
        verdict={"status": "ok", "reward": 1, "runtime_ms": 2.0, "eager_ms": 3.0},
    )
    second = KernelVersion.objects.create(
        problem=problem,
        run=run,
        parent=first,
        files={"kernels/k.cu": "__global__ void b() {}"},
        verdict={"status": "ok", "reward": 2, "runtime_ms": 1.0, "eager_ms": 3.0},
    )
    run.best_version = second
    run.save()
    return run


def test_the_run_page_loads_monaco_from_our_own_origin(client, run):
    client.force_login(run.owner)
    page = client.get(f"/runs/{run.pk}").content.decode()
    assert f"/static/{static_path('monaco-editor')}/loader.js" in page
    assert "js/kernels.js" in page and f'data-versions="/runs/{run.pk}/versions.json"' in page
    assert "https://" not in page.split("<main>")[0]  # nothing from a CDN


def test_versions_come_oldest_first_with_files_and_the_best_marked(client, run):
    client.force_login(run.owner)
    versions = client.get(f"/runs/{run.pk}/versions.json").json()["versions"]
    assert [v["reward"] for v in versions] == [1, 2]
    assert versions[1]["best"] and not versions[0]["best"]
    assert versions[0]["files"]["kernels/k.cu"] == "__global__ void a() {}"
    assert versions[1]["eager_ms"] == 3.0


def test_another_user_cannot_read_the_versions(client, run):
    client.force_login(get_user_model().objects.create_user("eve", password="pw"))
    assert client.get(f"/runs/{run.pk}/versions.json").status_code == 404
