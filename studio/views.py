"""Pages of the studio and the health check."""

import logging

import redis
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.db import DatabaseError, connection
from django.http import FileResponse, Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from sandbox.verdict import specialization
from studio import actions, jobs, packages, queues
from studio.forms import ProblemUploadForm, RunForm
from studio.models import KernelVersion, Problem, Run

log = logging.getLogger(__name__)


def visible(queryset, user):
    """Users see only their own records; staff see everyone's."""
    return queryset if user.is_staff else queryset.filter(owner=user)


@login_required
def home(request):
    problems = visible(Problem.objects.all(), request.user)[:50]
    return render(request, "studio/home.html", {"problems": problems})


@login_required
def problem_new(request):
    form = ProblemUploadForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        job_id = queues.enqueue(
            "validation",
            data["device"],
            jobs.validate_problem,
            request.user.pk,
            data["name"],
            data["source"],
            data["device"],
            owner_id=request.user.pk,
        )
        return render(
            request, "studio/_validation.html", {"job_id": job_id, "state": "queued", "waiting": queues.waiting(job_id)}
        )
    template = "studio/_upload_form.html" if request.htmx else "studio/problem_new.html"
    return render(request, template, {"form": form}, status=400 if request.method == "POST" else 200)


@login_required
def validation_status(request, job_id):
    job = queues.fetch(job_id)
    if job is None or job.meta.get("owner_id") != request.user.pk:
        raise Http404("no such validation")
    status = getattr(job.get_status(), "value", None)  # RQ's JobStatus formats as "JobStatus.FAILED"
    if status == "finished":
        result = job.return_value() or {}
        if "problem_id" in result:
            response = HttpResponse(status=204)
            response["HX-Redirect"] = reverse("problem", args=[result["problem_id"]])
            return response
        return render(request, "studio/_validation.html", {"state": "invalid", "error": result.get("error", "")})
    if status in ("failed", "stopped", "canceled"):
        reason = (job.latest_result().exc_string if job.latest_result() else "") or f"its job {status}"
        return render(request, "studio/_validation.html", {"state": "crashed", "error": reason.strip()})
    waiting = queues.waiting(job_id) if status == "queued" else None
    return render(request, "studio/_validation.html", {"job_id": job_id, "state": status, "waiting": waiting})


@login_required
def problem_detail(request, pk):
    problem = get_object_or_404(visible(Problem.objects.all(), request.user), pk=pk)
    form = RunForm(initial={"device": problem.device})
    runs = visible(problem.runs.select_related("best_version"), request.user)
    return render(request, "studio/problem_detail.html", {"problem": problem, "form": form, "runs": runs})


@login_required
@require_POST
def run_new(request, pk):
    problem = get_object_or_404(visible(Problem.objects.all(), request.user), pk=pk)
    form = RunForm(request.POST)
    if not form.is_valid():
        return render(
            request,
            "studio/problem_detail.html",
            {"problem": problem, "form": form, "runs": visible(problem.runs.all(), request.user)},
            status=400,
        )
    return redirect("run", start_run(request.user, problem, **form.cleaned_data).pk)


def start_run(owner, problem, **fields):
    """Store a run of PROBLEM and queue its episode on the device's users' queue; the Run."""
    run = Run.objects.create(owner=owner, problem=problem, **fields)
    run.job_id = queues.enqueue(
        "run", run.device, jobs.run_episode, run.pk, owner_id=owner.pk, timeout=settings.KS_RUN_TIMEOUT
    )
    run.save(update_fields=["job_id"])
    return run


@login_required
def run_detail(request, pk):
    run = get_object_or_404(
        visible(Run.objects.select_related("problem", "best_version", "start_version"), request.user), pk=pk
    )
    events = list(run.events.order_by("seq"))
    waiting = queues.waiting(run.job_id) if run.status == Run.Status.QUEUED else None
    return render(
        request,
        "studio/run_detail.html",
        {
            "run": run,
            "events": [e.to_message() for e in events],
            "last_seq": events[-1].seq if events else 0,
            "waiting": waiting,
            "finished": Run.FINISHED,
        },
    )


@login_required
def run_summary(request, pk):
    """The run's actions, failure and verdict: re-fetched by its page whenever the run's status changes."""
    run = get_object_or_404(visible(Run.objects.select_related("problem", "best_version"), request.user), pk=pk)
    return render(request, "studio/_run_summary.html", {"run": run})


@login_required
def run_waiting(request, pk):
    """Where a queued run waits, polled by its page until a worker takes it (then an empty, unpolled element)."""
    run = get_object_or_404(visible(Run.objects.all(), request.user), pk=pk)
    waiting = queues.waiting(run.job_id) if run.status == Run.Status.QUEUED else None
    return render(request, "studio/_run_waiting.html", {"run": run, "waiting": waiting})


@login_required
def run_versions(request, pk):
    """The run's verified versions, oldest first, with their files: the kernel viewer and chart read this."""
    run = get_object_or_404(visible(Run.objects.all(), request.user), pk=pk)
    versions = [
        {
            "id": v.pk,
            "reward": v.reward,
            "runtime_ms": v.runtime_ms,
            "files": v.files,
            "author": v.author,
            "status": (v.verdict or {}).get("status"),
            "eager_ms": (v.verdict or {}).get("eager_ms"),
            "compiled_ms": (v.verdict or {}).get("compiled_ms"),
            "best": v.pk == run.best_version_id,
        }
        for v in run.versions.order_by("created_at")
    ]
    return JsonResponse({"versions": versions})


@login_required
@require_POST
def run_cancel(request, pk):
    run = get_object_or_404(visible(Run.objects.all(), request.user), pk=pk)
    if run.status not in Run.FINISHED:
        actions.set_status(run.pk, Run.Status.CANCELLED, error=f"cancelled by {request.user.get_username()}")
        queues.stop(run.job_id)
    return redirect("run", run.pk)


@login_required
def run_trajectory(request, pk):
    run = get_object_or_404(visible(Run.objects.all(), request.user), pk=pk)
    if not run.trajectory:
        raise Http404("the run has no trajectory yet")
    response = JsonResponse(run.trajectory)
    response["Content-Disposition"] = f'attachment; filename="run-{run.pk}-trajectory.json"'
    return response


def healthz(request):
    """Really query PostgreSQL and Redis: a load balancer or compose healthcheck trusts this answer."""
    status = {"database": "ok", "redis": "ok"}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as e:
        log.warning("healthz: database unreachable: %s", e)
        status["database"] = "unreachable"
    try:
        with redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2, socket_timeout=2) as client:
            client.ping()
    except redis.RedisError as e:
        log.warning("healthz: redis unreachable: %s", e)
        status["redis"] = "unreachable"
    healthy = all(value == "ok" for value in status.values())
    return JsonResponse(status, status=200 if healthy else 503)


def _version(request, pk):
    versions = KernelVersion.objects.select_related("problem")
    if not request.user.is_staff:
        versions = versions.filter(problem__owner=request.user)
    return get_object_or_404(versions, pk=pk)


def _asks_specialised(request):
    """Whether the user ticked "package it anyway" for a version specialised to the problem's shapes (issue 22)."""
    return (request.POST or request.GET).get("allow_specialized") in ("on", "1", "true")


@login_required
def version_package(request, pk):
    """POST: build the version's package on a worker; a version specialised to the problem's shapes only when the user
    asks for a specialised package (as `sandbox package --allow-specialized`). GET: where the build stands (polled)."""
    version = _version(request, pk)
    specialised = specialization(version.verdict)
    refused = ""
    if request.method == "POST" and not version.package:
        if specialised and not _asks_specialised(request):
            refused = specialised
        else:
            packages.request(version, bool(specialised), request.user.pk)
    elif request.method == "GET":
        packages.check(version)
    return render(request, "studio/_package.html", {"version": version, "refused": refused})


@login_required
def version_package_file(request, pk, filename):
    version = _version(request, pk)
    package = version.package or {}
    if filename not in (package.get("sdist"), package.get("wheel")):
        raise Http404("no such file in this version's package")
    specialised = specialization(version.verdict)
    if specialised and not package.get("specialised") and not _asks_specialised(request):
        # A package built before the rule (issue 22): its own notes do not say it, so the download asks first.
        return HttpResponse(
            f"This version is {specialised}: its package only accepts the problem's shapes. "
            f"Add ?allow_specialized=1 to download it anyway.",
            status=409,
            content_type="text/plain",
        )
    return FileResponse(
        open(settings.KS_PACKAGES_DIR / str(version.pk) / filename, "rb"), as_attachment=True, filename=filename
    )
