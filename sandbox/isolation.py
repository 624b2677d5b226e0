"""Running untrusted code: a fresh jailed subprocess with no network, a private folder, limits and a timeout.

The parent side of sandbox.jail. Every build and run of solution (and problem) code goes through `Jail`;
its output is captured head-and-tail so a flood cannot exhaust memory, and a fault, hang or memory blow-up
ends that subprocess alone.
"""
import functools
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import sandbox
from sandbox import settings
from sandbox.errors import IsolationError

log = logging.getLogger(__name__)
PACKAGE_ROOT = Path(sandbox.__file__).resolve().parent.parent
_UNSHARE = ["unshare", "--net", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc"]


@functools.lru_cache(maxsize=1)
def namespaces_available():
    """Whether this host lets us create network, mount and PID namespaces (as root, or through a user ns)."""
    if not settings.USE_NAMESPACES or shutil.which("unshare") is None:
        return False
    try:
        return subprocess.run(_unshare_prefix() + ["true"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _unshare_prefix():
    return _UNSHARE + ([] if os.geteuid() == 0 else ["--user", "--map-root-user"])


def isolation_level():
    level = "namespaces" if namespaces_available() else "none"
    if os.geteuid() == 0:
        level += "+uid"
    return level


def require_isolation():
    if settings.REQUIRE_ISOLATION and not namespaces_available():
        raise IsolationError("KS_SANDBOX_REQUIRE_ISOLATION=True but this host cannot create namespaces: "
                             "run the worker as root or with user namespaces enabled (docker: --cap-add SYS_ADMIN)")


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
                del self.tail[:len(self.tail) - half]
        stream.close()

    def text(self, wait=2.0):
        self._thread.join(wait)
        middle = f"\n[... {self.dropped} bytes of output truncated ...]\n" if self.dropped else ""
        return (bytes(self.head).decode(errors="replace") + middle + bytes(self.tail).decode(errors="replace"))


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
            return f"killed: memory above {settings.MEMORY_MB} MB"
        if self.signal:
            try:
                return f"killed by signal {signal.Signals(self.signal).name}"
            except ValueError:
                return f"killed by signal {self.signal}"
        return f"exited with code {self.returncode}"


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
    raise IsolationError(f"all {UID_RANGE} jail uids from {settings.UID_BASE} are held: too many evaluations at "
                         f"once on this host; wait for some to finish")


class Jail:
    """One private folder and the jailed processes that run in it; use as a context manager."""

    def __init__(self, kind, device="cpu", uid_slot=0):
        self.root = settings.work_root()
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o711)
        self.private = self.root / f"{kind}-{uuid.uuid4().hex[:12]}"
        self.private.mkdir(mode=0o700)
        self.device = device
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
        for dirpath, dirnames, filenames in os.walk(target) if target.is_dir() else [(target.parent, [], [target.name])]:
            for name in dirnames + filenames:
                os.chown(os.path.join(dirpath, name), self.uid, self.uid, follow_symlinks=False)
        os.chown(target, self.uid, self.uid)

    def environment(self, extra=None):
        home = str(self.private)
        env = {
            # `python` in a jailed shell is the harness's own interpreter (with torch), venv or not.
            "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")]),
            # The jailed uid has no passwd entry; getpass.getuser() (inductor's cache) reads these first.
            "USER": "ks-sandbox", "LOGNAME": "ks-sandbox",
            "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8",
            "PYTHONPATH": str(PACKAGE_ROOT), "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1",
            "XDG_CACHE_HOME": f"{home}/.cache", "CUDA_CACHE_PATH": f"{home}/.nv",
            "TORCH_EXTENSIONS_DIR": f"{home}/torch_extensions", "TRITON_CACHE_DIR": f"{home}/.triton",
            "TORCHINDUCTOR_CACHE_DIR": f"{home}/.inductor", "MAX_JOBS": str(settings.MAX_JOBS),
            "OMP_NUM_THREADS": str(settings.CPU_THREADS), "KS_CPU_THREADS": str(settings.CPU_THREADS),
            "KS_DEVICE": self.device,
            # The worker's cache is the harness's (baselines, the timing lock), whatever HOME the jail gives it.
            "KS_CACHE_DIR": str(settings.cache_dir()),
        }
        for name in ("CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH", "TORCH_CUDA_ARCH_LIST",
                     "CXX", "CC", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "KS_CACHE_DIR"):
            if name in os.environ:
                env[name] = os.environ[name]
        env.update(extra or {})
        return env

    def _keep(self):
        import torch  # the jailed interpreter needs torch's files, wherever they were installed
        paths = {sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable)),
                 str(PACKAGE_ROOT), str(Path(torch.__file__).resolve().parent.parent)}
        for name in ("CUDA_HOME", "CUDA_PATH"):
            if os.environ.get(name):
                paths.add(os.environ[name])
        cache = settings.cache_dir()
        cache.mkdir(parents=True, exist_ok=True)
        os.chmod(cache, 0o755)
        paths.add(str(cache))
        return sorted(paths)

    def start(self, argv, env=None, pass_fds=(), cpu_s=0):
        """Start ARGV jailed; returns a Popen whose output is captured into `proc.output`."""
        require_isolation()
        jail = [sys.executable, "-m", "sandbox.jail", "--private", str(self.private),
                "--fsize-mb", str(settings.FILE_SIZE_MB), "--nproc", str(settings.MAX_PROCESSES),
                "--fds", ",".join(map(str, pass_fds))]
        if cpu_s:
            jail += ["--cpu-s", str(int(cpu_s))]
        if self.device == "cpu":
            jail += ["--address-space-mb", str(settings.MEMORY_MB * 2)]
        if self.uid is not None:
            jail += ["--uid", str(self.uid)]
        prefix = []
        if namespaces_available():
            prefix = _unshare_prefix()
            jail.append("--mounts")
            for path in self._keep():
                jail += ["--keep", path]
        proc = subprocess.Popen(prefix + jail + ["--"] + list(argv), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, pass_fds=pass_fds,
                                env=self.environment(env), cwd=str(self.private), start_new_session=True)
        proc.output = OutputTail(proc.stdout, settings.LOG_LIMIT)
        proc.started = time.monotonic()
        proc.memory_exceeded = False
        self._procs.append(proc)
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
        return Exit(proc.returncode, timed_out, proc.memory_exceeded, proc.output.text(),
                    time.monotonic() - proc.started)

    def run(self, argv, timeout, env=None):
        return self.wait(self.start(argv, env=env), timeout)

    def kill(self, proc):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._kill_uid()

    def _kill_uid(self):
        """Without a PID namespace, a daemonized straggler escapes the process group: find it by uid."""
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
        self._kill_uid()
        shutil.rmtree(self.private, ignore_errors=True)
        if self._uid_lock is not None:
            os.close(self._uid_lock)  # the uid is free again once its processes are gone
            self._uid_lock = None
