"""What a job leaves running: adopt it (a child subreaper), find it (our children), end it (SIGKILL, reaped)."""

import ctypes
import logging
import signal
import time

import psutil

log = logging.getLogger(__name__)
PR_SET_CHILD_SUBREAPER = 36


def become_subreaper():
    """Processes orphaned below this one (a killed work horse's jails, a daemonized build) become its children rather
    than init's, where end_children() finds them."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed: this needs Linux 3.4 or later")


def children():
    """Pids of this process's children now."""
    return {child.pid for child in psutil.Process().children()}


def end_children(keep=(), patience_s=30.0):
    """SIGKILL every child of this process but those in KEEP, with everything under them, and reap them; again while
    any are left (a killed child's own children are handed to us, the subreaper). Returns how many were ended."""
    me, ended = psutil.Process(), set()
    deadline = time.monotonic() + patience_s
    while True:
        left = [child for child in me.children() if child.pid not in keep]
        if not left:
            return len(ended)
        if time.monotonic() > deadline:
            log.warning(
                "processes %s did not die within %.0f s of SIGKILL (uninterruptible I/O?); left to init",
                [child.pid for child in left],
                patience_s,
            )
            return len(ended)
        family = []
        for child in left:
            try:
                family += [child] + child.children(recursive=True)
            except psutil.NoSuchProcess:
                family.append(child)
        for member in family:
            try:
                member.send_signal(signal.SIGKILL)  # psutil checks the pid was not reused meanwhile
            except psutil.NoSuchProcess:
                pass
        ended.update(member.pid for member in family)
        psutil.wait_procs(left, timeout=max(0.1, deadline - time.monotonic()))
