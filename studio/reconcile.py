"""Runs, evaluations of edits, KernelBench evaluations, synthesis runs and training runs whose worker died: RQ shows
their job as started for minutes (forever with no worker left), so those that claim to be queued or running are
checked against the workers alive, and closed."""

import logging
from datetime import timedelta

from django.utils import timezone as django_timezone

from studio import actions, queues
from studio.models import BenchEvaluation, Evaluation, Run, SynthesisRun, TrainingRun
from training.evaluation.queues import live_workers

log = logging.getLogger(__name__)
HEARTBEAT_GRACE = timedelta(seconds=60)
# Staff jobs whose rows carry status, error and finished_at (their job writes them; nothing streams them).
STAFF_JOBS = (BenchEvaluation, SynthesisRun, TrainingRun)


def reason_to_fail(run, live):
    """Why RUN can no longer finish, or None while it may."""
    return job_cannot_finish(run.job_id, live, ended_early=run.status != Run.Status.QUEUED)


def job_cannot_finish(job_id, live, ended_early=True):
    """Why the job JOB_ID will never close what it works on, or None while it may."""
    job = queues.fetch(job_id) if job_id else None
    if job is None:
        return "its job is gone from the queue (was Redis restarted?)"
    status = getattr(job.get_status(), "value", None)  # RQ's JobStatus formats as "JobStatus.FAILED"
    if status in ("failed", "stopped", "canceled"):
        result = job.latest_result()
        detail = (result.exc_string or "").strip().splitlines()[-1:] if result else []
        return f"its job {status}" + (f": {detail[0]}" if detail else "")
    if status == "started" and job.worker_name and job.worker_name not in live:
        return f"its worker {job.worker_name} stopped answering"
    if status == "finished" and ended_early:
        return "its job ended without closing it"
    return None


def reconcile(grace=HEARTBEAT_GRACE):
    """Close every run, evaluation and staff job that can no longer finish; returns how many were closed."""
    pending = list(Run.objects.filter(status__in=[Run.Status.QUEUED, Run.Status.RUNNING]))
    # An evaluation's job id is saved just after enqueueing: one without it yet is not judged.
    evaluations = list(
        Evaluation.objects.filter(status__in=[Evaluation.Status.QUEUED, Evaluation.Status.RUNNING]).exclude(job_id="")
    )
    # A staff job's id is saved just after enqueueing (and cleared on resume): one without it is not judged.
    staff = [
        row
        for model in STAFF_JOBS
        for row in model.objects.filter(status__in=[model.Status.QUEUED, model.Status.RUNNING]).exclude(job_id="")
    ]
    if not pending and not evaluations and not staff:
        return 0
    live = live_workers(queues.connection(), grace)
    closed = 0
    for evaluation in evaluations:
        reason = job_cannot_finish(evaluation.job_id, live)
        if reason and Evaluation.objects.filter(pk=evaluation.pk, status=evaluation.status).exists():
            log.warning("evaluation %s failed: %s", evaluation.pk, reason)
            actions.set_evaluation(evaluation.pk, Evaluation.Status.FAILED, error=reason)
            closed += 1
    for row in staff:
        reason = job_cannot_finish(row.job_id, live)
        model = type(row)
        if reason and model.objects.filter(pk=row.pk, status=row.status, job_id=row.job_id).update(
            status=model.Status.FAILED, error=reason, finished_at=django_timezone.now()
        ):
            log.warning("%s failed: %s", row, reason)
            closed += 1
    for run in pending:
        reason = reason_to_fail(run, live)
        if reason and Run.objects.filter(pk=run.pk, status__in=[Run.Status.QUEUED, Run.Status.RUNNING]).exists():
            log.warning("run %s failed: %s", run.pk, reason)
            actions.set_status(run.pk, Run.Status.FAILED, error=reason)
            closed += 1
    return closed
