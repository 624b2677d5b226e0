"""Isolation of solution code: an unprivileged uid, no network, no local services, a read-only system but a
private folder, CPU/memory/file-size/process limits, a wall-clock timeout, truncated output; a fault or a
hang ends that subprocess with a clear verdict and the caller carries on.

Probes run as solution code inside the jail and report back through the load_error log (conftest.probe).
"""

import os
import resource
import socket
import threading
import time


from sandbox import cgroups, settings
from sandbox.isolation import isolation_level, namespaces_available

SERVICES = {"redis": 6379, "postgresql": 5432}


def _host_can_connect(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return True
    except OSError:
        return False


def test_this_host_provides_isolation():
    # The rest of this file relies on it: the CI worker runs as root, with bubblewrap, libseccomp and cgroups.
    assert namespaces_available()
    kind, why = cgroups.available()
    assert kind in ("cgroup1", "cgroup2"), why
    assert isolation_level() == ("bwrap+uid+seccomp+" if os.geteuid() == 0 else "bwrap+seccomp+") + kind


def test_solution_code_runs_unprivileged_with_limits(probe):
    result = probe("""
        import resource
        result["uid"], result["euid"], result["gid"], result["groups"] = os.getuid(), os.geteuid(), os.getgid(), os.getgroups()
        for name in ("RLIMIT_NPROC", "RLIMIT_FSIZE", "RLIMIT_AS", "RLIMIT_CORE"):
            result[name] = resource.getrlimit(getattr(resource, name))[0]
        result["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
        result["cwd"] = os.getcwd()
        result["env"] = sorted(k for k in os.environ if "SECRET" in k or "PASSWORD" in k or k == "DATABASE_URL")
        """)
    if os.geteuid() == 0:
        assert result["uid"] != 0 and result["euid"] != 0 and result["gid"] != 0 and result["groups"] == []
    assert result["RLIMIT_NPROC"] == settings.MAX_PROCESSES
    assert result["RLIMIT_FSIZE"] == settings.FILE_SIZE_MB << 20
    # The kernel holds memory through the jail's cgroup; an address-space limit only where there is none.
    assert result["RLIMIT_AS"] == (resource.RLIM_INFINITY if cgroups.available()[0] else 2 * settings.MEMORY_MB << 20)
    assert result["RLIMIT_CORE"] == 0
    # A PID namespace of its own: the host's processes are invisible, so they cannot be signalled.
    assert len(result["pids"]) <= 3, result["pids"]
    assert result["cwd"] == "."  # its private folder, which what users see of its output names relative to itself
    assert result["env"] == []


def test_solution_code_has_a_cpu_time_limit(probe):
    result = probe("""
        import resource
        result["cpu"] = resource.getrlimit(resource.RLIMIT_CPU)[0]
        """)
    assert result["cpu"] != resource.RLIM_INFINITY


def test_network_and_local_services_are_unreachable(probe):
    reachable = {name: _host_can_connect(port) for name, port in SERVICES.items()}
    unix_sockets = [
        p
        for p in (
            "/var/run/postgresql/.s.PGSQL.5432",
            "/run/postgresql/.s.PGSQL.5432",
            "/var/run/redis/redis-server.sock",
            "/run/redis/redis-server.sock",
            "/run/mysqld/mysqld.sock",
            "/var/run/docker.sock",
        )
        if os.path.exists(p)
    ]
    result = probe(f"""
        targets = {{"redis": ("127.0.0.1", 6379), "postgresql": ("127.0.0.1", 5432),
                    "outside": ("1.1.1.1", 53), "localhost name": ("localhost", 6379)}}
        for name, address in targets.items():
            try:
                socket.create_connection(address, timeout=3).close()
                result[name] = "connected"
            except OSError as exc:
                result[name] = f"{{type(exc).__name__}}: {{exc}}"
        for path in {unix_sockets!r}:
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect(path)
                result[path] = "connected"
            except OSError as exc:
                result[path] = f"{{type(exc).__name__}}: {{exc}}"
            finally:
                s.close()
        result["interfaces"] = [name for _, name in socket.if_nameindex()]
        """)
    for name in list(SERVICES) + ["outside", "localhost name"] + unix_sockets:
        assert result[name] != "connected", (name, result[name])
        assert "Error" in result[name] or "error" in result[name], (name, result[name])
    assert result["interfaces"] == ["lo"]  # a network namespace of its own, loopback only (and down)
    # The services do run on this host (the studio's tests use them): unreachable from the jail, not absent.
    assert reachable == {"redis": True, "postgresql": True}, reachable


def test_the_private_folder_is_writable_and_private(probe):
    result = probe("""
        with open("scratch.bin", "wb") as fh:
            fh.write(b"x" * 1000)
        result["private"] = os.path.getsize("scratch.bin")
        result["tmp"] = os.listdir("/tmp") if os.path.isdir("/tmp") else None
        for path in ("/tmp/x", "/dev/shm/x"):
            with open(path, "w") as fh:
                fh.write("x")
            result[path] = "written"
        # Other evaluations' folders (the reference's included) are out of reach.
        others = [os.path.join(os.path.dirname(os.getcwd()), n) for n in os.listdir(os.path.dirname(os.getcwd()))]
        result["others"] = {p: os.access(p, os.R_OK) for p in others if p != os.getcwd()}
        """)
    assert result["private"] == 1000
    assert result["/tmp/x"] == "written" and result["/dev/shm/x"] == "written"  # a private tmpfs each
    assert not os.path.exists("/dev/shm/x")  # the host's /dev/shm never saw it
    assert not any(result["others"].values()), result["others"]


def test_file_size_limit(probe, monkeypatch):
    monkeypatch.setattr(settings, "FILE_SIZE_MB", 1)
    result = probe("""
        try:
            with open("big.bin", "wb") as fh:
                fh.write(b"x" * (2 << 20))
            result["big"] = "written"
        except OSError as exc:
            result["big"] = f"{type(exc).__name__}: {exc}"
        """)
    assert "File too large" in result["big"], result


def test_a_memory_hog_is_stopped(run_eval, files, elementwise, monkeypatch):
    monkeypatch.setattr(settings, "MEMORY_MB", 1536)
    source = """
        import torch.nn as nn

        class ModelNew(nn.Module):
            def forward(self, x, y):
                hoard = []
                while True:
                    hoard.append(b"x" * (64 << 20))
        """
    t0 = time.monotonic()
    v = run_eval(elementwise, files.solution(source))
    assert v.status in ("crashed", "runtime_error"), (v.status, v.log[-2000:])
    assert v.reward == -1
    assert "memory above the sandbox's limit of 1536 MB" in v.log or "MemoryError" in v.log, v.log[-2000:]
    assert time.monotonic() - t0 < 60


def test_a_fork_bomb_is_contained(run_eval, files, elementwise, honest, monkeypatch, jailed_processes):
    monkeypatch.setattr(settings, "MAX_PROCESSES", 48)
    # Forks share their pages, but the memory watchdog sums each one's RSS: lift it, so that the process limit
    # (not the watchdog) is what holds the bomb, and the timeout what ends it.
    monkeypatch.setattr(settings, "MEMORY_MB", 1 << 20)
    source = """
        import os, time
        import torch.nn as nn

        class ModelNew(nn.Module):
            def forward(self, x, y):
                while True:
                    try:
                        os.fork()
                    except OSError:
                        time.sleep(0.05)
        """
    peak, done = [0], threading.Event()

    def watch():
        while not done.is_set():
            peak[0] = max(peak[0], len(jailed_processes()))
            time.sleep(0.2)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        v = run_eval(elementwise, files.solution(source), timeout_s=8)
    finally:
        done.set()
        watcher.join()
    assert v.status == "timeout", (v.status, v.log[-2000:])
    assert v.reward == -1
    # 48 processes of the solution's uid at most (its jail init among them), plus the reference worker and its init.
    assert 5 <= peak[0] <= 48 + 2, peak[0]
    assert jailed_processes(wait=10) == []
    assert run_eval(elementwise, honest).status == "ok"  # the caller carries on


def test_output_flood_is_truncated_and_the_verdict_still_reached(run_eval, files, elementwise):
    source = """
        import sys
        sys.stdout.write("flood " * (9 << 20))  # about 54 MB
        sys.stdout.flush()
        raise RuntimeError("after the flood")
        """
    t0 = time.monotonic()
    v = run_eval(elementwise, files.solution(source))
    assert v.status == "load_error", (v.status, v.log[-2000:])
    assert "after the flood" in v.log
    assert "truncated" in v.log
    assert len(v.log) <= settings.LOG_LIMIT + 200
    assert time.monotonic() - t0 < 60


def test_a_flood_from_a_correct_solution_does_not_change_its_verdict(run_eval, files, elementwise, sources):
    source = sources["HONEST_ELEMENTWISE"].replace(
        "import numpy as np",
        "import numpy as np\nimport sys\nsys.stdout.write('flood ' * (9 << 20))\nsys.stdout.flush()",
    )
    v = run_eval(elementwise, files.solution(source))
    assert v.status == "ok", (v.status, v.log[-2000:])
    assert len(v.log) <= settings.LOG_LIMIT + 200


def test_a_daemonized_straggler_is_killed(run_eval, files, elementwise, sources, jailed_processes):
    source = sources["HONEST_ELEMENTWISE"].replace(
        "import numpy as np",
        """import numpy as np
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        while True:
            time.sleep(1)
    os._exit(0)""",
    )
    v = run_eval(elementwise, files.solution(source))
    assert v.status == "ok", (v.status, v.log[-2000:])
    assert jailed_processes(wait=10) == []


def test_jails_of_one_process_hold_uids_of_their_own_and_closing_one_leaves_the_others_running():
    # Rollouts run episodes in threads of one process: their jails once shared a uid derived from the pid, and
    # closing one episode's jail (which kills every process of its uid) killed the others' tools mid-run.
    import sys

    from sandbox.isolation import Jail

    first, second = Jail("a", "cpu", uid_slot=2), Jail("b", "cpu", uid_slot=2)
    try:
        if os.geteuid() == 0:
            assert first.uid != second.uid
        proc = second.start([sys.executable, "-c", "import time; time.sleep(30)"])
        time.sleep(0.5)
        first.close()
        time.sleep(0.5)
        assert proc.poll() is None, "closing one jail killed another jail's process"
        if os.geteuid() == 0:
            third = Jail("c", "cpu", uid_slot=2)  # a closed jail's uid is free again
            assert third.uid == first.uid
            third.close()
    finally:
        first.close()
        second.close()
    assert proc.poll() is not None
