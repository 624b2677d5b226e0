"""A running KernelBench evaluation's page says where it is: problems done of all, the current problem, the time
spent and the time left at the pace so far."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from studio.benchmarks import progress_of
from studio.models import BenchEvaluation
from studio.templatetags.durations import duration

pytestmark = pytest.mark.django_db


def running(user, done, total, started_ago_s, current="level1/3_Matmul"):
    return BenchEvaluation.objects.create(
        created_by=user,
        status=BenchEvaluation.Status.RUNNING,
        started_at=timezone.now() - timedelta(seconds=started_ago_s),
        progress={"done": done, "total": total, "correct": done, "current": current},
    )


def test_the_time_left_extrapolates_the_pace_so_far(client):
    user = get_user_model().objects.create_user("root", password="pw", is_staff=True)
    evaluation = running(user, 2, 10, 120)
    progress = progress_of(evaluation, now=evaluation.started_at + timedelta(seconds=120))
    assert (progress.done, progress.total, progress.percent, progress.current) == (2, 10, 20, "level1/3_Matmul")
    assert progress.elapsed_s == pytest.approx(120) and progress.eta_s == pytest.approx(480)


def test_the_page_shows_the_current_problem_elapsed_and_eta(client):
    user = get_user_model().objects.create_user("root", password="pw", is_staff=True)
    client.force_login(user)
    evaluation = running(user, 3, 12, 300)
    page = client.get(f"/staff/evaluations/{evaluation.pk}", HTTP_HX_REQUEST="true").content.decode()
    assert "3 of 12 problems done" in page and '<strong class="current-problem">level1/3_Matmul</strong>' in page
    assert "elapsed 5 min 0" in page and "about 15 min 0" in page and 'aria-valuenow="25"' in page


def test_before_the_first_result_the_time_left_is_not_guessed(client):
    user = get_user_model().objects.create_user("root", password="pw", is_staff=True)
    evaluation = running(user, 0, 5, 30)
    assert progress_of(evaluation).eta_s is None and progress_of(evaluation).elapsed_s >= 30


def test_a_finished_evaluation_shows_no_current_problem_nor_time_left(client):
    user = get_user_model().objects.create_user("root", password="pw", is_staff=True)
    evaluation = running(user, 5, 5, 60)
    evaluation.status, evaluation.finished_at = (
        BenchEvaluation.Status.DONE,
        evaluation.started_at + timedelta(seconds=50),
    )
    progress = progress_of(evaluation)
    assert progress.current == "" and progress.eta_s is None and progress.elapsed_s == pytest.approx(50)


def test_durations_read_like_people_write_them():
    assert [duration(s) for s in (None, 45, 192, 7500)] == ["–", "45 s", "3 min 12 s", "2 h 05 min"]
