"""Runs whose worker died: RQ shows their job as started for minutes (forever with no worker left), so runs
that claim to be queued or running are checked against the workers actually alive, and closed with the reason."""
import logging
import os
import socket
from datetime import datetime, timedelta, timezone

from rq import Worker

from studio import actions, queues
from studio.models import Run

log = logging.getLogger(__name__)
HEARTBEAT_GRACE = timedelta(seconds=60)


def _process_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _live_workers(connection, grace):
    """Names of workers that are alive: on this host by their pid, elsewhere by a recent heartbeat (a busy
    worker beats about every 30 s)."""
    now = datetime.now(timezone.utc)
    here = socket.gethostname()
    live = set()
    for worker in Worker.all(connection=connection):
        if worker.hostname == here and worker.pid:
            if _process_alive(worker.pid):
                live.add(worker.name)
            continue
        beat = worker.last_heartbeat
        if beat is not None and beat.tzinfo is None:
            beat = beat.replace(tzinfo=timezone.utc)
        if beat is None or now - beat <= grace:
            live.add(worker.name)
    return live


def reason_to_fail(run, live):
    """Why RUN can no longer finish, or None while it may."""
    job = queues.fetch(run.job_id) if run.job_id else None
    if job is None:
        return "its job is gone from the queue (was Redis restarted?)"
    status = job.get_status()
    if status in ("failed", "stopped", "canceled"):
        result = job.latest_result()
        detail = (result.exc_string or "").strip().splitlines()[-1:] if result else []
        return f"its job {status}" + (f": {detail[0]}" if detail else "")
    if status == "started" and job.worker_name and job.worker_name not in live:
        return f"its worker {job.worker_name} stopped answering"
    if status == "finished" and run.status != Run.Status.QUEUED:
        return "its job ended without closing the run"
    return None


def reconcile(grace=HEARTBEAT_GRACE):
    """Close every run that can no longer finish; returns how many were closed."""
    pending = list(Run.objects.filter(status__in=[Run.Status.QUEUED, Run.Status.RUNNING]))
    if not pending:
        return 0
    live = _live_workers(queues.queue_for("cpu").connection, grace)
    closed = 0
    for run in pending:
        reason = reason_to_fail(run, live)
        if reason and Run.objects.filter(pk=run.pk, status__in=[Run.Status.QUEUED, Run.Status.RUNNING]).exists():
            log.warning("run %s failed: %s", run.pk, reason)
            actions.set_status(run.pk, Run.Status.FAILED, error=reason)
            closed += 1
    return closed
