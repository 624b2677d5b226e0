"""Which target a form offers first: CUDA only where a GPU can serve it (a live worker on a GPU queue, or a GPU on
this host), else the CPU; KS_DEFAULT_DEVICE overrides both."""
import logging
from pathlib import Path

import redis
from django.conf import settings

from studio import queues

log = logging.getLogger(__name__)
GPU_QUEUES = ("gpu", "staff-gpu", "train")


def gpu_workers_live():
    """How many live workers listen on a GPU queue (0 when Redis cannot be reached)."""
    from rq import Worker

    from training.evaluation.queues import live_workers
    try:
        connection = queues.connection()
        live = live_workers(connection)
        return sum(1 for w in Worker.all(connection=connection)
                   if w.name in live and set(w.queue_names()) & set(GPU_QUEUES))
    except redis.RedisError as exc:
        log.warning("default device: Redis unreachable (%s); judging by this host alone", exc)
        return 0


def gpu_on_this_host():
    """Whether the NVIDIA driver sees a GPU here (its device nodes), without touching CUDA in the web process."""
    return Path("/dev/nvidiactl").exists() and any(Path("/dev").glob("nvidia[0-9]*"))


def default_device():
    """'cuda' or 'cpu': what a form's target defaults to."""
    if settings.KS_DEFAULT_DEVICE:
        return settings.KS_DEFAULT_DEVICE
    return "cuda" if gpu_on_this_host() or gpu_workers_live() else "cpu"
