"""Deleting a run or a problem with everything it owns: its versions, events and evaluations in the database, its
queued or running job, and the versions' built packages on disk."""

import logging
import shutil

from django.conf import settings
from django.db import transaction

from studio import queues
from studio.models import KernelVersion, Problem, Run

log = logging.getLogger(__name__)


def _remove_packages(version_ids):
    for pk in version_ids:
        shutil.rmtree(settings.KS_PACKAGES_DIR / str(pk), ignore_errors=True)


def delete_run(run):
    """Stop RUN's job if it still waits or runs, then delete it with its versions and their package files."""
    if run.status not in Run.FINISHED:
        queues.stop(run.job_id)
    with transaction.atomic():
        versions = list(KernelVersion.objects.filter(run=run).values_list("pk", flat=True))
        # Runs handed back from these versions keep going; they only lose the link to where they started.
        KernelVersion.objects.filter(pk__in=versions).delete()
        run.delete()
        transaction.on_commit(lambda: _remove_packages(versions))
    log.info("run %s deleted with versions %s", run.pk, versions)


def delete_problem(problem):
    """Delete PROBLEM with its runs (their jobs stopped), versions and package files."""
    for run in problem.runs.exclude(status__in=Run.FINISHED):
        queues.stop(run.job_id)
    with transaction.atomic():
        versions = list(problem.versions.values_list("pk", flat=True))
        Problem.objects.filter(pk=problem.pk).delete()
        transaction.on_commit(lambda: _remove_packages(versions))
    log.info("problem %s deleted with versions %s", problem.pk, versions)
