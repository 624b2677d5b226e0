"""The editor shows the version's verdict before an edit and the edit's beside it after, and offers a diff against the
version as opened or any other version of the run."""

import pytest
from django.contrib.auth import get_user_model

from sandbox import Verdict
from studio import actions
from studio.models import Evaluation, Problem, Run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def run(client):
    owner = get_user_model().objects.create_user("ada", password="pw")
    client.force_login(owner)
    problem = Problem.objects.create(owner=owner, name="chain", source="#", sha256="0" * 64, device="cpu")
    return Run.objects.create(owner=owner, problem=problem, status="succeeded")


def ok(runtime_ms, reward):
    return Verdict(
        status="ok",
        correct=True,
        runtime_ms=runtime_ms,
        eager_ms=2.0,
        compiled_ms=2.0,
        reward=reward,
        speedup_vs_eager=2.0 / runtime_ms,
        speedup_vs_compiled=2.0 / runtime_ms,
    ).to_json()


def test_the_editor_opens_with_the_versions_verdict_and_its_diff_choices(client, run):
    agent = actions.record_version(run.pk, {"kernels/k.cpp": "// agent"}, ok(1.0, 3))
    human = actions.record_version(run.pk, {"kernels/k.cpp": "// human"}, ok(1.6, 3), parent=agent, author="ada")
    page = client.get(f"/versions/{human.pk}/edit").content.decode()
    assert page.index('id="verdict-before"') < page.index('id="verdict-after"') < page.index('id="editor"')
    assert f"Before: version #{human.pk}" in page and "1.25x faster than eager" in page
    assert '<option value="opened">this version as opened</option>' in page
    assert f'<option value="{agent.pk}" data-agent="1">#{agent.pk} · agent · reward 3</option>' in page


def test_an_edits_verdict_is_rendered_for_the_editor_to_show_beside(client, run):
    version = actions.record_version(run.pk, {"kernels/k.cpp": "//"}, ok(1.0, 3))
    evaluation = actions.queue_evaluation(run.owner, version, {"kernels/k.cpp": "// faster"}, lambda pk: "job")
    waiting = client.get(f"/evaluations/{evaluation.pk}/verdict").content.decode()
    assert 'id="verdict-after"' in waiting and "Evaluating on a worker" in waiting
    actions.set_evaluation(evaluation.pk, Evaluation.Status.DONE, verdict=ok(0.5, 3))
    done = client.get(f"/evaluations/{evaluation.pk}/verdict").content.decode()
    assert f"After: your edit (evaluation #{evaluation.pk})" in done and "4.00x faster than eager" in done
    actions.set_evaluation(evaluation.pk, Evaluation.Status.FAILED, error="its worker w1 stopped answering")
    failed = client.get(f"/evaluations/{evaluation.pk}/verdict").content.decode()
    assert "The worker running this (w1) stopped answering" in failed
    # The run's stream carries the sentence too: the editor's status line and the run page's card show it.
    streamed = run.events.filter(kind="evaluation").order_by("seq").last().payload
    assert streamed["failure"].startswith("The worker running this (w1) stopped answering")
    assert streamed["error"] == "its worker w1 stopped answering"
