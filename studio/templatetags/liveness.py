"""`{% worker_indicator job_id %}`: the live/offline indicator of a job's worker (studio.liveness)."""

from django import template

from studio import queues
from studio.liveness import worker_status

register = template.Library()


@register.inclusion_tag("studio/_worker_status.html")
def worker_indicator(job_id, poll=False):
    """POLL: the indicator refreshes itself (pages that are not already re-rendered while the job runs)."""
    job = queues.fetch(job_id) if job_id else None
    return {"job_id": job_id, "status": worker_status(job), "poll": poll}
