"""The run page: the turn stream leads while a run is live, the verdict once it ended; failures read as sentences to
act on; no button that cannot act."""

import re

import django_rq
import pytest
from django.contrib.auth import get_user_model

from sandbox import Verdict
from studio import actions
from studio.models import KernelVersion, Problem, Run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def owner(client):
    user = get_user_model().objects.create_user("ada", password="pw")
    client.force_login(user)
    django_rq.get_queue("cpu").empty()
    return user


def a_run(owner, status="succeeded", **fields):
    problem = Problem.objects.create(owner=owner, name="chain", source="#", sha256="0" * 64, device="cpu")
    return Run.objects.create(owner=owner, problem=problem, status=status, **fields)


def verdict(**fields):
    base = {
        "status": "ok",
        "correct": True,
        "runtime_ms": 6.5861,
        "eager_ms": 1.55,
        "compiled_ms": 1.89,
        "speedup_vs_eager": 1.55 / 6.5861,
        "speedup_vs_compiled": 1.89 / 6.5861,
        "reward": 1,
        "trials": [{"ok": True}] * 5,
        "max_abs_error": 1e-6,
        "timing": {
            "candidate": {"median_ms": 6.5861, "spread_pct": 103.0},
            "eager": {"median_ms": 1.55, "spread_pct": 5.0},
        },
    }
    return Verdict(**{**base, **fields}).to_json()


def test_a_finished_run_opens_with_its_verdict_and_speedup_bars(client, owner):
    run = a_run(owner)
    version = actions.record_version(run.pk, {"kernels/k.cpp": "//"}, verdict())
    page = client.get(f"/runs/{run.pk}").content.decode()
    assert 'class="run-layout done"' in page
    # The answer comes before the kernels, the versions and the turns.
    assert page.index('id="run-verdict"') < page.index('id="kernels"') < page.index('id="timeline"')
    assert "4.25x slower than eager" in page and "3.48x slower than torch.compile" in page
    assert "5 of 5 trials correct" in page and "± 103% spread" in page
    assert re.search(r'<g class="bar slower default" data-baseline="eager"', page)
    assert "reward 1" in page and "the CUDA Agent paper's schedule" in page
    assert f"Best version #{version.pk}" in page and "Run again" in page and 'id="run-cancel"' not in page


def test_a_live_run_leads_with_its_turns_and_offers_only_cancel(client, owner):
    run = a_run(owner, status="running")
    page = client.get(f"/runs/{run.pk}").content.decode()
    assert 'class="run-layout live"' in page and 'id="run-verdict"' not in page
    assert 'id="run-cancel"' in page and "Run again" not in page
    # Panels without content yet are hidden, not shown empty.
    assert re.search(r'<section id="kernels"[^>]*hidden>', page) and re.search(
        r'<section id="versions"[^>]*hidden>', page
    )


def test_a_worker_killed_for_memory_reads_as_a_sentence_with_the_details_folded(client, owner):
    raw = "its job failed: JobStatus.FAILED: Work-horse terminated unexpectedly; waitpid returned 9"
    run = a_run(owner, status="failed", error=raw)
    page = client.get(f"/runs/{run.pk}").content.decode()
    assert "The worker&#x27;s process was killed (SIGKILL), most often because it ran out of memory." in page
    assert '<details class="failure-details"><summary>details</summary>' in page and "waitpid returned 9" in page


def test_the_summary_is_served_alone_for_the_page_to_refresh(client, owner):
    run = a_run(
        owner,
        status="failed",
        error="no correct solution (max_turns)",
        trajectory={"verdict": verdict(status="incorrect", correct=False, reward=-1)},
    )
    part = client.get(f"/runs/{run.pk}/summary").content.decode()
    assert "The agent found no correct kernel within its turns." in part
    assert "Not correct: the kernel gave wrong outputs." in part and "<html" not in part


def test_the_versions_json_carries_each_versions_verdict_fields(client, owner):
    run = a_run(owner)
    actions.record_version(run.pk, {"kernels/k.cpp": "//"}, verdict())
    [row] = client.get(f"/runs/{run.pk}/versions.json").json()["versions"]
    assert row["eager_ms"] == 1.55 and row["best"] is True
    assert KernelVersion.objects.get().run_id == run.pk
