"""KernelBench evaluations from the staff area: launched as a job a real RQ worker runs, progress and metrics
stored, a leaderboard with the paper's labelled reference row, a drill-down to each episode, staff only."""

import json

import django_rq
import pytest
from django.contrib.auth import get_user_model

from studio.models import BenchEvaluation

pytestmark = pytest.mark.django_db(transaction=True)

RELU = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2.0

def get_inputs():
    return [torch.randn(64, 256)]

def get_init_inputs():
    return []
"""
FAST = "--no-compiled --max-turns 8 --sandbox-option time_budget_s=0.2 --sandbox-option warmup_s=0.05"


@pytest.fixture
def staff(client):
    user = get_user_model().objects.create_user("root", password="pw", is_staff=True)
    client.force_login(user)
    for name in ("staff-cpu", "staff-gpu"):
        django_rq.get_queue(name).empty()
    return user


@pytest.fixture
def problems(tmp_path):
    path = tmp_path / "problems.jsonl"
    rows = [
        {"level": 1, "problem_id": 1, "name": "1_Scale_ReLU", "code": RELU},
        {"level": 2, "problem_id": 1, "name": "1_Other", "code": RELU.replace("* 2.0", "* 3.0")},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_an_evaluation_runs_on_a_real_worker_stores_metrics_and_shows_on_the_leaderboard(
    client, staff, problems, tmp_path, drain_queue
):
    response = client.post("/staff/evaluations/", {"levels": ["1"], "policy": "heuristic", "device": "cpu", "limit": 1})
    evaluation = BenchEvaluation.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/staff/evaluations/{evaluation.pk}"
    assert evaluation.status == "queued" and evaluation.job_id and evaluation.levels == "1"
    assert django_rq.get_queue("staff-cpu").fetch_job(evaluation.job_id) is not None
    log = drain_queue(
        "staff-cpu",
        KS_KERNELBENCH_PROBLEMS=str(problems),
        KS_EVALUATIONS_DIR=str(tmp_path / "evals"),
        KS_EVALUATION_ARGS=FAST,
        KS_CPU_THREADS="1",
        KS_SANDBOX_MEMORY_MB="4096",
    )
    evaluation.refresh_from_db()
    assert evaluation.status == "done", evaluation.error + log[-3000:]
    assert evaluation.progress == {"done": 1, "total": 1, "correct": 1, "current": ""}
    overall = evaluation.metrics["arms"]["strict"]["overall"]
    assert overall["problems"] == 1 and overall["correct_rate"] == 1.0
    assert evaluation.folder.startswith(str(tmp_path / "evals"))

    detail = client.get(f"/staff/evaluations/{evaluation.pk}").content.decode()
    assert "level1/1_Scale_ReLU" in detail and "1 of 1 problems done" in detail
    board = client.get("/staff/evaluations/leaderboard").content.decode()
    assert board.count(f"#{evaluation.pk} heuristic") == 2 and "100.0%" in board  # level 1 and overall
    assert "<em>CUDA Agent (paper, published; not measured here)</em>" in board and "<em>92.0%</em>" in board

    episode = client.get(
        f"/staff/evaluations/{evaluation.pk}/episode", {"arm": "strict", "key": "level1/1_Scale_ReLU"}
    ).content.decode()
    assert "Turn 1" in episode and "submit" in episode and "correct True" in episode


def test_the_leaderboard_without_evaluations_still_shows_the_labelled_reference(client, staff):
    board = client.get("/staff/evaluations/leaderboard").content.decode()
    assert "CUDA Agent (paper, published; not measured here)" in board and "<em>98.8%</em>" in board


def test_it_rejects_an_evaluation_without_levels_and_stores_nothing(client, staff):
    response = client.post("/staff/evaluations/", {"policy": "heuristic", "device": "cpu", "limit": 0})
    assert response.status_code == 400
    assert "This field is required" in response.content.decode()
    assert "Ensure this value is greater than or equal to 1" in response.content.decode()
    assert not BenchEvaluation.objects.exists() and django_rq.get_queue("staff-cpu").count == 0


def test_a_gpu_evaluation_is_queued_on_the_staff_gpu_queue(client, staff):
    client.post("/staff/evaluations/", {"levels": ["1", "3"], "policy": "heuristic", "device": "cuda"})
    evaluation = BenchEvaluation.objects.get()
    assert evaluation.levels == "1,3" and evaluation.limit is None
    assert django_rq.get_queue("staff-gpu").fetch_job(evaluation.job_id) is not None
    django_rq.get_queue("staff-gpu").empty()


def test_a_missing_episode_is_not_found(client, staff):
    evaluation = BenchEvaluation.objects.create(created_by=staff, folder="/nonexistent")
    assert client.get(f"/staff/evaluations/{evaluation.pk}/episode", {"arm": "strict", "key": "x"}).status_code == 404


def test_evaluation_pages_are_refused_to_users_who_are_not_staff(client):
    user = get_user_model().objects.create_user("ada", password="pw")
    client.force_login(user)
    evaluation = BenchEvaluation.objects.create(created_by=user)
    for url in (
        "/staff/evaluations/",
        "/staff/evaluations/leaderboard",
        f"/staff/evaluations/{evaluation.pk}",
        f"/staff/evaluations/{evaluation.pk}/episode",
    ):
        assert client.get(url).status_code == 403, url
    assert (
        client.post("/staff/evaluations/", {"levels": ["1"], "policy": "heuristic", "device": "cpu"}).status_code == 403
    )
    assert BenchEvaluation.objects.count() == 1


def test_a_comparison_runs_every_problem_under_two_sandbox_settings_with_a_leaderboard_row_each(
    client, staff, problems, tmp_path, drain_queue
):
    client.post(
        "/staff/evaluations/",
        {
            "levels": ["1"],
            "policy": "heuristic",
            "device": "cpu",
            "limit": 1,
            "sandbox": "strict",
            "compare_with": "relaxed",
        },
    )
    evaluation = BenchEvaluation.objects.get()
    assert evaluation.sandbox == "strict,relaxed"
    log = drain_queue(
        "staff-cpu",
        KS_KERNELBENCH_PROBLEMS=str(problems),
        KS_EVALUATIONS_DIR=str(tmp_path / "evals"),
        KS_EVALUATION_ARGS=FAST,
        KS_CPU_THREADS="1",
        KS_SANDBOX_MEMORY_MB="4096",
    )
    evaluation.refresh_from_db()
    assert evaluation.status == "done", evaluation.error + log[-3000:]
    assert set(evaluation.metrics["arms"]) == {"strict", "relaxed"}
    detail = client.get(f"/staff/evaluations/{evaluation.pk}").content.decode()
    assert "<td>strict</td>" in detail and "<td>relaxed</td>" in detail
    board = client.get("/staff/evaluations/leaderboard")
    arms = [
        row["arm"]
        for scope, rows in board.context["tables"]
        if scope == "overall"
        for row in rows
        if not row["reference"]
    ]
    assert sorted(arms) == ["relaxed", "strict"]


def test_it_refuses_to_compare_a_setting_with_itself(client, staff):
    response = client.post(
        "/staff/evaluations/",
        {"levels": ["1"], "policy": "heuristic", "device": "cpu", "sandbox": "relaxed", "compare_with": "relaxed"},
    )
    assert response.status_code == 400 and "Compare two different sandbox settings" in response.content.decode()
    assert not BenchEvaluation.objects.exists()
