"""Running an evaluation: its pending episodes, in a local process pool or as RQ jobs, each result stored the
moment it lands, so that an interrupted evaluation resumes where it stopped.

A lost episode (its process or worker died) runs again, up to MAX_ATTEMPTS times, then is stored as an error;
errors run again on the next --resume. A finished episode is never run again.

Local episodes share one GPU. KernelBench's level-1 inputs reach 6 GiB a tensor, and one such episode (reference
and candidate processes, outputs, poisoned buffers) can take half of an 80 GiB card. An episode that ran out of GPU
memory while others ran beside it is not stored: it runs again alone, when no other episode is running.
"""

import logging
import multiprocessing
import os
import re
import signal
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from datetime import datetime, timezone

from training.evaluation import queues
from training.evaluation.jobs import EpisodeRequest, EvaluationAborted, run_episode
from training.evaluation.problems import BenchProblem
from training.evaluation.results import EpisodeResult

log = logging.getLogger(__name__)
MAX_ATTEMPTS = 3
LIVENESS_EVERY_S = 5.0
NO_WORKER_NOTE_EVERY_S = 60.0


def pending_requests(folder, problems, episodes, policy, policy_options, rerun=False):
    """(requests for every (arm, problem) without a finished result of the same problem code, finished count);
    EPISODES: {arm: agent.loop.EpisodeConfig}. RERUN: every (arm, problem) again, stored results or not (the newest
    result of each is the one reported)."""
    finished = {} if rerun else folder.finished()
    requests, done = [], 0
    for arm, episode in episodes.items():
        for problem in problems:
            old = finished.get((arm, problem.key))
            if old is not None and old.problem_sha256 == problem.sha256:
                done += 1
                continue
            if old is not None:
                log.warning("%s/%s changed since its result was stored: it runs again", arm, problem.key)
            requests.append(
                EpisodeRequest(
                    arm=arm, problem=problem.to_json(), policy=policy, policy_options=policy_options, episode=episode
                )
            )
    return requests, done


OUT_OF_MEMORY = re.compile(r"OutOfMemoryError|CUDA out of memory|CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation")


def out_of_gpu_memory(payload):
    """Whether an episode's result failed because the GPU ran out of memory (its error or its verdict's log); for
    a re-timing, whether its evaluation did (the stored verdict is kept beside the error)."""
    result = payload.get("result") or {}
    retime_error = (result.get("extra") or {}).get("retime_error")
    if retime_error:
        return bool(OUT_OF_MEMORY.search(retime_error))
    verdict = result.get("verdict") or {}
    if verdict.get("correct"):
        return False
    text = (result.get("error") or "") + "\n" + (verdict.get("log") or "")
    return bool(OUT_OF_MEMORY.search(text))


def error_payload(request, reason):
    problem = BenchProblem.from_json(request.problem)
    result = EpisodeResult(
        arm=request.arm,
        key=problem.key,
        level=problem.level,
        problem_id=problem.problem_id,
        name=problem.name,
        problem_sha256=problem.sha256,
        error=reason,
        attempt=request.attempt,
        policy=request.policy,
        finished_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )
    return {"result": result.to_json(), "trajectory": None}


class Runner:
    """What both back-ends share: storing results, progress, retries of lost episodes, the time budget."""

    def __init__(self, folder, progress, stop_after_s=None):
        self.folder, self.progress = folder, progress
        self.deadline = None if stop_after_s is None else time.monotonic() + stop_after_s
        self.not_started = 0

    def handle(self, payload):
        result = self.folder.record(payload)
        self.progress.update(result)
        return result

    def retry(self, request, reason):
        """The request to run again after its episode was lost, or None once it was lost MAX_ATTEMPTS times."""
        key = f"{request.arm}/{request.key}"
        if request.attempt >= MAX_ATTEMPTS:
            self.progress.note(f"{key}: lost {request.attempt} times ({reason}); stored as an error")
            self.handle(error_payload(request, f"the episode was lost {request.attempt} times; last: {reason}"))
            return None
        self.progress.note(f"{key}: runs again ({reason})")
        return EpisodeRequest.from_json({**request.to_json(), "attempt": request.attempt + 1})

    def out_of_time(self):
        return self.deadline is not None and time.monotonic() >= self.deadline


# -- in-process: a pool of local processes --------------------------------------------------------------------
def run_local(requests, runner, workers, job=run_episode):
    """Run REQUESTS in WORKERS fresh processes (spawned: nothing of this process's state, no CUDA, is inherited).

    An episode that ran out of GPU memory beside others goes to a queue of episodes that run alone: while that
    queue holds one, no new episode starts until those in flight end, then it runs by itself."""
    todo, alone = deque(requests), deque()
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context)
    running, shared = {}, set()  # shared: futures that had another episode beside them at some point
    try:
        while todo or alone or running:
            if alone:
                if not running and not runner.out_of_time():
                    request = alone.popleft()
                    running[pool.submit(job, request.to_json())] = request
            else:
                while todo and len(running) < workers and not runner.out_of_time():
                    request = todo.popleft()
                    future = pool.submit(job, request.to_json())
                    running[future] = request
                    if len(running) > 1:
                        shared.update(running)
            if not running:
                break
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            broken = False
            for future in done:
                request = running.pop(future)
                was_shared = future in shared
                shared.discard(future)
                try:
                    payload = future.result()
                except EvaluationAborted:
                    raise
                except BrokenProcessPool:
                    # A worker process died (killed, out of memory): every episode in flight went with it.
                    broken = True
                    again = runner.retry(request, "its worker process died")
                    if again:
                        todo.appendleft(again)
                except Exception as exc:
                    log.exception("episode %s/%s crashed", request.arm, request.key)
                    runner.handle(error_payload(request, f"the episode crashed: {type(exc).__name__}: {exc}"))
                else:
                    if was_shared and out_of_gpu_memory(payload):
                        runner.progress.note(
                            f"{request.arm}/{request.key}: ran out of GPU memory beside other "
                            f"episodes; it runs again alone"
                        )
                        alone.append(request)
                    else:
                        runner.handle(payload)
            if broken:
                for future, request in list(running.items()):
                    running.pop(future)
                    again = runner.retry(request, "its worker process died")
                    if again:
                        todo.appendleft(again)
                shared.clear()
                pool.shutdown(wait=False, cancel_futures=True)
                pool = ProcessPoolExecutor(max_workers=workers, mp_context=context)
    except BaseException:
        # Interrupted (Ctrl-C, SIGTERM, an abort): the episodes in flight stop the way a Ctrl-C stops them, so
        # that the sandbox ends its jailed processes, instead of running on as orphans.
        _interrupt(pool)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    runner.not_started = len(todo) + len(alone)


def _interrupt(pool):
    # ProcessPoolExecutor has no public way to signal its workers before Python 3.14.
    for process in list(getattr(pool, "_processes", {}).values()):
        if process.is_alive():
            os.kill(process.pid, signal.SIGINT)


# -- RQ: episodes as jobs on a queue ----------------------------------------------------------------------------
def _slot(request):
    return f"{request.arm}|{request.key}"


def _job_id(run_id, request):
    problem = BenchProblem.from_json(request.problem)
    return re.sub(
        r"[^A-Za-z0-9_.-]",
        "_",
        f"ks-eval-{run_id}-{request.arm}-L{problem.level}-{problem.problem_id}-a{request.attempt}",
    )


class QueueRun:
    def __init__(self, runner, connection, name, job_timeout_s, poll_s):
        self.runner, self.connection, self.name = runner, connection, name
        self.queue = queues.get_queue(connection, name)
        self.job_timeout_s, self.poll_s = job_timeout_s, poll_s
        self.folder = runner.folder
        self.run_id = self.folder.spec["run_id"]
        self.slots = self.folder.jobs()  # slot -> {"job": id, "attempt": n}
        self.waiting = {}  # job id -> request

    def enqueue(self, request):
        job_id = _job_id(self.run_id, request)
        stale = queues.fetch(self.connection, job_id)
        if stale is not None:
            stale.delete()
        queues.enqueue(
            self.queue,
            run_episode,
            request.to_json(),
            job_id,
            self.job_timeout_s,
            f"evaluate {request.arm}/{request.key} with {request.policy}",
        )
        self.slots[_slot(request)] = {"job": job_id, "attempt": request.attempt}
        self.waiting[job_id] = request

    def collect(self, job, request):
        """Store a finished job's result and free its Redis memory (trajectories are large)."""
        self.runner.handle(job.return_value())
        self.waiting.pop(job.id, None)
        self.slots.pop(_slot(request), None)
        self.folder.save_jobs(self.slots)
        job.delete()

    def settle(self, job, request, state, reason):
        """Act on a job's state; True when the request left the waiting set."""
        if state == "finished":
            self.collect(job, request)
            return True
        if state == "pending":
            self.waiting[job.id] = request
            return False
        if "EvaluationAborted" in reason:
            raise EvaluationAborted(reason.strip().splitlines()[-1].split(": ", 1)[-1])
        if job is not None:
            self.waiting.pop(job.id, None)
            job.delete()
        if state == "failed":
            detail = reason.strip().splitlines()[-1] if reason.strip() else reason
            again = self.runner.retry(request, f"its job failed: {detail}")
        else:
            again = self.runner.retry(request, reason)
        if again is None:
            self.slots.pop(_slot(request), None)
        else:
            self.enqueue(again)
        self.folder.save_jobs(self.slots)
        return True

    def start(self, requests):
        """Collect or adopt the jobs an earlier run left, enqueue the rest."""
        live = queues.live_workers(self.connection)
        queued = set(self.queue.get_job_ids())
        for request in requests:
            entry = self.slots.get(_slot(request))
            job = queues.fetch(self.connection, entry["job"]) if entry else None
            if entry:
                request = EpisodeRequest.from_json({**request.to_json(), "attempt": entry["attempt"]})
            if job is None:
                self.enqueue(request)
                continue
            state, reason = queues.job_state(job, queued, live)
            self.settle(job, request, state, reason)
        self.folder.save_jobs(self.slots)
        if self.waiting and not queues.listeners(self.connection, self.name, live):
            self.runner.progress.note(
                f"no worker listens on queue {self.name!r} yet: start one with `rq worker {self.name} --url REDIS_URL`"
            )

    def stop_unstarted(self):
        """Past the time budget: take back the jobs no worker started; the started ones finish."""
        from rq.job import JobStatus

        for job_id, request in list(self.waiting.items()):
            job = queues.fetch(self.connection, job_id)
            if job is not None and job.get_status() == JobStatus.QUEUED:
                job.delete()
                self.waiting.pop(job_id)
                self.slots.pop(_slot(request), None)
                self.runner.not_started += 1
        self.folder.save_jobs(self.slots)

    def follow(self):
        from rq.job import Job

        last_liveness, last_note, live, stopped = 0.0, time.monotonic(), set(), False
        while self.waiting:
            time.sleep(self.poll_s)
            if self.runner.out_of_time() and not stopped:
                self.stop_unstarted()
                stopped = True
            now = time.monotonic()
            if now - last_liveness >= LIVENESS_EVERY_S:
                live, last_liveness = queues.live_workers(self.connection), now
                if now - last_note >= NO_WORKER_NOTE_EVERY_S and not queues.listeners(self.connection, self.name, live):
                    self.runner.progress.note(f"still no live worker on queue {self.name!r}")
                    last_note = now
            queued = set(self.queue.get_job_ids())
            ids = list(self.waiting)
            for job_id, job in zip(ids, Job.fetch_many(ids, connection=self.connection)):
                request = self.waiting.get(job_id)
                if request is None:
                    continue
                state, reason = queues.job_state(job, queued, live)
                if state == "lost" and job is not None and job.get_status() == "queued":
                    continue  # just enqueued and not yet listed: the next poll sees it
                if state == "pending":
                    continue
                if job is None:
                    self.waiting.pop(job_id)
                self.settle(job, request, state, reason)

    def abandon_queued(self):
        """On abort: delete the queued jobs of this run so that no worker spends time on them."""
        for job_id in list(self.waiting):
            job = queues.fetch(self.connection, job_id)
            if job is not None and job.get_status() == "queued":
                job.delete()


def run_rq(requests, runner, connection, queue_name, job_timeout_s, poll_s=1.0):
    run = QueueRun(runner, connection, queue_name, job_timeout_s, poll_s)
    try:
        run.start(requests)
        run.follow()
    except EvaluationAborted:
        run.abandon_queued()
        raise
    finally:
        runner.folder.save_jobs(run.slots)
    return run
