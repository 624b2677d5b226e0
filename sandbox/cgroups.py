"""Kernel-enforced memory and process limits for one jailed process tree: a cgroup leaf per process start.

cgroup v2 where this worker may create child groups with the memory and pids controllers (the root of the
hierarchy, or a delegated group named by KS_SANDBOX_CGROUP); otherwise cgroup v1's memory and pids hierarchies
(hybrid hosts). The leaf is made before the process starts, joined by it before exec (so nothing it forks escapes),
read after it ends (was it killed for memory?) and removed. Where neither works, `hierarchy()` says why and the
jail falls back to rlimits and the parent's memory watchdog.
"""

import functools
import logging
import os
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from sandbox import settings

log = logging.getLogger(__name__)
PARENT = "kernel-studio-sandbox"


class Unavailable(Exception):
    """No cgroup can be made for jailed processes on this host; the message says why and what would fix it."""


@dataclass(frozen=True)
class Hierarchy:
    """Where leaves are made: v2, one folder for both controllers; v1, one folder per controller."""

    version: int
    memory: Path
    pids: Path

    def describe(self):
        return "cgroup2" if self.version == 2 else "cgroup1"


def _mounts():
    """{fstype or v1 controller: mount point} from this process's mount table."""
    found = {}
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            left, right = line.split(" - ", 1)
            point = left.split()[4]
            fstype, _, options = right.split()[:3]
            if fstype == "cgroup2":
                found.setdefault("cgroup2", point)
            elif fstype == "cgroup":
                for option in options.split(","):
                    found.setdefault(option, point)
    return found


def _own_paths():
    """{controller or '' (v2): this process's cgroup path}."""
    paths = {}
    with open("/proc/self/cgroup") as fh:
        for line in fh:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                paths[name] = path
    return paths


def _write(path, value):
    with open(path, "w") as fh:
        fh.write(str(value))


def _probe(hierarchy):
    """Make and remove one leaf: proves this process may create groups and set their limits there."""
    leaf = Leaf(hierarchy, memory_mb=64, max_processes=8)
    leaf.remove()


def _v2(mounts, own):
    """The worker's own group first (a delegated one), else the hierarchy's root (a VM or a host where this
    worker is root): the first that can hold leaves with the memory and pids controllers."""
    if settings.CGROUP:
        bases = [Path(settings.CGROUP)]
    else:
        root = Path(mounts["cgroup2"])
        bases = list(dict.fromkeys([Path(str(root) + own.get("", "/")), root]))
    reasons = []
    for base in bases:
        try:
            return _v2_at(base)
        except Unavailable as exc:
            reasons.append(str(exc))
    raise Unavailable("; ".join(reasons))


def _v2_at(base):
    controllers = (base / "cgroup.controllers").read_text().split()
    missing = {"memory", "pids"} - set(controllers)
    if missing:
        raise Unavailable(f"cgroup v2 at {base} lacks the {', '.join(sorted(missing))} controller(s)")
    parent = base / PARENT
    try:
        enabled = (base / "cgroup.subtree_control").read_text().split()
        if not {"memory", "pids"} <= set(enabled):
            _write(base / "cgroup.subtree_control", "+memory +pids")
        parent.mkdir(exist_ok=True)
        _write(parent / "cgroup.subtree_control", "+memory +pids")
    except OSError as exc:
        raise Unavailable(
            f"cgroup v2 at {base}: cannot enable memory and pids for child groups ({exc.strerror}); "
            f"set KS_SANDBOX_CGROUP to a delegated cgroup that holds no process"
        ) from None
    return Hierarchy(2, parent, parent)


def _v1(mounts, own):
    if "memory" not in mounts or "pids" not in mounts:
        raise Unavailable("no cgroup v2 with memory and pids, and no cgroup v1 memory and pids hierarchies")
    memory = Path(mounts["memory"] + own.get("memory", "/")) / PARENT
    pids = Path(mounts["pids"] + own.get("pids", "/")) / PARENT
    try:
        memory.mkdir(exist_ok=True)
        pids.mkdir(exist_ok=True)
    except OSError as exc:
        raise Unavailable(f"cgroup v1: cannot create {memory.parent}/{PARENT} ({exc.strerror})") from None
    return Hierarchy(1, memory, pids)


@functools.lru_cache(maxsize=1)
def hierarchy():
    """The hierarchy jailed processes get leaves in; Unavailable with the reason otherwise."""
    if settings.CGROUP == "off":
        raise Unavailable("KS_SANDBOX_CGROUP=off")
    mounts, own = _mounts(), _own_paths()
    reasons = []
    for make in (_v2, _v1):
        if make is _v2 and "cgroup2" not in mounts:
            reasons.append("no cgroup v2 mount")
            continue
        try:
            found = make(mounts, own)
            _probe(found)
            _sweep(found)
            return found
        except (Unavailable, OSError) as exc:
            reasons.append(str(exc) if isinstance(exc, Unavailable) else f"{make.__name__[1:]}: {exc}")
    raise Unavailable("; ".join(reasons))


def available():
    """(description such as 'cgroup1', '') or (None, the reason there is none)."""
    try:
        return hierarchy().describe(), ""
    except Unavailable as exc:
        return None, str(exc)


def _sweep(found):
    """Remove leaves of workers that are gone (rmdir refuses a group that still holds processes)."""
    for folder in {found.memory, found.pids}:
        for leaf in folder.glob("jail-*"):
            owner = int(leaf.name.split("-")[1])
            if owner != os.getpid() and not Path(f"/proc/{owner}").exists():
                try:
                    leaf.rmdir()
                except OSError:
                    pass


def sweep():
    """Remove the empty leaves that killed workers left behind; nothing where no hierarchy is in use."""
    try:
        _sweep(hierarchy())
    except Unavailable:
        pass


class Leaf:
    """One cgroup (per controller on v1) with a memory and a process limit, for one jailed process tree."""

    def __init__(self, found, memory_mb, max_processes):
        self.hierarchy = found
        name = f"jail-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.folders = [found.memory / name] + ([found.pids / name] if found.version == 1 else [])
        for folder in self.folders:
            folder.mkdir()
        memory = self.folders[0]
        limit = memory_mb << 20
        if found.version == 2:
            _write(memory / "memory.max", limit)
            if (memory / "memory.swap.max").exists():
                _write(memory / "memory.swap.max", 0)
            _write(memory / "pids.max", max_processes or "max")
        else:
            _write(memory / "memory.limit_in_bytes", limit)
            if (memory / "memory.memsw.limit_in_bytes").exists():
                _write(memory / "memory.memsw.limit_in_bytes", limit)  # no escape into swap
            _write(self.folders[1] / "pids.max", max_processes or "max")
        self.procs_files = [str(folder / "cgroup.procs") for folder in self.folders]

    def launcher(self):
        """The argv prefix that starts a command inside this group: a shell writes its own pid into each group's
        cgroup.procs, then execs the command (its descendants follow). A process, not a preexec_fn: Python code
        between fork and exec takes the interpreter's locks (logging's, the import lock) in the child and the
        parent, which deadlocks a harness that other threads are using (parallel evaluations, rollouts)."""
        script = " && ".join(f'echo $$ > "${i + 1}"' for i in range(len(self.procs_files)))
        return ["/bin/sh", "-c", f'{script} && shift {len(self.procs_files)} && exec "$@"', "ks-cgroup-join"] + list(
            self.procs_files
        )

    def pids(self):
        try:
            return [int(p) for p in (self.folders[0] / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def oom_killed(self):
        """Whether the kernel killed a process of this group for going over its memory limit."""
        memory = self.folders[0]
        try:
            if self.hierarchy.version == 2:
                events = dict(line.split() for line in (memory / "memory.events").read_text().splitlines())
                return int(events.get("oom_kill", 0)) > 0
            fields = dict(line.split() for line in (memory / "memory.oom_control").read_text().splitlines())
            if "oom_kill" in fields:
                return int(fields["oom_kill"]) > 0
            return int((memory / "memory.failcnt").read_text()) > 0
        except (OSError, ValueError):
            return False

    def kill(self):
        """SIGKILL every process of the group, including any that left the jail's session or process group."""
        kill_file = self.folders[0] / "cgroup.kill"
        if self.hierarchy.version == 2 and kill_file.exists():
            try:
                _write(kill_file, 1)
                return
            except OSError:
                pass
        for _ in range(50):  # a fork between the read and the kill adds a process: read again
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def remove(self):
        """Kill what is left and remove the group (waiting briefly for the kernel to reap the dead)."""
        self.kill()
        for folder in self.folders:
            for _ in range(100):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
            else:
                log.warning("cgroup %s still holds processes; left for the next sweep", folder)
