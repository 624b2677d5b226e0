"""The studio's RQ worker: whatever a job started ends with the job, and its scratch folder goes, however the job ends
(done, failed, timed out, or stopped from the studio, which SIGKILLs the work horse's process group). A worker of the
users' queues starts warm: what a run's job imports is imported once, before the work horses are forked, and a warm
pool of jailed analysis processes (sandbox.warm_pool) waits for the runs' first turns."""

import gc
import hashlib
import importlib
import logging
import os
import tempfile

from django.conf import settings
from rq.worker import Worker as RQWorker

from sandbox import isolation, jailfs, warm_pool
from sandbox import settings as sandbox_settings
from studio.lib import processes, scratch
from studio.queues import USERS
from training.evaluation.queues import process_alive

log = logging.getLogger(__name__)
# What run_episode imports (torch among them, seconds of it): imported by the worker, inherited by every horse.
EPISODE_MODULES = ("torch", "agent.loop", "agent.policies.heuristic", "studio.jobs", "studio.actions", "studio.serving")


class Worker(RQWorker):
    """Each job's work horse gets a scratch folder as its TMPDIR. The worker is a child subreaper: what the horse
    started in sessions of their own (jails, builds) and left behind when it died is handed to the worker, which
    ends it once the horse is gone; then the scratch folder and the jails' stale private folders are removed."""

    _pool = None  # the warm analysis pool's Daemon, on a worker of runs

    def register_birth(self):
        # A worker started again under its name (by gpuworkers' supervisor) takes over the registration its dead
        # predecessor on this host left: RQ would refuse the name until that expired, for up to 8 minutes.
        old = self.find_by_key(self.key, connection=self.connection)
        if old is not None and old.hostname == self.hostname and old.pid and not process_alive(old.pid):
            old.register_death()
        super().register_birth()

    def work(self, burst=False, *args, **kwargs):
        processes.become_subreaper()
        # Jails' private folders and uid reservations are host-wide (sandbox.settings.work_root): pinned here, before
        # a horse's TMPDIR would move them under its scratch folder.
        os.environ.setdefault("KS_SANDBOX_WORK", str(sandbox_settings.work_root()))
        self._sweep()
        self._pool = self._warm_up(pool=not burst)
        try:
            return super().work(burst, *args, **kwargs)
        finally:
            if self._pool is not None:
                self._pool.stop()

    def run_devices(self):
        """The devices of the users' run queues this worker serves, those whose jails this host can give."""
        names = self.queue_names()
        return [d for d, queue in USERS.items() if queue in names and (d == "cpu" or jailfs.device_nodes(d))]

    def _warm_up(self, pool=True):
        """For a worker of runs: the episode's modules imported, and the warm analysis pool started (its Daemon;
        None when KS_WARM_POOL=0, POOL is false, or the worker serves no runs). A burst worker (POOL false) has no
        pool: it drains its queue and exits, and warming processes for runs it will never take would only slow
        down those it runs."""
        devices = self.run_devices()
        if not devices:
            return None
        for name in EPISODE_MODULES:
            importlib.import_module(name)
        # Out of the collector's reach: a horse's collections would otherwise write to (and so copy) every page of
        # what it inherited.
        gc.freeze()
        if sandbox_settings.WARM_POOL <= 0 or not pool:
            return None
        for device in devices:
            warm_pool.jail_signature(device)  # its probes (bubblewrap, seccomp, the read-only paths) done once, here
        return self._start_pool(devices)

    def _start_pool(self, devices):
        from agent import warm_analysis

        try:
            pool = warm_analysis.start_pool(devices, sandbox_settings.WARM_POOL)
        except warm_pool.Unavailable as exc:
            log.error("%s; runs analyse in fresh jails", exc)
            os.environ.pop(warm_pool.SOCKET_ENV, None)
            return None
        os.environ[warm_pool.SOCKET_ENV] = str(pool.socket)  # inherited by the work horses
        log.info("warm analysis pool for %s: %d per device (KS_WARM_POOL)", ", ".join(devices), pool.size)
        return pool

    def execute_job(self, job, queue):
        if self._pool is not None and self._pool.process.poll() is not None:
            log.error("the warm analysis pool stopped (exit %s); starting it again", self._pool.process.returncode)
            self._pool.stop()
            self._pool = self._start_pool(self._pool.devices)
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
