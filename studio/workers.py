"""The studio's RQ worker: whatever a job started ends with the job, and its scratch folder goes, however the job ends
(done, failed, timed out, or stopped from the studio, which SIGKILLs the work horse's process group)."""

import hashlib
import logging
import os
import tempfile

from django.conf import settings
from rq.worker import Worker as RQWorker

from sandbox import isolation
from sandbox import settings as sandbox_settings
from studio.lib import processes, scratch
from training.evaluation.queues import process_alive

log = logging.getLogger(__name__)


class Worker(RQWorker):
    """Each job's work horse gets a scratch folder as its TMPDIR. The worker is a child subreaper: what the horse
    started in sessions of their own (jails, builds) and left behind when it died is handed to the worker, which
    ends it once the horse is gone; then the scratch folder and the jails' stale private folders are removed."""

    def register_birth(self):
        # A worker started again under its name (by gpuworkers' supervisor) takes over the registration its dead
        # predecessor on this host left: RQ would refuse the name until that expired, for up to 8 minutes.
        old = self.find_by_key(self.key, connection=self.connection)
        if old is not None and old.hostname == self.hostname and old.pid and not process_alive(old.pid):
            old.register_death()
        super().register_birth()

    def work(self, *args, **kwargs):
        processes.become_subreaper()
        # Jails' private folders and uid reservations are host-wide (sandbox.settings.work_root): pinned here, before
        # a horse's TMPDIR would move them under its scratch folder.
        os.environ.setdefault("KS_SANDBOX_WORK", str(sandbox_settings.work_root()))
        self._sweep()
        return super().work(*args, **kwargs)

    def execute_job(self, job, queue):
        own = processes.children()  # ours before the horse (a scheduler), kept
        # A short name: sockets made under TMPDIR (multiprocessing's managers) must fit AF_UNIX's 108 bytes.
        self._scratch = scratch.claim(settings.KS_JOB_SCRATCH_DIR, hashlib.sha256(job.id.encode()).hexdigest()[:16])
        try:
            super().execute_job(job, queue)
        finally:
            ended = processes.end_children(keep=own)
            scratch.release(self._scratch)
            self._sweep()
            if ended:
                log.info("job %s: ended %d process(es) it left behind", job.id, ended)

    def main_work_horse(self, job, queue):
        # In the forked horse: every temporary file of the job, and of the processes it starts, under its scratch.
        os.environ["TMPDIR"] = str(self._scratch.path)
        tempfile.tempdir = None
        super().main_work_horse(job, queue)

    def _sweep(self):
        for path in scratch.sweep(settings.KS_JOB_SCRATCH_DIR) + isolation.sweep_stale():
            log.info("removed %s, left by a job whose processes are gone", path)
