"""My runs and my problems: status, best speedup, filters, run again, delete with the versions' package files."""

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


def a_problem(owner, name="chain"):
    return Problem.objects.create(owner=owner, name=name, source="#", sha256="0" * 64, device="cpu")


def a_finished_run(owner, problem, speedup):
    run = Run.objects.create(owner=owner, problem=problem, status="succeeded", max_turns=7)
    actions.record_version(
        run.pk,
        {"kernels/k.cpp": "//"},
        Verdict(
            status="ok",
            correct=True,
            runtime_ms=1.0,
            eager_ms=speedup,
            compiled_ms=speedup,
            reward=3,
            speedup_vs_eager=speedup,
            speedup_vs_compiled=speedup,
        ).to_json(),
    )
    return run


def test_my_runs_shows_status_and_best_speedup_and_filters(client, owner):
    chain, softmax = a_problem(owner), a_problem(owner, "softmax")
    a_finished_run(owner, chain, 2.5)
    Run.objects.create(owner=owner, problem=softmax, status="failed", error="x")
    other = get_user_model().objects.create_user("eve", password="pw")
    Run.objects.create(owner=other, problem=a_problem(other, "secret"), status="queued")
    page = client.get("/runs/").content.decode()
    assert "2.50x" in page and "softmax" in page and "secret" not in page
    failed = client.get("/runs/?status=failed").content.decode()
    assert "softmax" in failed and "2.50x" not in failed
    assert "No run matches" in client.get("/runs/?problem=nothing").content.decode()


def test_run_again_queues_a_new_run_with_the_same_settings(client, owner):
    run = a_finished_run(owner, a_problem(owner), 2.0)
    response = client.post(f"/runs/{run.pk}/retry")
    again = Run.objects.exclude(pk=run.pk).get()
    assert response["Location"] == f"/runs/{again.pk}"
    assert (again.status, again.max_turns, again.problem_id, again.policy) == ("queued", 7, run.problem_id, run.policy)
    assert django_rq.get_queue("cpu").job_ids == [again.job_id]


def test_deleting_a_run_removes_its_versions_and_their_package_files(client, owner, settings, tmp_path):
    settings.KS_PACKAGES_DIR = tmp_path
    problem = a_problem(owner)
    run, kept = a_finished_run(owner, problem, 2.0), a_finished_run(owner, problem, 3.0)
    version = KernelVersion.objects.get(run=run)
    (tmp_path / str(version.pk)).mkdir()
    (tmp_path / str(version.pk) / "ks-chain.tar.gz").write_bytes(b"x")
    response = client.post(f"/runs/{run.pk}/delete")
    assert response["Location"] == "/runs/"
    assert not Run.objects.filter(pk=run.pk).exists() and not KernelVersion.objects.filter(pk=version.pk).exists()
    assert not (tmp_path / str(version.pk)).exists()
    assert Run.objects.filter(pk=kept.pk).exists() and KernelVersion.objects.filter(run=kept).exists()


def test_deleting_a_queued_run_takes_its_job_off_the_queue(client, owner):
    problem = a_problem(owner)
    client.post(f"/problems/{problem.pk}/runs", {"policy": "heuristic", "device": "cpu", "max_turns": 3})
    run = Run.objects.get()
    assert django_rq.get_queue("cpu").count == 1
    client.post(f"/runs/{run.pk}/delete")
    assert django_rq.get_queue("cpu").count == 0 and not Run.objects.exists()


def test_deleting_a_problem_removes_its_runs_and_versions(client, owner, settings, tmp_path):
    settings.KS_PACKAGES_DIR = tmp_path
    problem = a_problem(owner)
    a_finished_run(owner, problem, 2.0)
    version = KernelVersion.objects.get()
    (tmp_path / str(version.pk)).mkdir()
    assert "chain" in client.get("/problems/").content.decode()
    assert client.post(f"/problems/{problem.pk}/delete")["Location"] == "/problems/"
    assert not Problem.objects.exists() and not Run.objects.exists() and not KernelVersion.objects.exists()
    assert not (tmp_path / str(version.pk)).exists()


def test_nobody_deletes_or_reruns_another_users_run(client, owner):
    other = get_user_model().objects.create_user("eve", password="pw")
    run = a_finished_run(other, a_problem(other), 2.0)
    assert client.post(f"/runs/{run.pk}/delete").status_code == 404
    assert client.post(f"/runs/{run.pk}/retry").status_code == 404
    assert client.post(f"/problems/{run.problem_id}/delete").status_code == 404
    assert Run.objects.filter(pk=run.pk).exists()
