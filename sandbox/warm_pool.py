"""A warm pool of jailed, single-use processes: each started ahead of time in a jail of its own (sandbox.isolation,
the same jail, uid, seccomp filter and limits as any other), warmed by running its module once on a sample
(sandbox.warm_runner), handed exactly one request, then closed with its jail and replaced in the background.

    python -m sandbox.warm_pool --socket PATH --device cpu --size 1 --spec JSON --parent PID   # the pool's process

The pool is a process of its own that its owner (the studio's RQ worker) starts and that ends with it; callers (the
worker's work horses) reach it through a Unix socket named by KS_WARM_POOL_SOCKET. A request names a folder to copy
into the leased jail (the workspace, as the bash tool copies it) and the module's arguments; the reply is the run's
Exit and the path of the jail's copy, kept until the caller has read it back. Whenever the pool cannot serve a
request (none is running, none is warm in time, the caller's jail would differ, the process died before use),
`run` raises Unavailable with the reason, and the caller runs the command the usual way.
"""

import argparse
import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from sandbox import isolation, jailfs, settings
from sandbox.errors import SandboxError
from sandbox.isolation import Exit, Jail

log = logging.getLogger(__name__)
SOCKET_ENV = "KS_WARM_POOL_SOCKET"
# A warming process runs at a low priority, so that it takes little of the cores from work people wait for (the turn
# it was replaced after, a build), yet still warms on a busy host; it runs its request at the usual priority. Only
# where the pool may raise the priority again (as root).
WARMING_NICE = 10
# Between warm-up failures of one device, the next start waits this long, doubling up to the cap: never a hot loop.
FIRST_RETRY_S, MAX_RETRY_S = 2.0, 120.0


class Unavailable(SandboxError):
    """The warm pool cannot run this request; the message says why, and the caller runs it the usual way."""


@dataclass(frozen=True)
class PoolSpec:
    """What the pool's processes run: MODULE as `python -m MODULE ARGS`, warmed on WARM_FILES with WARM_ARGS."""

    module: str
    warm_files: dict = field(default_factory=dict)  # relative path -> text, written into the warm-up's folder
    warm_args: tuple = ()

    def to_json(self):
        return {"module": self.module, "warm_files": dict(self.warm_files), "warm_args": list(self.warm_args)}

    @classmethod
    def from_json(cls, data):
        return cls(data["module"], dict(data.get("warm_files", {})), tuple(data.get("warm_args", ())))


def socket_path():
    """The socket of the pool serving this process (its worker's), or '' when there is none."""
    return os.environ.get(SOCKET_ENV, "")


def jail_signature(device):
    """A digest of what a jail of DEVICE gets here (environment, limits, isolation, read-only paths): a pooled process
    serves only callers whose jail would have the same one."""
    facts = {
        "device": device,
        "python": sys.executable,
        "environment": isolation.environment("<private>", device),
        "isolation": isolation.isolation_level(),
        "read_only": list(jailfs.read_only_paths(device)),
        "limits": [settings.MEMORY_MB, settings.FILE_SIZE_MB, settings.MAX_PROCESSES, settings.LOG_LIMIT],
        "uids": settings.UID_BASE,
        "cgroup": settings.CGROUP,
        "work": str(settings.work_root()),
    }
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:16]


# -- the caller's side ---------------------------------------------------------------------------------------------
@contextlib.contextmanager
def run(device, source, name, cwd, args, timeout, path=None, connect_s=2.0):
    """`with run(...) as (exit, copy):` the pool's module run with ARGS in CWD (relative to the jail's folder) of a
    leased jail of DEVICE, after SOURCE was copied into it as NAME; EXIT as Jail.run gives it, COPY the jail's copy
    of SOURCE (read it back inside the block: the jail goes when the block ends). Unavailable when the pool cannot."""
    path = str(path or socket_path())
    if not path:
        raise Unavailable(f"no warm pool: {SOCKET_ENV} is not set")
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(connect_s)
    try:
        conn.connect(path)
    except OSError as exc:
        conn.close()
        raise Unavailable(f"the warm pool at {path} does not answer ({exc}); is its worker running?") from None
    request = {
        "device": device,
        "signature": jail_signature(device),
        "source": str(source),
        "name": name,
        "cwd": cwd,
        "args": list(args),
        "timeout": timeout,
    }
    # The pool waits up to its lease wait for a process to warm, then the run's own timeout; the margin is for its
    # kill and the reply.
    conn.settimeout(settings.WARM_POOL_WAIT_S + timeout + 60)
    with conn, conn.makefile("rwb") as stream:
        try:
            stream.write(json.dumps(request).encode() + b"\n")
            stream.flush()
            line = stream.readline()
        except OSError as exc:
            raise Unavailable(f"the warm pool at {path} failed ({exc}): see its worker's log") from None
        if not line:
            raise Unavailable(f"the warm pool at {path} closed the connection (it stopped): see its worker's log")
        reply = json.loads(line)
        if not reply["ok"]:
            raise Unavailable(reply["reason"])
        try:
            yield Exit(**reply["exit"]), Path(reply["copy"])
        finally:
            with contextlib.suppress(OSError):
                stream.write(b"done\n")
                stream.flush()


def status(path=None, timeout=5.0):
    """The pool's processes ({pid, device, state}), how many requests it served, and its devices."""
    path = str(path or socket_path())
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout)
        try:
            conn.connect(path)
        except OSError as exc:
            raise Unavailable(f"the warm pool at {path} does not answer ({exc})") from None
        with conn.makefile("rwb") as stream:
            stream.write(b'{"op": "status"}\n')
            stream.flush()
            return json.loads(stream.readline())


# -- the pool's side -----------------------------------------------------------------------------------------------
@dataclass(eq=False)
class _Process:
    device: str
    signature: str
    jail: Jail
    proc: object  # the Popen of Jail.start
    control: socket.socket
    state: str = "warming"  # warming -> ready -> leased -> gone


class Pool:
    """SIZE warm processes of SPEC per device of DEVICES. Processes are started and checked only on the thread that
    runs tend() (bubblewrap's --die-with-parent follows the thread that started it); requests are served on threads
    of their own."""

    def __init__(self, spec, devices, size, wait_s=None):
        self.spec, self.devices, self.size = spec, tuple(devices), size
        self.wait_s = settings.WARM_POOL_WAIT_S if wait_s is None else wait_s
        self.processes = []
        self.changed = threading.Condition()
        self.failures = dict.fromkeys(self.devices, 0)
        self.not_before = dict.fromkeys(self.devices, 0.0)
        self.served = 0

    # -- on the tending thread
    def tend(self):
        """Note processes that became ready or died, and start what is missing; returns how many are warming."""
        with self.changed:
            for process in self.processes:  # a warm-up that hangs is ended like any jailed run over its time
                if process.state == "warming" and time.monotonic() - process.proc.started > settings.TIMEOUT_S:
                    process.jail.kill(process.proc)
            dead = [p for p in self.processes if p.state in ("warming", "ready") and p.proc.poll() is not None]
            for process in dead:
                process.state = "gone"
            warming = [p for p in self.processes if p.state == "warming"]
        for process in dead:
            self._died(process)
        for control in select.select([p.control for p in warming], [], [], 0)[0] if warming else []:
            process = next(p for p in warming if p.control is control)
            if control.recv(64).startswith(b"ready"):
                with self.changed:
                    process.state = "ready"
                    self.failures[process.device] = 0
                    self.changed.notify_all()
        with self.changed:
            self.processes = [p for p in self.processes if p.state != "gone"]
            # A leased process holds its place until its request is done: its replacement starts after it, not
            # beside it, where it would take the cores the request runs on.
            missing = {d: self.size - sum(p.device == d for p in self.processes) for d in self.devices}
        now = time.monotonic()
        for device, count in missing.items():
            for _ in range(count if now >= self.not_before[device] else 0):
                try:
                    self._start(device)
                except Exception:  # noqa: BLE001 -- the pool goes on (requests run the usual way meanwhile)
                    log.exception(
                        "warm pool: a %s process could not start; next try in %.0f s", device, self._back_off(device)
                    )
                    break
        return len(warming)

    def _back_off(self, device):
        """One more failure of DEVICE: its next start waits longer; returns the wait."""
        with self.changed:
            self.failures[device] += 1
            delay = min(MAX_RETRY_S, FIRST_RETRY_S * 2 ** (self.failures[device] - 1))
            self.not_before[device] = time.monotonic() + delay
            self.changed.notify_all()
        return delay

    def _start(self, device):
        jail = Jail("warm", device, uid_slot=2)
        warm = jail.path("warm")
        for rel, text in self.spec.warm_files.items():
            (warm / rel).parent.mkdir(parents=True, exist_ok=True)
            (warm / rel).write_text(text)
        if warm.exists():
            jail.own(warm)
        ours, theirs = socket.socketpair()
        argv = [sys.executable, "-m", "sandbox.warm_runner", "--control", str(theirs.fileno())]
        argv += ["--module", self.spec.module]
        if self.spec.warm_files:
            argv += ["--warm-cwd", "warm"] + [f"--warm-arg={arg}" for arg in self.spec.warm_args]
        try:
            proc = jail.start(argv, pass_fds=(theirs.fileno(),))
        except BaseException:
            jail.close()
            ours.close()
            raise
        finally:
            theirs.close()
        _renice(proc, WARMING_NICE)
        process = _Process(device, jail_signature(device), jail, proc, ours)
        with self.changed:
            self.processes.append(process)
        log.info("warm pool: process %d (%s) warming in %s", proc.pid, device, jail.private.name)

    def _died(self, process):
        exit = _ended(process)
        process.jail.close()
        process.control.close()
        delay = self._back_off(process.device)
        log.error(
            "warm pool: process %d (%s) died before use (%s); the next starts in %.0f s, and until one is warm "
            "requests run the usual way. Its output:\n%s",
            process.proc.pid,
            process.device,
            exit.describe(),
            delay,
            exit.output[-3000:],
        )

    # -- on request threads
    def lease(self, device, signature):
        """A ready process of DEVICE whose jail has SIGNATURE, waiting up to wait_s for one to warm (one warming, or
        one about to start: at the pool's start, after a use)."""
        if device not in self.devices:
            raise Unavailable(f"the warm pool serves {', '.join(self.devices)}, not {device}")
        deadline = time.monotonic() + self.wait_s
        with self.changed:
            while True:
                mine = [p for p in self.processes if p.device == device and p.state in ("warming", "ready")]
                alike = [p for p in mine if p.signature == signature]
                for process in alike:
                    if process.state == "ready":
                        process.state = "leased"
                        return process
                if mine and not alike:
                    raise Unavailable(
                        "the warm pool's jails differ from this caller's (its environment or sandbox settings "
                        "changed since the pool started): restart the worker to warm jails like this one"
                    )
                now = time.monotonic()
                if not alike and now < self.not_before[device]:
                    raise Unavailable(
                        f"no warm {device} process: the last one died (see the pool's log); the next starts in "
                        f"{self.not_before[device] - now:.0f} s"
                    )
                if now >= deadline:
                    raise Unavailable(
                        f"no warm {device} process was ready within {self.wait_s:.0f} s (KS_WARM_POOL_WAIT)"
                    )
                self.changed.wait(deadline - now)

    def serve(self, conn):
        """One request on CONN: lease, copy, run, reply, wait for the caller's done, close the jail; or the status."""
        process = None
        with conn, conn.makefile("rwb") as stream:
            try:
                request = json.loads(stream.readline() or b"null")
                if not request:
                    return
                if request.get("op") == "status":
                    reply = self.status()
                else:
                    process = self.lease(request["device"], request["signature"])
                    reply = {"ok": True, **self._run(process, request)}
            except Unavailable as exc:
                reply = {"ok": False, "reason": str(exc)}
            except Exception as exc:  # noqa: BLE001 -- the caller is told, and runs its command the usual way
                log.exception("warm pool: a request failed")
                reply = {"ok": False, "reason": f"the warm pool failed: {type(exc).__name__}: {exc}"}
            try:
                stream.write(json.dumps(reply).encode() + b"\n")
                stream.flush()
                if process is not None and reply["ok"]:
                    stream.readline()  # the caller has read the jail's copy back
            except OSError:
                pass  # the caller went away; its jail is closed all the same
            finally:
                if process is not None:
                    self._close(process)

    def status(self):
        with self.changed:
            processes = [{"pid": p.proc.pid, "device": p.device, "state": p.state} for p in self.processes]
            return {"ok": True, "processes": processes, "served": self.served, "devices": list(self.devices)}

    def _run(self, process, request):
        copy = process.jail.give(request["source"], request["name"])
        if process.proc.poll() is not None:
            raise Unavailable(self._lost(process))
        _renice(process.proc, 0)
        try:
            process.control.sendall(json.dumps({"cwd": request["cwd"], "args": request["args"]}).encode() + b"\n")
        except OSError:
            raise Unavailable(self._lost(process)) from None
        if not _taken(process.control):
            raise Unavailable(self._lost(process))
        process.proc.started = time.monotonic()  # the request's timeout runs from now, as a fresh process's would
        exit = process.jail.wait(process.proc, request["timeout"])
        with self.changed:
            self.served += 1
        log.info(
            "warm pool: process %d ran %s, %s, in %.2f s",
            process.proc.pid,
            request["args"],
            exit.describe(),
            exit.seconds,
        )
        return {"exit": dataclasses.asdict(exit), "copy": str(copy), "pid": process.proc.pid}

    def _lost(self, process):
        exit = _ended(process)
        message = f"the warm {process.device} process {process.proc.pid} had died before use ({exit.describe()})"
        log.error("warm pool: %s; its request runs the usual way. Its output:\n%s", message, exit.output[-3000:])
        return message

    def _close(self, process):
        process.jail.close()
        process.control.close()
        with self.changed:
            process.state = "gone"
            self.changed.notify_all()

    def close(self):
        with self.changed:
            processes, self.processes = self.processes, []
        for process in processes:
            if process.state != "leased":  # a leased one is closed by its request's thread
                process.jail.close()
                process.control.close()


def _renice(proc, nice):
    """Every process and thread of PROC's jail (its process group) at NICE; nothing where it could not be undone."""
    if os.geteuid() == 0:
        with contextlib.suppress(ProcessLookupError):
            os.setpriority(os.PRIO_PGRP, proc.pid, nice)


def _taken(control, timeout=30.0):
    """Whether the pooled process took the request: it says so before running anything. A process killed just before
    (its death not yet seen by poll()) closes its end instead, and the request runs the usual way."""
    control.settimeout(timeout)
    try:
        return control.recv(64).startswith(b"started")
    except OSError:  # a timeout too: a process that cannot answer is not trusted with the request
        return False
    finally:
        control.settimeout(None)


def _ended(process):
    """The Exit of a pooled process that is dying or dead (killed if it is not gone within seconds)."""
    process.proc.started = time.monotonic()
    return process.jail.wait(process.proc, 5)


def serve(spec, path, devices, size, parent=None):
    """Run a pool of SIZE processes of SPEC per device on socket PATH until SIGTERM/SIGINT or PARENT (a pid) is gone."""
    pool = Pool(spec, devices, size)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    listener.bind(path)
    os.chmod(path, 0o600)
    listener.listen(16)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())

    def accept():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return  # closed: the pool stops
            threading.Thread(target=pool.serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, name="warm-pool-accept", daemon=True).start()
    log.info("warm pool: %d per device of %s, module %s, on %s", size, ", ".join(devices), spec.module, path)
    try:
        while not stop.is_set() and (parent is None or os.getppid() == parent):
            warming = pool.tend()
            with pool.changed:
                pool.changed.wait(0.05 if warming else 0.5)
    finally:
        listener.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        pool.close()


class Daemon:
    """The pool's own process, started by its owner (`Daemon(spec, devices, size).start()`), ending with it or at
    stop(); `socket` is its path, for SOCKET_ENV."""

    def __init__(self, spec, devices, size):
        self.spec, self.devices, self.size = spec, list(devices), size
        # A folder named like a jail's private folder (KIND-PID-HEX): swept once its owner is gone.
        self.folder = settings.work_root() / f"pool-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self.socket = self.folder / "socket"
        self.process = None

    def start(self, timeout=60.0):
        """Start the pool's process and wait until its socket answers; returns self."""
        settings.work_root().mkdir(parents=True, exist_ok=True)
        self.folder.mkdir(mode=0o700)
        argv = [sys.executable, "-m", "sandbox.warm_pool", "--socket", str(self.socket), "--size", str(self.size)]
        argv += ["--parent", str(os.getpid()), "--spec", json.dumps(self.spec.to_json())]
        for device in self.devices:
            argv += ["--device", device]
        self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while not self.socket.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise Unavailable(f"the warm pool did not start (see its output above): {' '.join(argv[:3])}")
            time.sleep(0.05)
        return self

    def stop(self, timeout=30.0):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m sandbox.warm_pool", description=__doc__.split("\n\n")[0])
    parser.add_argument("--socket", required=True, help="the Unix socket callers reach the pool on")
    parser.add_argument("--device", action="append", required=True, help="a device its jails are for (cpu, cuda)")
    parser.add_argument("--size", type=int, default=1, help="warm processes kept per device")
    parser.add_argument("--spec", required=True, help="what the processes run: PoolSpec's JSON")
    parser.add_argument("--parent", type=int, help="stop when this process (the pool's owner) is gone")
    args = parser.parse_args(argv)
    logging.basicConfig(level=os.environ.get("KS_LOG_LEVEL", "INFO"), format="%(levelname)s %(name)s: %(message)s")
    serve(PoolSpec.from_json(json.loads(args.spec)), args.socket, args.device, args.size, args.parent)
    return 0


if __name__ == "__main__":
    sys.exit(main())
