"""A version's package build on a worker: one job per version at a time (its id derived from the version, so the page
finds it without storing it), and a build whose job can no longer finish (worker killed, time limit, queue emptied)
recorded as the version's package error instead of a page polling "building" forever."""

import logging

from studio import jobs, queues
from studio.models import KernelVersion
from studio.reconcile import job_cannot_finish
from training.evaluation.queues import live_workers

log = logging.getLogger(__name__)
PENDING = ("queued", "started", "deferred", "scheduled")


def job_id(version):
    # The creation time too: a database rebuilt beside the same Redis numbers its versions again from 1.
    return f"package-{version.pk}-{int(version.created_at.timestamp() * 1e6)}"


def building(version):
    """Whether VERSION's package job waits or runs."""
    job = queues.fetch(job_id(version))
    return job is not None and job.get_status() in PENDING


def request(version, allow_specialized, owner_id):
    """Queue VERSION's package build unless one already waits or runs (a second click builds nothing twice)."""
    if building(version):
        return
    if version.package_error:  # tried again: the last attempt's error no longer stands
        KernelVersion.objects.filter(pk=version.pk).update(package_error="")
        version.package_error = ""
    device = version.run.device if version.run else version.problem.device
    queues.enqueue(
        "package",
        device,
        jobs.package_version,
        version.pk,
        allow_specialized,
        owner_id=owner_id,
        timeout=1800,
        job_id=job_id(version),
    )


def check(version):
    """While VERSION has neither a package nor an error: if its job can no longer finish, store why as its package
    error (the job writes its result before it ends, so only a job that died leaves both empty)."""
    if version.package or version.package_error:
        return
    reason = job_cannot_finish(job_id(version), live_workers(queues.connection()))
    if not reason:
        return
    reason = f"the package build failed: {reason}"
    if KernelVersion.objects.filter(pk=version.pk, package__isnull=True, package_error="").update(package_error=reason):
        log.warning("version %s: %s", version.pk, reason)
    version.refresh_from_db(fields=["package", "package_error"])
