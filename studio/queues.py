"""Which queue does what, and enqueueing with our own job ids (django-rq's on-commit mode returns None)."""
import uuid

import django_rq


def queue_for(device):
    return django_rq.get_queue("gpu" if device == "cuda" else "cpu")


def enqueue(queue, func, *args, owner_id=None, timeout=3600):
    job_id = uuid.uuid4().hex
    queue.enqueue(func, *args, job_id=job_id, job_timeout=timeout, result_ttl=3600, meta={"owner_id": owner_id})
    return job_id


def fetch(job_id):
    """The job with JOB_ID from whichever queue holds it, or None."""
    for name in ("cpu", "gpu", "train"):
        job = django_rq.get_queue(name).fetch_job(job_id)
        if job is not None:
            return job
    return None


def stop(job_id):
    """Stop JOB_ID: cancel it if still queued, stop its work horse if running."""
    from rq.command import send_stop_job_command
    from rq.exceptions import InvalidJobOperation, NoSuchJobError
    job = fetch(job_id) if job_id else None
    if job is None:
        return
    try:
        if job.get_status() == "started":
            send_stop_job_command(job.connection, job.id)
        else:
            job.cancel()
    except (InvalidJobOperation, NoSuchJobError):
        pass  # it finished meanwhile
