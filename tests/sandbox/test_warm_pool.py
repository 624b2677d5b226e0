"""The warm pool: single-use jailed processes started ahead of time, each serving one request in a jail like any
other (its uid, no network, its limits, the usual priority) and replaced after; whatever it cannot serve is refused
with a reason the caller logs before running the command the usual way.

The pool's module here is the standard library's cProfile (`python -m cProfile -o /dev/null SCRIPT` runs SCRIPT), so
that a request runs a probe script of the test's own; tests/agent/test_warm_analysis.py pins the analysis itself.
"""

import json
import os
import signal
import socket
import threading
import time

import pytest

from sandbox import settings
from sandbox.isolation import Jail
from sandbox.warm_pool import Daemon, Pool, PoolSpec, Unavailable, jail_signature, run, status

SPEC = PoolSpec(
    module="cProfile", warm_files={"sample.py": "import json\n"}, warm_args=("-o", "/dev/null", "sample.py")
)
PROBE = """
import json, os, resource, socket
facts = {"uid": os.getuid(), "nice": os.nice(0), "cwd": os.path.basename(os.getcwd()), "files": sorted(os.listdir())}
facts["nproc"] = resource.getrlimit(resource.RLIMIT_NPROC)[0]
facts["fsize"] = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
try:
    socket.create_connection(("127.0.0.1", 6379), timeout=2)
    facts["network"] = "connected"
except OSError as exc:
    facts["network"] = type(exc).__name__
facts["host_folder_visible"] = os.path.exists(HOST_FOLDER)
open("written.txt", "w").write("from the jail")
print("FACTS " + json.dumps(facts))
"""


def facts(output):
    return json.loads(next(line for line in output.splitlines() if line.startswith("FACTS "))[6:])


def wait_ready(path, count=1, timeout=180):
    """The pool's status once COUNT processes are ready."""
    deadline = time.monotonic() + timeout
    while True:
        state = status(path)
        if sum(p["state"] == "ready" for p in state["processes"]) >= count:
            return state
        assert time.monotonic() < deadline, f"no warm process within {timeout} s: {state}"
        time.sleep(0.2)


@pytest.fixture
def source(tmp_path):
    """A folder holding probe.py, which reports what its process may do and see (the test's folder among them)."""
    folder = tmp_path / "source"
    folder.mkdir()
    (folder / "probe.py").write_text(f"HOST_FOLDER = {str(tmp_path)!r}\n{PROBE}")
    return folder


@pytest.fixture(scope="module")
def daemon():
    pool = Daemon(SPEC, ["cpu"], 1).start()
    yield pool
    pool.stop()


def test_a_pooled_process_runs_one_request_jailed_and_is_replaced(daemon, source):
    before = wait_ready(daemon.socket)
    (pid,) = [p["pid"] for p in before["processes"]]
    with run("cpu", source, "workspace", "workspace", ["-o", "/dev/null", "probe.py"], 60, daemon.socket) as (
        exit,
        copy,
    ):
        assert exit.returncode == 0 and not exit.timed_out, exit.output
        assert (copy / "written.txt").read_text() == "from the jail"
    seen = facts(exit.output)
    assert seen["cwd"] == "workspace" and seen["files"] == ["probe.py"]
    # As in a fresh jail: its own unprivileged uid, no network, no host folders, the limits, the usual priority.
    if os.geteuid() == 0:
        assert seen["uid"] >= settings.UID_BASE
    assert seen["network"] in ("ConnectionRefusedError", "OSError", "PermissionError")
    assert seen["host_folder_visible"] is False
    assert seen["nproc"] == settings.MAX_PROCESSES and seen["fsize"] == settings.FILE_SIZE_MB << 20
    assert seen["nice"] == 0
    deadline = time.monotonic() + 30
    while copy.exists():  # the jail goes once the caller is done with it
        assert time.monotonic() < deadline, f"{copy} outlived its request"
        time.sleep(0.1)
    after = wait_ready(daemon.socket)
    assert after["served"] == before["served"] + 1
    assert pid not in [p["pid"] for p in after["processes"]]


def test_a_pooled_run_is_the_run_of_a_fresh_jail(daemon, source):
    wait_ready(daemon.socket)
    with run("cpu", source, "workspace", "workspace", ["-o", "/dev/null", "probe.py"], 60, daemon.socket) as (
        pooled,
        _,
    ):
        pass
    with Jail("fresh", "cpu") as jail:
        jail.give(source, "workspace")
        fresh = jail.run(["bash", "-c", "cd workspace && python -m cProfile -o /dev/null probe.py"], 60)
    assert pooled.returncode == fresh.returncode == 0
    mine, theirs = facts(pooled.output), facts(fresh.output)
    assert {**mine, "uid": None} == {**theirs, "uid": None}


def test_a_request_the_pool_cannot_serve_is_refused_with_the_reason(daemon, source, monkeypatch):
    wait_ready(daemon.socket)
    served = status(daemon.socket)["served"]
    with pytest.raises(Unavailable, match="serves cpu, not cuda"):
        with run("cuda", source, "workspace", "workspace", ["probe.py"], 60, daemon.socket):
            pass
    # A caller whose jail would differ (here: an environment variable the jail passes on) is not served.
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Prescott")
    with pytest.raises(Unavailable, match="jails differ"):
        with run("cpu", source, "workspace", "workspace", ["probe.py"], 60, daemon.socket):
            pass
    monkeypatch.delenv("OPENBLAS_CORETYPE")
    monkeypatch.delenv("KS_WARM_POOL_SOCKET", raising=False)
    with pytest.raises(Unavailable, match="no warm pool"):
        with run("cpu", source, "workspace", "workspace", ["probe.py"], 60):
            pass
    with pytest.raises(Unavailable, match="does not answer"):
        with run("cpu", source, "workspace", "workspace", ["probe.py"], 60, str(daemon.folder / "nothing")):
            pass
    assert status(daemon.socket)["served"] == served


def test_a_process_that_died_before_use_is_reported_and_replaced(source):
    pool = Pool(SPEC, ["cpu"], 1, wait_s=0)
    try:
        deadline = time.monotonic() + 180
        while not [p for p in pool.processes if p.state == "ready"]:
            pool.tend()
            assert time.monotonic() < deadline
            time.sleep(0.1)
        (dead,) = pool.processes
        os.killpg(dead.proc.pid, signal.SIGKILL)
        dead.proc.wait()
        ours, theirs = socket.socketpair()
        server = threading.Thread(target=pool.serve, args=(theirs,))
        server.start()
        request = {
            "device": "cpu",
            "signature": jail_signature("cpu"),
            "source": str(source),
            "name": "workspace",
            "cwd": "workspace",
            "args": ["probe.py"],
            "timeout": 60,
        }
        with ours, ours.makefile("rwb") as stream:
            stream.write(json.dumps(request).encode() + b"\n")
            stream.flush()
            reply = json.loads(stream.readline())
        server.join()
        assert reply == {
            "ok": False,
            "reason": f"the warm cpu process {dead.proc.pid} had died before use (killed by signal SIGKILL)",
        }
        assert not dead.jail.private.exists()
        pool.tend()
        assert [p.state for p in pool.processes] == ["warming"] and pool.processes[0] is not dead
    finally:
        pool.close()
