"""Whether a live worker serves a job: the live/offline indicator of pages that show a queued or running job."""

from dataclasses import dataclass

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render

from studio import queues
from training.evaluation.queues import listeners, live_workers

PENDING = ("queued", "started", "deferred", "scheduled")


@dataclass(frozen=True)
class WorkerStatus:
    state: str  # "live", "offline", or "" when the job neither waits nor runs (nothing to show)
    detail: str = ""


def worker_status(job) -> WorkerStatus:
    """Whether JOB (an RQ job, or None) has a live worker: the one running it, or one serving its queue."""
    status = job.get_status() if job is not None else None
    if status not in PENDING:
        return WorkerStatus("")
    # Heartbeats, or the pid for workers of this host: a worker killed a moment ago is offline at once here.
    live = live_workers(job.connection)
    if status == "started":
        if job.worker_name in live:
            return WorkerStatus("live", f"running on {job.worker_name}")
        return WorkerStatus("offline", f"its worker {job.worker_name} stopped answering")
    count = listeners(job.connection, job.origin, live)
    if count:
        return WorkerStatus("live", f"{count} worker{'s' if count > 1 else ''} on the {job.origin} queue")
    return WorkerStatus("offline", f"no worker serves the {job.origin} queue: the job waits until one starts")


@login_required
def job_worker(request, job_id):
    """The indicator of JOB_ID alone, polled by the page while the job waits or runs."""
    job = queues.fetch(job_id)
    if job is None or not (request.user.is_staff or job.meta.get("owner_id") == request.user.pk):
        raise Http404("no such job")
    return render(request, "studio/_worker_status.html", {"job_id": job_id, "status": worker_status(job), "poll": True})
