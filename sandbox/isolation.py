"""Running untrusted code: a fresh jailed subprocess in its own namespaces and allow-listed root, with limits.

The parent side of the jail. Every build and run of solution (and problem) code goes through `Jail`: bubblewrap
builds the namespaces and the new root (sandbox.jailfs) and loads the seccomp filter (sandbox.seccomp); a cgroup
leaf holds memory and processes (sandbox.cgroups); sandbox/jail.py sets rlimits and drops to the jail's own uid.
Output is captured head-and-tail, scrubbed of host paths (sandbox.scrub), so a flood cannot exhaust memory; a fault,
hang or memory blow-up ends that subprocess alone, and nothing it started outlives its jail.
"""

import functools
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from sandbox import cgroups, jailfs, seccomp, settings
from sandbox.errors import IsolationError
from sandbox.scrub import scrub

log = logging.getLogger(__name__)
INNER = Path(__file__).with_name("jail.py")
# Private folders are named KIND-PID-HEX: a folder whose creating process is gone is a straggler to sweep.
_FOLDER = re.compile(r"^[a-z]+-(\d+)-[0-9a-f]{12}$")


@functools.lru_cache(maxsize=1)
def _bwrap_problem():
    """Why bubblewrap cannot jail here, or '' when it can (probed once: a real jail running `true`)."""
    if not settings.USE_NAMESPACES:
        return "KS_SANDBOX_NAMESPACES=False"
    try:
        with tempfile.TemporaryDirectory(prefix="ks-probe-") as folder:
            argv = jailfs.bwrap_argv(folder, "cpu") + ["--", "true"]
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except jailfs.Unavailable as exc:
        return str(exc)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not start ({exc})"
    if proc.returncode != 0:
        return (
            f"bubblewrap cannot create namespaces here ({proc.stderr.strip()[-300:]}): run the worker as root "
            f"or with user namespaces enabled (docker: --cap-add SYS_ADMIN, apparmor=unconfined)"
        )
    return ""


def namespaces_available():
    """Whether jails get their own namespaces and allow-listed root (bubblewrap works on this host)."""
    return not _bwrap_problem()


def isolation_level():
    """What jails get on this host, for the verdict: e.g. 'bwrap+uid+seccomp+cgroup1'; a missing part says why."""
    parts, missing = [], []
    if namespaces_available():
        parts.append("bwrap")
    else:
        parts.append("none")
        missing.append(f"no namespaces: {_bwrap_problem()}")
    if os.geteuid() == 0:
        parts.append("uid")
    if namespaces_available():
        ok, why = seccomp.available()
        parts.append("seccomp" if ok else "no-seccomp")
        if not ok:
            missing.append(f"no seccomp: {why}")
    kind, why = cgroups.available()
    parts.append(kind or "rlimits")
    if not kind:
        missing.append(f"no cgroup, memory watched by polling: {why}")
    return "+".join(parts) + (f" ({'; '.join(missing)})" if missing else "")


def require_isolation():
    if settings.REQUIRE_ISOLATION and not namespaces_available():
        raise IsolationError(f"KS_SANDBOX_REQUIRE_ISOLATION=True but this host cannot jail: {_bwrap_problem()}")


def sweep_stale():
    """Remove private folders (and cgroup leaves) whose creating process is gone (a worker killed mid-evaluation);
    returns the folders removed."""
    cgroups.sweep()
    removed = []
    root = settings.work_root()
    for folder in root.iterdir() if root.is_dir() else []:
        match = _FOLDER.match(folder.name)
        if not match or _alive(int(match.group(1))):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def _alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


class OutputTail:
    """Keeps the first and last `limit // 2` bytes of a stream and counts what was dropped between."""

    def __init__(self, stream, limit):
        self.head, self.tail, self.dropped, self.limit = bytearray(), bytearray(), 0, limit
        self._thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self._thread.start()

    def _pump(self, stream):
        half = self.limit // 2
        for chunk in iter(lambda: stream.read(65536), b""):
            room = half - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            self.tail += chunk
            if len(self.tail) > half:
                self.dropped += len(self.tail) - half
                del self.tail[: len(self.tail) - half]
        stream.close()

    def text(self, wait=2.0):
        self._thread.join(wait)
        middle = f"\n[... {self.dropped} bytes of output truncated ...]\n" if self.dropped else ""
        return scrub(bytes(self.head).decode(errors="replace") + middle + bytes(self.tail).decode(errors="replace"))


@dataclass
class Exit:
    returncode: int | None
    timed_out: bool
    memory_exceeded: bool
    output: str
    seconds: float

    @property
    def signal(self):
        """The signal that ended the process: directly, or as the jail's init reports it (128 + N)."""
        if self.returncode is None:
            return None
        if self.returncode < 0:
            return -self.returncode
        if self.returncode > 128 and namespaces_available():
            return self.returncode - 128
        return None

    def describe(self):
        if self.timed_out:
            return f"timed out after {self.seconds:.1f} s"
        if self.memory_exceeded:
            return f"killed: memory above the sandbox's limit of {settings.MEMORY_MB} MB"
        if self.signal:
            try:
                name = signal.Signals(self.signal).name
                return f"killed by signal {name}" + (" (a system call the sandbox forbids)" if name == "SIGSYS" else "")
            except ValueError:
                return f"killed by signal {self.signal}"
        return f"exited with code {self.returncode}"


def environment(private, device, extra=None):
    """The environment of a process jailed with PRIVATE as its folder on DEVICE, EXTRA added."""
    home = str(private)
    env = {
        # `python` in a jailed shell is the harness's own interpreter (with torch), venv or not.
        "PATH": os.pathsep.join(
            [os.path.dirname(sys.executable), os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")]
        ),
        # The jailed uid has no passwd entry; getpass.getuser() (inductor's cache) reads these first.
        "USER": "ks-sandbox",
        "LOGNAME": "ks-sandbox",
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(jailfs.PACKAGE_ROOT),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "XDG_CACHE_HOME": f"{home}/.cache",
        "CUDA_CACHE_PATH": f"{home}/.nv",
        "TORCH_EXTENSIONS_DIR": f"{home}/torch_extensions",
        "TRITON_CACHE_DIR": f"{home}/.triton",
        "TORCHINDUCTOR_CACHE_DIR": f"{home}/.inductor",
        "MAX_JOBS": str(settings.MAX_JOBS),
        "OMP_NUM_THREADS": str(settings.CPU_THREADS),
        "KS_CPU_THREADS": str(settings.CPU_THREADS),
        "KS_DEVICE": device,
        # The worker's cache is the harness's (baselines, the timing lock), whatever HOME the jail gives it;
        # inside the jail only what the evaluation exposes of it exists.
        "KS_CACHE_DIR": str(settings.cache_dir()),
    }
    for name in (
        "CUDA_VISIBLE_DEVICES",
        "CUDA_HOME",
        "CUDA_PATH",
        "LD_LIBRARY_PATH",
        "TORCH_CUDA_ARCH_LIST",
        "CXX",
        "CC",
        "OPENBLAS_CORETYPE",
        "OPENBLAS_L2_SIZE",
        "KS_CACHE_DIR",
        "KS_SHAPE_TRIAL_MEMORY_SHARE",
        "KS_STALE_BASELINE_RATIO",
        "KS_INLINE_SPLIT_CUDA",
        "KS_INLINE_LIGHT_HEADERS",
    ):
        if name in os.environ:
            env[name] = os.environ[name]
    env.update(extra or {})
    return env


UID_RANGE = 30000  # jail uids are UID_BASE .. UID_BASE + UID_RANGE - 1


def reserve_uid(root, start):
    """(uid, the descriptor holding it): the first jail uid from START on (modulo the range) that no other jail
    on this host holds. Each is held by an exclusive flock on ROOT/uids/UID, which conflicts between threads of
    one process as between processes, and is let go when the descriptor closes (or its process dies)."""
    import fcntl

    folder = Path(root) / "uids"
    folder.mkdir(mode=0o700, exist_ok=True)
    for i in range(UID_RANGE):
        uid = settings.UID_BASE + (start + i) % UID_RANGE
        fd = os.open(folder / str(uid), os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return uid, fd
    raise IsolationError(
        f"all {UID_RANGE} jail uids from {settings.UID_BASE} are held: too many evaluations at "
        f"once on this host; wait for some to finish"
    )


class Jail:
    """One private folder and the jailed processes that run in it; use as a context manager."""

    def __init__(self, kind, device="cpu", uid_slot=0):
        self.root = settings.work_root()
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o711)
        sweep_stale()
        self.private = self.root / f"{kind}-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self.private.mkdir(mode=0o700)
        self.device = device
        self.exposed = set()
        self.uid = self._uid_lock = None
        if os.geteuid() == 0:
            # A uid of our own per jail: no other jail holds it, so every straggler it leaves can be found and
            # killed, and two evaluations cannot read each other's files. Reserved, not derived from the pid
            # alone: jails of one process (episodes in threads) once shared a uid, and closing one killed the
            # processes of all the others.
            self.uid, self._uid_lock = reserve_uid(self.root, os.getpid() * 4 + uid_slot)
            os.chown(self.private, self.uid, self.uid)
        self._procs = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def path(self, *parts):
        return self.private.joinpath(*parts)

    def expose(self, path):
        """Let processes started from now on read PATH (a file or folder of the host; a folder's later contents
        too). For what an evaluation owns outside its folder: its build output, the timing lock."""
        self.exposed.add(str(path))

    def give(self, source, name):
        """Copy a file or folder into the private folder, owned by the jailed uid."""
        target = self.path(name)
        if Path(source).is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "build", ".ks-build"))
        else:
            shutil.copy2(source, target)
        self.own(target)
        return target

    def own(self, target):
        """Hand TARGET (a file or a folder tree) to the jailed uid."""
        if self.uid is None:
            return
        for dirpath, dirnames, filenames in (
            os.walk(target) if target.is_dir() else [(target.parent, [], [target.name])]
        ):
            for name in dirnames + filenames:
                os.chown(os.path.join(dirpath, name), self.uid, self.uid, follow_symlinks=False)
        os.chown(target, self.uid, self.uid)

    def environment(self, extra=None):
        return environment(self.private, self.device, extra)

    def _leaf(self):
        try:
            found = cgroups.hierarchy()
        except cgroups.Unavailable:
            return None
        return cgroups.Leaf(found, settings.MEMORY_MB, settings.MAX_PROCESSES)

    def start(self, argv, env=None, pass_fds=(), cpu_s=0):
        """Start ARGV jailed; returns a Popen whose output is captured into `proc.output`."""
        require_isolation()
        leaf = self._leaf()
        inner = [
            sys.executable,
            "-I",
            "-S",
            str(INNER),
            "--private",
            str(self.private),
            "--fsize-mb",
            str(settings.FILE_SIZE_MB),
            "--nproc",
            str(settings.MAX_PROCESSES),
            "--fds",
            ",".join(map(str, pass_fds)),
        ]
        if cpu_s:
            inner += ["--cpu-s", str(int(cpu_s))]
        if leaf is None and self.device == "cpu":
            inner += ["--address-space-mb", str(settings.MEMORY_MB * 2)]
        if self.uid is not None:
            inner += ["--uid", str(self.uid)]
        prefix, filter_fd = [], None
        if namespaces_available():
            if seccomp.available()[0]:
                filter_fd = seccomp.program_fd()
            prefix = jailfs.bwrap_argv(self.private, self.device, self.exposed, filter_fd) + ["--"]
        try:
            proc = subprocess.Popen(
                (leaf.launcher() if leaf else []) + prefix + inner + ["--"] + list(argv),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                pass_fds=tuple(pass_fds) + ((filter_fd,) if filter_fd is not None else ()),
                env=self.environment(env),
                cwd=str(self.private),
                start_new_session=True,
            )
        except BaseException:
            if leaf:
                leaf.remove()
            raise
        finally:
            if filter_fd is not None:
                os.close(filter_fd)
        proc.output = OutputTail(proc.stdout, settings.LOG_LIMIT)
        proc.started = time.monotonic()
        proc.memory_exceeded = False
        proc.leaf = leaf
        self._procs.append(proc)
        if leaf is None:  # no kernel limit: the parent watches the tree's memory
            threading.Thread(target=self._watch_memory, args=(proc,), daemon=True).start()
        return proc

    def _watch_memory(self, proc):
        import psutil

        limit = settings.MEMORY_MB << 20
        while proc.poll() is None:
            try:
                tree = psutil.Process(proc.pid)
                rss = sum(p.memory_info().rss for p in [tree] + tree.children(recursive=True))
            except psutil.Error:
                rss = 0
            if rss > limit:
                proc.memory_exceeded = True
                self.kill(proc)
                return
            time.sleep(0.25)

    def wait(self, proc, timeout):
        """Wait for PROC up to TIMEOUT seconds from its start; kill it on expiry."""
        remaining = max(0.0, timeout - (time.monotonic() - proc.started))
        timed_out = False
        try:
            proc.wait(remaining)
        except subprocess.TimeoutExpired:
            timed_out = True
            self.kill(proc)
            proc.wait()
        self._release(proc)
        return Exit(
            proc.returncode, timed_out, proc.memory_exceeded, proc.output.text(), time.monotonic() - proc.started
        )

    def _release(self, proc):
        """Once PROC is gone: read whether the kernel killed it for memory, then remove its cgroup."""
        if proc.leaf is not None:
            proc.memory_exceeded = proc.memory_exceeded or proc.leaf.oom_killed()
            proc.leaf.remove()
            proc.leaf = None

    def run(self, argv, timeout, env=None):
        return self.wait(self.start(argv, env=env), timeout)

    def kill(self, proc):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if proc.leaf is not None:
            proc.leaf.kill()
        self._kill_uid()

    def _kill_uid(self):
        """A straggler that escaped the process group and the cgroup (none should): find it by uid."""
        if self.uid is None:
            return
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    if os.stat(f"/proc/{entry}").st_uid == self.uid:
                        os.kill(int(entry), signal.SIGKILL)
                except (FileNotFoundError, ProcessLookupError, PermissionError):
                    pass

    def close(self):
        for proc in self._procs:
            if proc.poll() is None:
                self.kill(proc)
                proc.wait()
            self._release(proc)
        self._kill_uid()
        shutil.rmtree(self.private, ignore_errors=True)
        if self._uid_lock is not None:
            os.close(self._uid_lock)  # the uid is free again once its processes are gone
            self._uid_lock = None
