"""The queue layout (which queue a job of each kind and device goes to), enqueueing with our own job ids (django-rq's
on-commit mode returns None), where a waiting job stands, and stopping a job.

Users' jobs and staff jobs never share a queue, so a user's upload never waits behind a KernelBench evaluation:

- `gpu`: users' uploads, runs, edits and packages on the CUDA target; users' GPU workers (`gpuworkers gpu`).
- `cpu`: the same on the CPU target; users' CPU workers (`rqworker cpu`).
- `staff-gpu`: KernelBench evaluations and task synthesis on CUDA, and the training package's own RQ episodes
  (`evaluate --redis`, `synthesize --backend rq`, RL rollouts); staff GPU workers (`gpuworkers staff-gpu gpu`).
- `staff-cpu`: evaluations, synthesis and training runs on the CPU target; staff CPU workers
  (`rqworker staff-cpu cpu`).
- `train`: training runs on GPUs (the learner); the trainer (`rqworker train`).

A users' worker serves its users' queue only: RQ cannot take a job back from a worker, so a staff job of hours that
one picked up would hold it for hours. A staff worker serves its staff queue first, then the users' queue of its
device: RQ workers take queues in order, so it helps users only while no staff job waits. The training package names
the staff queues itself (training/evaluation/queues.py, its synthesis runner, RL rollouts); a test pins that the two
agree.
"""

import uuid
from dataclasses import dataclass

USERS = {"cuda": "gpu", "cpu": "cpu"}
STAFF = {"cuda": "staff-gpu", "cpu": "staff-cpu"}
# A CPU training run's learner is small (the toy configs); a GPU one needs the trainer's GPUs.
LEARNERS = {"cuda": "train", "cpu": "staff-cpu"}
KINDS = {
    "validation": USERS,
    "run": USERS,
    "edit": USERS,
    "package": USERS,
    "evaluation": STAFF,
    "synthesis": STAFF,
    "training": LEARNERS,
}
NAMES = ("gpu", "cpu", "staff-gpu", "staff-cpu", "train")


def queue_name(kind, device):
    """The queue a job of KIND ('run', 'evaluation', ...) on DEVICE ('cuda' or 'cpu') goes to."""
    if kind not in KINDS:
        raise ValueError(f"no queue for jobs of kind {kind!r}: add it to studio.queues.KINDS ({', '.join(KINDS)})")
    return KINDS[kind]["cuda" if device == "cuda" else "cpu"]


def enqueue(kind, device, func, *args, owner_id=None, timeout=3600, job_id=None):
    """Queue FUNC(*ARGS) as a job of KIND on DEVICE's queue; its id (ours, set before enqueueing: JOB_ID where the
    caller must find the job again without storing its id, else a random one)."""
    import django_rq

    job_id = job_id or uuid.uuid4().hex
    django_rq.get_queue(queue_name(kind, device)).enqueue(
        func, *args, job_id=job_id, job_timeout=timeout, result_ttl=3600, meta={"owner_id": owner_id}
    )
    return job_id


def connection():
    import django_rq

    return django_rq.get_connection(NAMES[0])  # every queue lives on REDIS_URL


def fetch(job_id):
    """The job with JOB_ID, whichever queue holds it, or None."""
    from rq.exceptions import NoSuchJobError
    from rq.job import Job

    if not job_id:
        return None
    try:
        return Job.fetch(job_id, connection=connection())
    except NoSuchJobError:
        return None


@dataclass(frozen=True)
class Waiting:
    """A queued job's place: how many jobs are ahead of it in which queue."""

    ahead: int
    queue: str


def waiting(job_id):
    """Where JOB_ID waits (a Waiting), or None once a worker took it (or it ended, or never was)."""
    job = fetch(job_id)
    if job is None or job.get_status() != "queued":
        return None
    position = job.get_position()
    return None if position is None else Waiting(position, job.origin)


def stop(job_id):
    """Stop JOB_ID: cancel it if still queued, stop its work horse if running (the worker then ends every process
    the job started and removes its scratch folder: studio.workers)."""
    from rq.command import send_stop_job_command
    from rq.exceptions import InvalidJobOperation, NoSuchJobError

    job = fetch(job_id)
    if job is None:
        return
    try:
        if job.get_status() == "started":
            send_stop_job_command(job.connection, job.id)
        else:
            job.cancel()
    except (InvalidJobOperation, NoSuchJobError):
        pass  # it finished meanwhile
