"""My problems: the latest run's status, the best speedup of any correct version, filters, run again with the latest
run's settings (or the defaults), delete; nobody else's problems."""

import re

import django_rq
import pytest
from django.contrib.auth import get_user_model

from sandbox import Verdict
from studio import actions
from studio.models import Problem, Run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def owner(client):
    user = get_user_model().objects.create_user("ada", password="pw")
    client.force_login(user)
    django_rq.get_queue("cpu").empty()
    django_rq.get_queue("gpu").empty()
    return user


def a_problem(owner, name, device="cpu"):
    return Problem.objects.create(owner=owner, name=name, source="#", sha256="0" * 64, device=device)


def a_run(owner, problem, status="succeeded", speedups=(), **fields):
    """A run of PROBLEM with a version per speedup (None: an incorrect version whose ratio must not count)."""
    run = Run.objects.create(owner=owner, problem=problem, status=status, **fields)
    for speedup in speedups:
        correct = speedup is not None
        ratio = speedup if correct else 9.0
        verdict = Verdict(
            status="ok" if correct else "incorrect",
            correct=correct,
            runtime_ms=1.0,
            eager_ms=ratio,
            reward=3 if correct else -1,
            speedup_vs_eager=ratio,
        )
        actions.record_version(run.pk, {"kernels/k.cpp": "//"}, verdict.to_json())
    return run


def row(page, problem):
    return re.search(rf'<tr id="problem-row-{problem.pk}">(.*?)</tr>', page, re.DOTALL).group(1)


def test_each_problem_shows_its_latest_runs_status_and_its_best_correct_speedup(client, owner):
    chain, softmax, fresh = a_problem(owner, "chain"), a_problem(owner, "softmax"), a_problem(owner, "fresh")
    a_run(owner, chain, speedups=[1.5, None])
    a_run(owner, chain, speedups=[2.25])
    latest = a_run(owner, chain, status="failed", error="no correct solution (max_turns)")
    a_run(owner, softmax, status="running")
    other = get_user_model().objects.create_user("eve", password="pw")
    a_run(other, a_problem(other, "secret"), speedups=[5.0])
    page = client.get("/problems/").content.decode()
    assert "secret" not in page and "My problems" in page
    assert f'href="/runs/{latest.pk}" class="status-failed">failed<' in row(page, chain)
    assert ">2.25x<" in row(page, chain) and "9.00x" not in page  # the incorrect version's ratio is no speedup
    # A live latest run offers no Run again; a problem never run offers to start one.
    assert ">running<" in row(page, softmax) and "Run again" not in row(page, softmax)
    assert "never run" in row(page, fresh) and ">Start a run<" in row(page, fresh)


def test_problems_filter_by_name_target_and_latest_status(client, owner):
    chain, softmax = a_problem(owner, "chain"), a_problem(owner, "softmax", device="cuda")
    fresh = a_problem(owner, "fresh_gemm")
    a_run(owner, chain, status="failed")
    a_run(owner, softmax, speedups=[1.2])

    def names(query):
        page = client.get("/problems/" + query).content.decode()
        return {p.name for p in (chain, softmax, fresh) if f'id="problem-row-{p.pk}"' in page}

    assert names("?name=SOFT") == {"softmax"}
    assert names("?device=cpu") == {"chain", "fresh_gemm"}
    assert names("?status=failed") == {"chain"} and names("?status=none") == {"fresh_gemm"}
    assert "No problem matches" in client.get("/problems/?name=nothing").content.decode()


def test_run_again_repeats_the_latest_runs_policy_target_and_turns(client, owner):
    problem = a_problem(owner, "chain", device="cuda")
    a_run(owner, problem, max_turns=5, device="cuda")
    last = a_run(owner, problem, status="failed", max_turns=9, device="cpu")
    response = client.post(f"/problems/{problem.pk}/run-again")
    again = Run.objects.order_by("-created_at").first()
    assert response["Location"] == f"/runs/{again.pk}" and again.pk != last.pk
    assert (again.status, again.device, again.max_turns, again.policy) == ("queued", "cpu", 9, last.policy)
    assert django_rq.get_queue("cpu").job_ids == [again.job_id]


def test_a_problem_never_run_starts_with_the_run_forms_defaults_on_its_target(client, owner):
    problem = a_problem(owner, "gemm", device="cuda")
    client.post(f"/problems/{problem.pk}/run-again")
    run = Run.objects.get()
    assert (run.device, run.max_turns, run.policy) == ("cuda", 60, "heuristic")
    assert django_rq.get_queue("gpu").job_ids == [run.job_id]


def test_nobody_runs_another_users_problem(client, owner):
    other = get_user_model().objects.create_user("eve", password="pw")
    problem = a_problem(other, "secret")
    assert client.post(f"/problems/{problem.pk}/run-again").status_code == 404
    assert not Run.objects.exists()
