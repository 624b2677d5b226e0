"""The kernel editor: open a version, evaluate an edit on a worker, keep it as a version, hand it back to the agent."""

import json

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from studio import actions, jobs, queues
from studio.forms import HandBackForm
from studio.lib.files import BadFiles, check_files
from studio.models import Evaluation, KernelVersion, Run


def editable_version(request, pk):
    """The version PK if the user may edit it (its problem is theirs, or they are staff) and it has a run."""
    versions = KernelVersion.objects.select_related("problem", "run")
    if not request.user.is_staff:
        versions = versions.filter(problem__owner=request.user)
    version = get_object_or_404(versions, pk=pk)
    if version.run is None:
        raise Http404("this version's run was deleted: its edits would have no stream to report to")
    return version


def _evaluation(request, pk):
    evaluations = Evaluation.objects.select_related("owner")
    if not request.user.is_staff:
        evaluations = evaluations.filter(owner=request.user)
    return get_object_or_404(evaluations, pk=pk)


@login_required
@require_GET
def version_edit(request, pk):
    version = editable_version(request, pk)
    return _edit_page(
        request, version, HandBackForm(initial={"policy": version.run.policy, "max_turns": version.run.max_turns})
    )


def _edit_page(request, version, handback, status=200):
    diff_with = [
        {
            "id": v.pk,
            "label": f"#{v.pk} · {'agent' if v.author == 'agent' else 'edit by ' + v.author} · reward {v.reward}",
        }
        for v in version.run.versions.exclude(pk=version.pk).order_by("-created_at")
    ]
    return render(
        request,
        "studio/version_edit.html",
        {
            "version": version,
            "run": version.run,
            "last_seq": version.run.last_seq,
            "files": version.files,
            "handback": handback,
            "diff_with": diff_with,
            "before_title": f"Before: version #{version.pk}",
            "agent_parent": version.parent_id if version.human_edit else None,
        },
        status=status,
    )


@login_required
@require_POST
def version_evaluate(request, pk):
    """Queue the edited files (JSON {"files": {path: text}}) for the sandbox on a worker; 202 with the evaluation."""
    version = editable_version(request, pk)
    try:
        body = json.loads(request.body.decode("utf-8"))
        files = check_files(body.get("files") if isinstance(body, dict) else None, settings.KS_UPLOAD_LIMIT_BYTES)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return JsonResponse({"error": 'send JSON: {"files": {path: text}}'}, status=400)
    except BadFiles as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    evaluation = actions.queue_evaluation(
        request.user,
        version,
        files,
        lambda evaluation_id: queues.enqueue(
            "edit",
            version.run.device,
            jobs.evaluate_edit,
            evaluation_id,
            owner_id=request.user.pk,
            timeout=settings.KS_EVALUATE_TIMEOUT,
        ),
    )
    return JsonResponse(
        {**actions.evaluation_message(evaluation), "url": reverse("evaluation", args=[evaluation.pk])}, status=202
    )


@login_required
@require_GET
def evaluation_detail(request, pk):
    """The evaluation as streamed, and while it is queued where it waits ({"ahead", "queue"}); the editor polls it."""
    evaluation = _evaluation(request, pk)
    waiting = queues.waiting(evaluation.job_id) if evaluation.status == Evaluation.Status.QUEUED else None
    return JsonResponse(
        {
            **actions.evaluation_message(evaluation),
            "waiting": waiting and {"ahead": waiting.ahead, "queue": waiting.queue},
        }
    )


@login_required
@require_GET
def evaluation_verdict(request, pk):
    """The evaluation's verdict as the editor shows it beside the version's own (rendered here, as every verdict)."""
    evaluation = _evaluation(request, pk)
    return render(
        request,
        "studio/_evaluation_verdict.html",
        {"evaluation": evaluation, "title": f"After: your edit (evaluation #{evaluation.pk})"},
    )


@login_required
@require_POST
def evaluation_keep(request, pk):
    """Keep an evaluated edit as a new version of the run (a human edit, with its verdict)."""
    evaluation = _evaluation(request, pk)
    try:
        version = actions.keep_evaluation(evaluation.pk)
    except actions.NotEvaluated as exc:
        return JsonResponse({"error": str(exc)}, status=409)
    return JsonResponse(
        {
            "version": version.pk,
            "edit_url": reverse("version_edit", args=[version.pk]),
            "run_url": reverse("run", args=[version.run_id]),
        }
    )


@login_required
@require_POST
def version_handback(request, pk):
    """Start a new run of the agent whose episode starts from this version's files."""
    version = editable_version(request, pk)
    form = HandBackForm(request.POST)
    if not form.is_valid():
        return _edit_page(request, version, form, status=400)
    run = Run.objects.create(
        owner=request.user,
        problem=version.problem,
        device=version.run.device,
        start_version=version,
        **form.cleaned_data,
    )
    run.job_id = queues.enqueue(
        "run", run.device, jobs.run_episode, run.pk, owner_id=request.user.pk, timeout=settings.KS_RUN_TIMEOUT
    )
    run.save(update_fields=["job_id"])
    return redirect("run", run.pk)
