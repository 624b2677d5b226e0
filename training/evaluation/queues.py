"""RQ for evaluations: the connection, the queue of a device, enqueueing an episode, and whether a job can still finish.

Queues are the studio's staff queues (studio/queues.py): `staff-gpu` for --device cuda, `staff-cpu` for --device cpu
(C++ kernels need no GPU worker, and a CPU evaluation must not hold a GPU worker); the studio's users' queues (`gpu`,
`cpu`) never carry this package's episodes, so an evaluation never holds up a user. Workers are plain
`rq worker staff-gpu --url URL` processes (or the studio's runstudio and gpuworkers); they need this repository
importable and the sandbox's requirements (DESIGN.md).
"""

import logging
import os
import socket
from datetime import datetime, timedelta, timezone

log = logging.getLogger(__name__)
# A worker busy with a job beats every 30 s (rq's job monitoring interval); silence for longer means it died.
HEARTBEAT_GRACE = timedelta(seconds=90)
RESULT_TTL_S = 7 * 24 * 3600  # a finished episode waits this long for its coordinator (one killed, then resumed)


class QueueUnavailable(Exception):
    """Redis cannot be reached; the message says how to run without it."""


def queue_name(device):
    """The queue of this package's episodes (evaluation, synthesis) on DEVICE."""
    return "staff-gpu" if device == "cuda" else "staff-cpu"


def connect(url):
    from redis import Redis
    from redis.exceptions import RedisError

    try:
        connection = Redis.from_url(url)
        connection.ping()
    except (RedisError, ValueError) as exc:
        raise QueueUnavailable(
            f"cannot reach Redis at {url} ({exc}): start it, fix --redis/REDIS_URL, "
            f"or run the episodes here with --in-process"
        ) from None
    return connection


def get_queue(connection, name):
    from rq import Queue

    return Queue(name, connection=connection)


def enqueue(queue, func, payload, job_id, timeout_s, description):
    return queue.enqueue(
        func,
        payload,
        job_id=job_id,
        job_timeout=int(timeout_s),
        result_ttl=RESULT_TTL_S,
        failure_ttl=RESULT_TTL_S,
        description=description,
    )


def fetch(connection, job_id):
    from rq.exceptions import NoSuchJobError
    from rq.job import Job

    if not job_id:
        return None
    try:
        return Job.fetch(job_id, connection=connection)
    except NoSuchJobError:
        return None


def process_alive(pid):
    """Whether a process of this host with PID exists (one of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def live_workers(connection, grace=HEARTBEAT_GRACE):
    """Names of the workers alive now: on this host by their pid, elsewhere by a recent heartbeat."""
    from rq import Worker

    now, here, live = datetime.now(timezone.utc), socket.gethostname(), set()
    for worker in Worker.all(connection=connection):
        if worker.hostname == here and worker.pid:
            if process_alive(worker.pid):
                live.add(worker.name)
            continue
        beat = worker.last_heartbeat
        if beat is not None and beat.tzinfo is None:
            beat = beat.replace(tzinfo=timezone.utc)
        if beat is None or now - beat <= grace:
            live.add(worker.name)
    return live


def listeners(connection, name, live):
    """How many live workers listen on queue NAME."""
    from rq import Worker

    return sum(1 for w in Worker.all(connection=connection) if w.name in live and name in w.queue_names())


def job_state(job, queue_ids, live):
    """What a job of an earlier or the current run can still give: 'finished' (its result waits), 'pending'
    (queued or running on a live worker), 'failed' (with its error), or 'lost' (gone, or its worker died)."""
    if job is None:
        return "lost", "the job is gone from Redis"
    status = job.get_status()
    if status == "finished":
        return "finished", ""
    if status == "failed":
        result = job.latest_result()
        return "failed", ((result.exc_string or "").strip() if result else "") or "the job failed"
    if status in ("queued", "deferred", "scheduled"):
        return ("pending", "") if status != "queued" or job.id in queue_ids else ("lost", "not in its queue")
    if status == "started":
        if job.worker_name and job.worker_name not in live:
            return "lost", f"its worker {job.worker_name} died"
        return "pending", ""
    return "lost", f"the job was {status}"
