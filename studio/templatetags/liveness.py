"""`{% worker_indicator job_id %}`: the live/offline indicator of a job's worker (studio.liveness);
`{% waiting_for job_id %}`: its place in its queue; `|package_job`: the job of a version's package."""

from django import template

from studio import queues
from studio.liveness import worker_status

register = template.Library()


@register.inclusion_tag("studio/_worker_status.html")
def worker_indicator(job_id, poll=False):
    """POLL: the indicator refreshes itself (pages that are not already re-rendered while the job runs)."""
    job = queues.fetch(job_id) if job_id else None
    return {"job_id": job_id, "status": worker_status(job), "poll": poll}


@register.inclusion_tag("studio/_waiting.html")
def waiting_for(job_id):
    """Where JOB_ID waits in its queue (nothing once a worker took it)."""
    return {"waiting": queues.waiting(job_id)}


@register.filter
def package_job(version):
    """The id of VERSION's package job (studio.packages)."""
    from studio.packages import job_id

    return job_id(version)
