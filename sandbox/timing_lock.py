"""The host's timing lock per device: measurements of concurrent evaluations take turns, so that one episode's
timed kernels do not share the GPU (or the CPU's cores) with another's. And the host's cores split in two: on a host
of several cores, CUDA timing runs on cores of its own, and builds and everything else of the workers on the others,
so a build beside a timing cannot slow the launches being timed (issue 17: a 30 us baseline moved 0.027 -> 0.064 ms
with builds beside it).

GPU work that is not timed (validating a problem, loading a solution, correctness trials, profiles) holds the lock
shared: a timing waits until no other evaluation runs kernels, and none starts until it is done (on the H100, trials
of an 8192x8192 problem beside a 1 us problem's baseline measured it at 38 us rather than 1.2 us). A gate gives a
waiting timing precedence over new shared holders, so a stream of trials cannot starve it; shared holders that may
be waited on by a holder inside its section (the reference, answering a trial the harness holds the lock for) skip
the gate, so they never wait behind a timing that waits for them.

The harness creates the lock files (world-readable); the jailed reference worker, which cannot write there,
locks them through read-only descriptors, which flock(2) allows. The lock goes with the process that holds it:
a worker that dies or is killed releases it. Core masks are the calling thread's (sched_setaffinity of thread 0):
what it starts inherits them, other threads of the process keep theirs.
"""

import fcntl
import hashlib
import logging
import os
import time
from contextlib import contextmanager, nullcontext

from sandbox import settings

log = logging.getLogger(__name__)


# Cores kept for timing: one per eight the process may use, from the last; none below MIN_CORES (a two-core machine
# cannot spare one, and timing there is on the CPU anyway). Counted from the mask the process started with, so that a
# thread moved off the timing cores still finds them.
MIN_CORES = 4
_STARTED_ON = frozenset(os.sched_getaffinity(0))


def timing_cores():
    """The cores CUDA timing runs on (the last eighth of those this process started on), or an empty set."""
    allowed = sorted(_STARTED_ON)
    if len(allowed) < MIN_CORES:
        return set()
    return set(allowed[-max(1, len(allowed) // 8) :])


def other_cores():
    """The cores for everything but timing (builds, trials, workers starting): all but timing_cores()."""
    return set(_STARTED_ON - timing_cores()) or set(_STARTED_ON)


@contextmanager
def pinned(cores):
    """Run the calling thread (and what it starts meanwhile) on CORES; the mask it had afterwards."""
    before = os.sched_getaffinity(0)
    cores = set(cores) & _STARTED_ON
    if not cores or cores == before:
        yield
        return
    os.sched_setaffinity(0, cores)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def off_timing_cores():
    """Keep what runs here (a build) off the cores timing uses."""
    return pinned(other_cores()) if timing_cores() else nullcontext()


def on_timing_cores(device):
    """Run the calling thread's timing on the timing cores (CUDA: the thread that launches what is timed). The CPU
    target's timing keeps its cores: its compute threads were started on them. For a process that times while
    another holds the lock for it (the candidate worker, whose harness holds it)."""
    return pinned(timing_cores()) if device == "cuda" else nullcontext()


def leave_timing_cores():
    """Move the calling thread, for good, off the cores timing uses: a worker's first step (what it builds and
    starts inherits it; its timing returns to them under exclusive())."""
    if timing_cores():
        os.sched_setaffinity(0, other_cores())


def lock_path(device):
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "all") if device == "cuda" else "cpu"
    return settings.cache_dir() / "locks" / f"timing-{device}-{visible.replace(',', '_') or 'none'}.lock"


def gate_path(device):
    """The gate a timing holds while it waits for shared holders to finish (see the module's doc)."""
    return lock_path(device).with_suffix(".gate")


def ensure(device):
    """Create the lock files where jailed workers can open them (folders 755, files 644); returns the lock's path."""
    path = lock_path(device)
    for each in (path, gate_path(device)):
        if each.exists():  # made by this or another user of the cache: left as it is
            continue
        try:
            each.parent.mkdir(parents=True, exist_ok=True)
            os.chmod(each.parent, 0o755)
            each.touch()
            os.chmod(each, 0o644)
        except OSError as exc:  # a cache this user may not write: time unlocked, as exclusive() says
            log.warning("cannot create the timing lock %s (%s)", each, exc)
    return path


def _open(path):
    try:
        return open(path, "r")
    except OSError:
        return None


@contextmanager
def exclusive(device, pin=True):
    """Hold DEVICE's timing lock, on CUDA on the timing cores (PIN false: on the cores the thread has); without a
    lock file (the harness made none) it times unlocked, and says so."""
    fh = _open(lock_path(device))
    if fh is None:
        log.warning(
            "timing without the %s timing lock (%s): concurrent evaluations may slow each other",
            device,
            lock_path(device),
        )
        yield
        return
    gate = _open(gate_path(device))
    with fh:
        if gate is not None:  # new shared holders wait at the gate while this waits for the current ones
            fcntl.flock(gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(fh, fcntl.LOCK_EX)
        finally:
            if gate is not None:
                gate.close()  # closing releases the gate's lock
        try:
            with on_timing_cores(device) if pin else nullcontext():
                yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@contextmanager
def shared(device, gate=True):
    """Hold DEVICE's timing lock shared, for GPU work that is not timed: no timing runs meanwhile. GATE false for a
    holder that another shared holder may be waiting on (see the module's doc). The CPU target likewise: a trial's
    compute beside a timing would take its cores and memory bandwidth."""
    fh = _open(lock_path(device))
    if fh is None:
        yield
        return
    with fh:
        door = _open(gate_path(device)) if gate else None
        if door is not None:
            with door:
                fcntl.flock(door, fcntl.LOCK_EX)
                fcntl.flock(fh, fcntl.LOCK_SH)
        else:
            fcntl.flock(fh, fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@contextmanager
def measuring_once(key, device, wait_s):
    """Held by the one evaluation that measures the baselines of KEY (a problem and timing config) on DEVICE; the
    others wait for it, then find its cache entry rather than measuring again. Concurrent evaluations of one problem
    (a group of rollouts, a user's repeated runs) so share one set of baselines: torch.compile's autotuning picks
    between near-tied kernels by noise, so two fresh compiles of a 1 us problem can differ by 40%. After WAIT_S the
    waiter measures on its own rather than stall."""
    digest = hashlib.sha256(f"{device}|{key}".encode()).hexdigest()[:32]
    path = settings.cache_dir() / "locks" / f"baselines-{digest}.lock"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(path, "a")
    except OSError as exc:
        log.warning("no baseline lock at %s (%s): concurrent evaluations may each measure", path, exc)
        yield
        return
    with fh:
        deadline = time.monotonic() + wait_s
        held = False
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held = True
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    log.warning("baselines of %s still being measured after %.0f s: measuring them here", key, wait_s)
                    break
                time.sleep(0.1)
        try:
            yield
        finally:
            if held:
                fcntl.flock(fh, fcntl.LOCK_UN)


class SharedHold:
    """shared(DEVICE) taken and let go between the stages of a sequence (an evaluation's), not around one block."""

    def __init__(self, device):
        self.device, self._held = device, None

    @property
    def held(self):
        return self._held is not None

    def take(self):
        if self._held is None:
            hold = shared(self.device)
            hold.__enter__()
            self._held = hold

    def release(self):
        if self._held is not None:
            hold, self._held = self._held, None
            hold.__exit__(None, None, None)
