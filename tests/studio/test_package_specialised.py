"""A version specialised to the problem's shapes (issue 22): its verdict panel and the runs list say so beside the
verdict, and its download is refused with that sentence until the user asks for a specialised package, as
`sandbox package --allow-specialized`; asked for, a real worker builds it and its notes say it."""

from html import escape

import django_rq
import pytest
from django.contrib.auth import get_user_model

from agent.heuristic.analyze import analyze
from agent.heuristic.codegen import workspace_files
from agent.heuristic.plan import make_plan
from sandbox import Verdict
from studio import actions, queues
from studio.models import KernelVersion, Problem, Run

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
SENTENCE = "specialised to the problem's shapes (fails at (8, 256))"
SHOWN, SHOWN_FIRST = escape(SENTENCE), escape(SENTENCE.capitalize())  # as pages write it (Django escapes quotes)


@pytest.fixture
def version(client, tmp_path, settings):
    """The best version of a finished run, whose verdict says it failed at half the problem's batch."""
    settings.KS_PACKAGES_DIR = tmp_path / "packages"
    owner = get_user_model().objects.create_user("ada", password="pw")
    client.force_login(owner)
    django_rq.get_queue(queues.queue_name("package", "cpu")).empty()
    problem_path = tmp_path / "sigmoid.py"
    problem_path.write_text(SOURCE)
    files = workspace_files(make_plan(analyze(str(problem_path))), "cpu", SOURCE)
    problem = Problem.objects.create(owner=owner, name="sigmoid", source=SOURCE, sha256="0" * 64, device="cpu")
    run = Run.objects.create(owner=owner, problem=problem, status="succeeded", max_turns=7)
    verdict = Verdict(
        status="ok",
        correct=True,
        runtime_ms=0.01,
        eager_ms=0.02,
        reward=2,
        speedup_vs_eager=2.0,
        device="cpu",
        shapes_checked=["(16, 256)", "(8, 256)"],
        shape_general=False,
        failing_shape="(8, 256)",
        shape_failure="runtime_error: expected 4096 elements",
    )
    actions.record_version(run.pk, files, verdict.to_json())
    return KernelVersion.objects.get(pk=Run.objects.get(pk=run.pk).best_version_id)


def test_the_version_page_and_the_runs_list_say_the_version_is_specialised(client, version):
    assert SHOWN in client.get("/runs/").content.decode()
    assert SHOWN_FIRST in client.get(f"/versions/{version.pk}/edit").content.decode()
    assert SHOWN_FIRST in client.get(f"/runs/{version.run_id}/summary").content.decode()


def test_its_download_is_refused_with_the_sentence_and_nothing_is_queued(client, version):
    refused = client.post(f"/versions/{version.pk}/package", HTTP_HX_REQUEST="true").content.decode()
    assert f"Not packaged: this version is {SHOWN}" in refused
    assert 'name="allow_specialized"' in refused and "building the package" not in refused
    assert django_rq.get_queue(queues.queue_name("package", "cpu")).count == 0
    version.refresh_from_db()
    assert not version.package and not version.package_error


def test_asked_for_a_specialised_package_a_worker_builds_it_and_its_notes_say_so(
    client, version, drain_queue, settings
):
    started = client.post(f"/versions/{version.pk}/package", {"allow_specialized": "on"}, HTTP_HX_REQUEST="true")
    assert b"building the package on a worker" in started.content
    drain_queue(KS_PACKAGES_DIR=str(settings.KS_PACKAGES_DIR))
    version.refresh_from_db()
    assert version.package, version.package_error
    assert version.package["specialised"] == SENTENCE
    assert any("only accepts the problem's shapes" in note and "(8, 256)" in note for note in version.package["notes"])
    links = client.get(f"/versions/{version.pk}/package", HTTP_HX_REQUEST="true").content.decode()
    assert escape("only accepts the problem's shapes") in links
    download = client.get(f"/versions/{version.pk}/package/{version.package['sdist']}")
    assert download.status_code == 200


def test_a_package_built_before_the_rule_is_downloaded_only_when_asked(client, version, settings):
    folder = settings.KS_PACKAGES_DIR / str(version.pk)
    folder.mkdir(parents=True)
    (folder / "ks-old.tar.gz").write_bytes(b"\x1f\x8b")
    KernelVersion.objects.filter(pk=version.pk).update(package={"sdist": "ks-old.tar.gz", "wheel": None, "notes": []})
    refused = client.get(f"/versions/{version.pk}/package/ks-old.tar.gz")
    assert refused.status_code == 409 and SENTENCE in refused.content.decode()
    assert client.get(f"/versions/{version.pk}/package/ks-old.tar.gz?allow_specialized=1").status_code == 200
