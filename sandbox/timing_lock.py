"""The host's timing lock per device: measurements of concurrent evaluations take turns, so that one episode's
timed kernels do not share the GPU (or the CPU's cores) with another's.

The harness creates the lock file (world-readable); the jailed reference worker, which cannot write there,
locks it through a read-only descriptor, which flock(2) allows. The lock goes with the process that holds it:
a worker that dies or is killed releases it.
"""
import fcntl
import logging
import os
from contextlib import contextmanager

from sandbox import settings

log = logging.getLogger(__name__)


def lock_path(device):
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "all") if device == "cuda" else "cpu"
    return settings.cache_dir() / "locks" / f"timing-{device}-{visible.replace(',', '_') or 'none'}.lock"


def ensure(device):
    """Create the lock file where jailed workers can open it (folders 755, file 644); returns its path."""
    path = lock_path(device)
    if path.exists():  # made by this or another user of the cache: left as it is
        return path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(path.parent, 0o755)
        path.touch()
        os.chmod(path, 0o644)
    except OSError as exc:  # a cache this user may not write: time unlocked, as exclusive() says
        log.warning("cannot create the timing lock %s (%s)", path, exc)
    return path


@contextmanager
def exclusive(device):
    """Hold DEVICE's timing lock; without a lock file (the harness made none) it times unlocked, and says so."""
    try:
        fh = open(lock_path(device), "r")
    except OSError as exc:
        log.warning("timing without the %s timing lock (%s): concurrent evaluations may slow each other", device, exc)
        yield
        return
    with fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
