"""A synthesis run: candidates in parallel (worker processes driving jailed probes, or RQ jobs on a queue), results
appended as they come, resumable (the same --out continues where it stopped), with a progress bar.
"""

import json
import logging
import multiprocessing
import os
import time
import uuid
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

from sandbox.jsonl import append_jsonl, read_jsonl, repair_jsonl

from training.evaluation.queues import queue_name
from training.synthesis import dataset
from training.synthesis.dataset import Attempt, DatasetError, RunConfig
from training.synthesis.dedup import LocalClaims, RedisClaims, kernelbench_index
from training.synthesis.filters import FilterVerdict
from training.synthesis.pipeline import synthesize_one
from training.synthesis.seeds import catalogue

log = logging.getLogger(__name__)
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"


def run_job(index, run_json, run_id, claims_url, claims_key):
    """The RQ job: one candidate on a worker of the queue; returns the Attempt as JSON."""
    run = RunConfig.from_json(run_json)
    return synthesize_one(index, run, RedisClaims(claims_url, claims_key), run_id).to_json()


class Run:
    """The files of one run and its state: settings, kept tasks, attempts, the claims of kept fingerprints."""

    def __init__(self, out, config):
        self.files = dataset.paths(out)
        self.files["tasks"].parent.mkdir(parents=True, exist_ok=True)
        stored = self._stored_settings()
        if stored is not None:
            saved = RunConfig.from_json(stored["config"])
            if saved.identity() != config.identity():
                changed = sorted(k for k, v in config.identity().items() if saved.identity().get(k) != v)
                raise DatasetError(
                    f"{out} was started with other settings ({', '.join(changed)} differ): rerun with "
                    f"the settings in {self.files['run']} to continue it, or choose another --out"
                )
            self.run_id = stored["run_id"]
        else:
            self.run_id = uuid.uuid4().hex[:8]
            tmp = self.files["run"].with_suffix(".tmp")
            tmp.write_text(
                json.dumps({"run_id": self.run_id, "config": config.to_json(), "started": time.time()}, indent=2)
            )
            os.replace(tmp, self.files["run"])
        self.config = config
        for kind in ("tasks", "attempts"):  # a line cut by a crash must not glue itself to the next append
            repair_jsonl(self.files[kind])
        self.tasks = dataset.read_tasks(self.files["tasks"])
        self.attempts = [Attempt.from_json(row) for row in read_jsonl(self.files["attempts"])]
        # A kept task whose attempt line was lost in a crash is still kept: the tasks file is the truth.
        logged = {a.index for a in self.attempts if a.kept}
        for task in self.tasks:
            index = int(task.task_id.rsplit("-", 1)[1])
            if index not in logged:
                self.attempts.append(
                    Attempt(
                        index,
                        task.name,
                        task.seeds,
                        task.op_classes,
                        task.fusion_depth,
                        task.composer,
                        True,
                        task.verdicts,
                        eager_ms=task.eager_ms,
                    )
                )
        self.next_index = max((a.index for a in self.attempts), default=-1) + 1
        self.deadline = None

    def _stored_settings(self):
        path = self.files["run"]
        if not path.exists():
            if self.files["tasks"].exists() and self.files["tasks"].stat().st_size:
                raise DatasetError(
                    f"{self.files['tasks']} exists but is not a synthesis run (no {path.name}): choose another --out"
                )
            return None
        try:
            return json.loads(path.read_text())
        except ValueError:
            raise DatasetError(f"{path} is not JSON: restore it or choose another --out") from None

    def initial_claims(self):
        claims = dict(kernelbench_index(self.config.kernelbench or None))
        claims.update({t.fingerprint: t.task_id for t in self.tasks})
        return claims

    def record(self, attempt):
        if attempt.kept and attempt.task:
            append_jsonl(self.files["tasks"], attempt.task)
            self.tasks.append(dataset.TaskRecord.from_json(attempt.task))
        row = attempt.to_json()
        row["task"] = None  # the source lives in the tasks file once
        append_jsonl(self.files["attempts"], row)
        self.attempts.append(attempt)

    def write_summary(self, wall_s=None):
        summary = dataset.summarize(self.attempts, self.tasks, wall_s, self.config)
        tmp = self.files["summary"].with_suffix(".tmp")
        tmp.write_text(json.dumps(summary, indent=2))
        os.replace(tmp, self.files["summary"])
        return summary


class Progress:
    """tqdm over kept tasks, with attempts and the commonest removal in the postfix; silent when disabled."""

    def __init__(self, total, initial, enabled):
        self.bar = None
        if enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=total, initial=min(initial, total), unit="task", desc="kept", dynamic_ncols=True)

    def update(self, run, kept, note=""):
        if self.bar is None:
            return
        if kept:
            self.bar.update(1)
        removed = dataset.summarize(run.attempts[-200:], [])["removed_by"]
        top = max(removed, key=removed.get) if removed else "-"
        self.bar.set_postfix_str(f"attempts {len(run.attempts)}, top removal {top}{note}")

    def close(self):
        if self.bar is not None:
            self.bar.close()


def synthesize(
    out,
    config,
    count,
    workers=1,
    backend="local",
    queue=None,
    redis_url=None,
    max_attempts=None,
    progress=True,
    time_limit_s=None,
):
    """Run (or continue) synthesis into OUT until COUNT tasks are kept (or MAX_ATTEMPTS candidates were tried, or
    TIME_LIMIT_S passed: no new candidate starts after it); returns the summary."""
    if count < 1 or workers < 1:
        raise ValueError("--count and --workers must be at least 1")
    run = Run(out, config)
    catalogue()  # crawl once here, not in every worker
    max_attempts = max_attempts or count * 50
    started = time.monotonic()
    run.deadline = started + time_limit_s if time_limit_s else None
    bar = Progress(count, len(run.tasks), progress)
    try:
        if backend == "rq":
            _run_rq(
                run,
                count,
                workers,
                queue or queue_name(config.device),
                redis_url or os.environ.get("REDIS_URL") or DEFAULT_REDIS_URL,
                max_attempts,
                bar,
            )
        elif backend == "local":
            _run_local(run, count, workers, max_attempts, bar)
        else:
            raise ValueError(f"backend must be local or rq, not {backend!r}")
    finally:
        bar.close()
        summary = run.write_summary(round(time.monotonic() - started, 2))
    return summary


def _budget_left(run, count, max_attempts, in_flight):
    return (
        len(run.tasks) < count
        and len(run.attempts) + in_flight < max_attempts
        and (run.deadline is None or time.monotonic() < run.deadline)
    )


def _run_local(run, count, workers, max_attempts, bar):
    # Spawned, not forked: the workers start clean (no inherited threads or torch state), load the cached catalogue.
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager, ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        claims = LocalClaims(manager, run.initial_claims())
        pending = set()
        while True:
            while len(pending) < workers and _budget_left(run, count, max_attempts, len(pending)):
                pending.add(pool.submit(synthesize_one, run.next_index, run.config, claims, run.run_id))
                run.next_index += 1
            if not pending:
                return
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                attempt = future.result()
                run.record(attempt)
                bar.update(run, attempt.kept)


def _run_rq(run, count, workers, queue_name, redis_url, max_attempts, bar):
    import redis
    from rq import Queue
    from rq.job import Job, JobStatus

    connection = redis.Redis.from_url(redis_url)
    try:
        connection.ping()
    except redis.RedisError as exc:
        raise DatasetError(
            f"Redis at {redis_url} is not reachable ({exc}): start it, set REDIS_URL, or use --backend local"
        ) from None
    key = f"ks:synthesis:{run.run_id}:claims"
    claims = RedisClaims(redis_url, key)
    claims.reset(run.initial_claims())
    queue = Queue(queue_name, connection=connection)
    timeout = int(run.config.timeout_s * 4 * (run.config.max_resizes + 1)) + 60
    pending, waited_since = {}, time.monotonic()
    while True:
        while len(pending) < workers and _budget_left(run, count, max_attempts, len(pending)):
            index = run.next_index
            job = queue.enqueue(
                run_job,
                index,
                run.config.to_json(),
                run.run_id,
                redis_url,
                key,
                job_id=f"ks-synth-{run.run_id}-{index:06d}",
                job_timeout=timeout,
                result_ttl=3600,
                failure_ttl=3600,
            )
            pending[job.id] = index
            run.next_index += 1
        if not pending:
            return
        time.sleep(0.3)
        statuses = dict(
            zip(pending, (j.get_status() if j else None for j in Job.fetch_many(list(pending), connection=connection)))
        )
        finished = False
        for job_id, status in statuses.items():
            if status not in (JobStatus.FINISHED, JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED, None):
                continue
            index = pending.pop(job_id)
            attempt = _job_attempt(Job.fetch(job_id, connection=connection) if status else None, status, index)
            run.record(attempt)
            bar.update(run, attempt.kept)
            finished = True
        if finished:
            waited_since = time.monotonic()
        elif time.monotonic() - waited_since > 30 and all(s == JobStatus.QUEUED for s in statuses.values()):
            bar.update(run, False, f" (nothing started for 30 s: is `rq worker {queue_name}` running?)")


def _job_attempt(job, status, index):
    from rq.job import JobStatus

    if status == JobStatus.FINISHED:
        return Attempt.from_json(job.return_value())
    reason = "the RQ job vanished from Redis" if job is None else f"the RQ job ended {status}"
    if job is not None and job.latest_result() is not None and job.latest_result().exc_string:
        reason += ": " + job.latest_result().exc_string.strip().splitlines()[-1][:500]
    verdict = FilterVerdict("runs", False, reason)
    return Attempt(index, "", [], [], 0, "", False, [verdict.to_json()], "runs")
