"""Task-synthesis runs from the staff area: launched as a job a real RQ worker runs, progress from the run's files,
the dataset browsed with filters, a task viewed read-only and made a problem through the upload path."""

import django_rq
import pytest
from django.contrib.auth import get_user_model

from studio.models import Problem, SynthesisRun

pytestmark = pytest.mark.django_db(transaction=True)

TINY = (
    "--profile tiny --min-ms 0 --max-ms 10000 --max-depth 2 --classes activation,elementwise,binary "
    "--time-budget 0.05 --max-attempts 8"
)


@pytest.fixture
def staff(client):
    user = get_user_model().objects.create_user("root", password="pw", is_staff=True)
    client.force_login(user)
    for name in ("cpu", "staff-cpu", "staff-gpu"):
        django_rq.get_queue(name).empty()
    return user


def test_a_synthesis_run_keeps_tasks_that_can_be_browsed_viewed_and_made_problems(client, staff, tmp_path, drain_queue):
    response = client.post("/staff/synthesis/", {"count": 1, "device": "cpu", "workers": 1})
    run = SynthesisRun.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/staff/synthesis/{run.pk}"
    assert django_rq.get_queue("staff-cpu").fetch_job(run.job_id) is not None
    log = drain_queue(
        "staff-cpu",
        KS_SYNTHESIS_DIR=str(tmp_path / "synthesis"),
        KS_SYNTHESIS_ARGS=TINY,
        KS_CPU_THREADS="1",
        KS_SANDBOX_MEMORY_MB="4096",
    )
    run.refresh_from_db()
    assert run.status == "done", run.error + log[-3000:]
    assert run.summary["kept"] == 1 and run.summary["attempts"] >= 1
    page = client.get(f"/staff/synthesis/{run.pk}").content.decode()
    assert "kept 1 of 1" in page and "browse the dataset" in page
    for chart in ("operator classes", "fused operators", "eager time"):  # the kept set's distribution, drawn
        assert f'aria-label="{chart}"' in page, chart

    listing = client.get(f"/staff/synthesis/{run.pk}/tasks").context
    (task,) = listing["tasks"]
    cls = task.op_classes[0]
    assert len(client.get(f"/staff/synthesis/{run.pk}/tasks", {"op_class": cls}).context["tasks"]) == 1
    assert client.get(f"/staff/synthesis/{run.pk}/tasks", {"op_class": "no-such-class"}).context["tasks"] == []
    assert client.get(f"/staff/synthesis/{run.pk}/tasks", {"depth": task.fusion_depth}).context["tasks"] == [task]
    assert client.get(f"/staff/synthesis/{run.pk}/tasks", {"min_ms": task.eager_ms + 1}).context["tasks"] == []
    bad = client.get(f"/staff/synthesis/{run.pk}/tasks", {"depth": "nine"})
    assert bad.status_code == 400 and "Enter a whole number" in bad.content.decode()

    view = client.get(f"/staff/synthesis/{run.pk}/tasks/{task.task_id}").content.decode()
    assert 'id="task-code"' in view and "class Model" in view and "js/task.js" in view and "Use as problem" in view

    assert not Problem.objects.exists()  # validated on a worker, never here
    use = client.post(f"/staff/synthesis/{run.pk}/tasks/{task.task_id}/use")
    assert use.status_code == 200 and "Validating on a worker" in use.content.decode()
    drain_queue("cpu", KS_CPU_THREADS="1", KS_SANDBOX_MEMORY_MB="4096")
    problem = Problem.objects.get()
    assert problem.source == task.source and problem.owner == staff and problem.device == "cpu"


def test_it_rejects_a_run_without_a_count_and_stores_nothing(client, staff):
    response = client.post("/staff/synthesis/", {"count": 0, "device": "tpu", "workers": 1})
    assert response.status_code == 400
    text = response.content.decode()
    assert "greater than or equal to 1" in text and "Select a valid choice" in text
    assert not SynthesisRun.objects.exists() and django_rq.get_queue("staff-cpu").count == 0


def test_a_gpu_synthesis_run_is_queued_on_the_staff_gpu_queue(client, staff):
    client.post("/staff/synthesis/", {"count": 10, "device": "cuda", "workers": 4})
    run = SynthesisRun.objects.get()
    assert django_rq.get_queue("staff-gpu").fetch_job(run.job_id) is not None and run.workers == 4
    django_rq.get_queue("staff-gpu").empty()


def test_an_unknown_task_is_not_found(client, staff):
    run = SynthesisRun.objects.create(created_by=staff, count=1, dataset="/nonexistent/tasks.jsonl")
    assert client.get(f"/staff/synthesis/{run.pk}/tasks/nope").status_code == 404
    assert client.post(f"/staff/synthesis/{run.pk}/tasks/nope/use").status_code == 404


def test_synthesis_pages_are_refused_to_users_who_are_not_staff(client):
    user = get_user_model().objects.create_user("ada", password="pw")
    client.force_login(user)
    run = SynthesisRun.objects.create(created_by=user, count=1)
    for url in (
        "/staff/synthesis/",
        f"/staff/synthesis/{run.pk}",
        f"/staff/synthesis/{run.pk}/tasks",
        f"/staff/synthesis/{run.pk}/tasks/x",
    ):
        assert client.get(url).status_code == 403, url
    assert client.post("/staff/synthesis/", {"count": 1, "device": "cpu", "workers": 1}).status_code == 403
    assert client.post(f"/staff/synthesis/{run.pk}/tasks/x/use").status_code == 403
    assert SynthesisRun.objects.count() == 1


def test_the_distribution_is_drawn_as_bars_one_per_value():
    from studio.datasets import distribution_charts

    summary = {
        "distribution": {
            "op_classes": {"activation": 3, "norm": 1},
            "fusion_depth": {"1": 2, "10": 1, "2": 4},
            "eager_ms": [{"lo": 1, "hi": 10, "count": 4}, {"lo": 10, "hi": None, "count": 0}],
        }
    }
    classes, depth, eager = distribution_charts(summary)
    assert 'data-bars="2"' in classes and classes.index("activation") < classes.index("norm")
    assert 'data-bars="3"' in depth and depth.index(">2<") < depth.index(">10<")
    assert "10–∞ ms" in eager and 'width="0.0"' in eager  # an empty bin is drawn empty, not as a sliver
    assert distribution_charts(None) == [] and distribution_charts({"distribution": {}}) == []
