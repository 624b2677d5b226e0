"""Staff pages of task-synthesis runs: launch, live progress from the run's files (or the place in its queue), stop,
the dataset browser, and a task viewed in Monaco and turned into a problem (validated on a worker, like an upload)."""

from django.conf import settings
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from sandbox.jsonl import read_jsonl
from studio import charts, jobs, queues, staff
from studio.forms import SynthesisForm, TaskFilterForm
from studio.models import SynthesisRun
from studio.staff import staff_only


def rows_of(path):
    """Lines of a JSONL file a worker may be appending to, read only: a write cut short and bad lines left out."""
    return read_jsonl(path, skip_bad=True)


def _files(run):
    from training.synthesis.dataset import paths

    return paths(run.dataset) if run.dataset else None


def progress_of(run):
    """The run's summary: the stored one when it ended, otherwise computed now from its attempts and tasks."""
    from training.synthesis.dataset import summarize

    files = _files(run)
    if run.summary is not None or files is None:
        return run.summary
    return summarize(rows_of(files["attempts"]), rows_of(files["tasks"]))


def tasks_of(run):
    from training.synthesis.dataset import TaskRecord

    files = _files(run)
    return [TaskRecord.from_json(row) for row in rows_of(files["tasks"])] if files else []


@staff_only
@require_http_methods(["GET", "POST"])
def synthesis_list(request):
    form = SynthesisForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        run = SynthesisRun.objects.create(created_by=request.user, **form.cleaned_data)
        run.job_id = queues.enqueue(
            "synthesis",
            run.device,
            jobs.run_synthesis,
            run.pk,
            owner_id=request.user.pk,
            timeout=settings.KS_SYNTHESIS_TIMEOUT,
        )
        run.save(update_fields=["job_id"])
        return redirect("synthesis_run", run.pk)
    return render(
        request,
        "studio/staff/synthesis_runs.html",
        {"form": form, "runs": SynthesisRun.objects.select_related("created_by")[:100]},
        status=400 if request.method == "POST" else 200,
    )


def distribution_charts(summary):
    """Bar charts of the kept set's distribution (operator classes, fusion depth, eager time) from a summary."""
    dist = (summary or {}).get("distribution") or {}
    eager = [
        (f"{b.get('lo')}–{b.get('hi') if b.get('hi') is not None else '∞'} ms", b.get("count"))
        for b in dist.get("eager_ms") or []
    ]
    made = [
        charts.bar_chart(
            "operator classes", sorted((dist.get("op_classes") or {}).items(), key=lambda kv: (-kv[1], kv[0]))
        ),
        charts.bar_chart(
            "fused operators", sorted((dist.get("fusion_depth") or {}).items(), key=lambda kv: int(kv[0]))
        ),
        charts.bar_chart("eager time", eager),
    ]
    return [chart for chart in made if chart]


@staff_only
def synthesis_detail(request, pk):
    run = get_object_or_404(SynthesisRun, pk=pk)
    template = "studio/staff/_synthesis_progress.html" if request.htmx else "studio/staff/synthesis_run.html"
    summary = progress_of(run)
    waiting = queues.waiting(run.job_id) if run.status == SynthesisRun.Status.QUEUED else None
    return render(
        request, template, {"run": run, "summary": summary, "charts": distribution_charts(summary), "waiting": waiting}
    )


@staff_only
@require_POST
def synthesis_stop(request, pk):
    """Stop the run: no process or scratch folder of it is left; the tasks it kept stay a dataset."""
    staff.stop(get_object_or_404(SynthesisRun, pk=pk), request.user)
    return redirect("synthesis_run", pk)


def matching(tasks, filters):
    """The tasks that pass the browser's filters (cleaned TaskFilterForm data)."""
    op_class, depth = (filters.get("op_class") or "").strip(), filters.get("depth")
    lo, hi = filters.get("min_ms"), filters.get("max_ms")
    return [
        t
        for t in tasks
        if (not op_class or op_class in t.op_classes)
        and (depth is None or t.fusion_depth == depth)
        and (lo is None or t.eager_ms >= lo)
        and (hi is None or t.eager_ms <= hi)
    ]


@staff_only
def synthesis_tasks(request, pk):
    run = get_object_or_404(SynthesisRun, pk=pk)
    form = TaskFilterForm(request.GET or None)
    tasks = tasks_of(run)
    if form.is_bound and not form.is_valid():
        return render(request, "studio/staff/synthesis_tasks.html", {"run": run, "form": form, "tasks": []}, status=400)
    shown = matching(tasks, form.cleaned_data if form.is_bound else {})
    classes = sorted({c for t in tasks for c in t.op_classes})
    return render(
        request,
        "studio/staff/synthesis_tasks.html",
        {"run": run, "form": form, "tasks": shown, "total": len(tasks), "classes": classes},
    )


def _task(run, task_id):
    task = next((t for t in tasks_of(run) if t.task_id == task_id), None)
    if task is None:
        raise Http404(f"synthesis run {run.pk} has no task {task_id}")
    return task


@staff_only
def synthesis_task(request, pk, task_id):
    run = get_object_or_404(SynthesisRun, pk=pk)
    return render(request, "studio/staff/synthesis_task.html", {"run": run, "task": _task(run, task_id)})


@staff_only
@require_POST
def synthesis_task_use(request, pk, task_id):
    """Make the task a problem through the upload path: validated on a worker, stored only if valid."""
    run = get_object_or_404(SynthesisRun, pk=pk)
    task = _task(run, task_id)
    job_id = queues.enqueue(
        "validation",
        task.device,
        jobs.validate_problem,
        request.user.pk,
        task.name,
        task.source,
        task.device,
        owner_id=request.user.pk,
    )
    return render(
        request, "studio/_validation.html", {"job_id": job_id, "state": "queued", "waiting": queues.waiting(job_id)}
    )
