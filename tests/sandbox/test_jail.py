"""The jail of issue 18: an allow-listed root (nothing of the studio, other evaluations, the build cache or home
folders), kernel-enforced memory and process limits, a seccomp filter, nothing outliving its parent, and output
that names no host path. Everything runs for real: bubblewrap, cgroups, the seccomp program, jailed workers.
"""

import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from sandbox import cgroups, seccomp, settings
from sandbox.isolation import isolation_level, sweep_stale
from sandbox.jailfs import PACKAGE_ROOT
from sandbox.validate import validate_problem


def _plant(path, text):
    """A world-readable file (and world-searchable folders down to it): only the jail's root can hide it."""
    path = Path(path)
    created = []
    for parent in reversed([path.parent, *path.parent.parents]):
        if not parent.exists():
            parent.mkdir()
            created.append(parent)
        if parent in created:
            os.chmod(parent, 0o755)
    path.write_text(text)
    os.chmod(path, 0o644)
    return path, created


@pytest.fixture
def planted(ks_cache_dir):
    """{where: path} of secret files planted where users' code must not reach, removed afterwards."""
    tag = uuid.uuid4().hex[:12]
    where = {
        "studio cache": PACKAGE_ROOT / ".cache" / "services" / f"planted-{tag}" / "studio-admin.txt",
        "another evaluation": settings.work_root() / f"cand-{os.getpid()}-{tag}" / "workspace" / "kernel.cu",
        "build cache": ks_cache_dir / "builds" / ("0" * 48 + tag[:16]) / "kernels" / "theirs.cu",
        "home folder": Path(f"/home/ks-planted-{tag}") / "notes.txt",
        "root's home": Path.home() / f"ks-planted-{tag}.txt",
    }
    made = []
    for name, path in where.items():
        made += _plant(path, f"SECRET {name} {tag}")[1]
    yield {name: str(path) for name, path in where.items()}
    for path in where.values():
        path.unlink(missing_ok=True)
    for folder in sorted(made, key=lambda p: len(p.parts), reverse=True):
        shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree(PACKAGE_ROOT / ".cache" / "services" / f"planted-{tag}", ignore_errors=True)


READ_ALL = """
for name, path in {paths!r}.items():
    try:
        with open(path) as fh:
            result[name] = "read: " + fh.read()
    except OSError as exc:
        result[name] = type(exc).__name__
"""


def test_a_solution_cannot_read_files_planted_outside_its_own(probe, planted):
    result = probe(READ_ALL.format(paths=planted))
    assert set(result) == set(planted)
    # Not refused by permissions (every file is world-readable): absent from the jail's root.
    assert all(outcome == "FileNotFoundError" for outcome in result.values()), result


def test_a_solution_that_tries_the_planted_files_keeps_its_verdict(run_eval, files, elementwise, sources, planted):
    prologue = (
        "result = {}\n"
        + READ_ALL.format(paths=planted)
        + "assert not any(v.startswith('read') for v in result.values())\n"
    )
    source = sources["HONEST_ELEMENTWISE"].replace("import numpy as np", "import numpy as np\n" + prologue)
    v = run_eval(elementwise, files.solution(source))
    assert v.status == "ok" and v.correct and v.reward >= 1, (v.status, v.log[-2000:])


def test_an_uploaded_problem_cannot_read_files_planted_outside_its_own(files, sources, planted):
    # The attack of issue 18: a problem whose validation error page showed another user's kernel source.
    leak = (
        "result = {}\n"
        + READ_ALL.format(paths=planted)
        + "leaked = [v for v in result.values() if v.startswith('read')]\n"
        + "if leaked:\n    raise RuntimeError('LEAKED ' + repr(leaked))\n"
    )
    problem = files.problem(sources["ELEMENTWISE"] + "\n" + leak, "snooping.py")
    spec = validate_problem(problem, "cpu")  # InvalidProblem with the leaked text if any read succeeded
    assert spec["outputs"], spec


def test_a_memory_bomb_is_stopped_by_the_kernel_limit_with_a_clear_verdict(
    run_eval, files, elementwise, honest, monkeypatch
):
    kind, why = cgroups.available()
    assert kind, why  # CI runs as root on a host with cgroups: the kernel's limit, not the polling watchdog
    monkeypatch.setattr(settings, "MEMORY_MB", 1536)
    # One allocation, written at once: faster than any polling of the process's size.
    source = 'import torch.nn as nn\nblob = b"x" * (6 << 30)\n\nclass ModelNew(nn.Module):\n    pass\n'
    t0 = time.monotonic()
    v = run_eval(elementwise, files.solution(source))
    assert v.status == "crashed" and v.reward == -1, (v.status, v.log[-2000:])
    assert "killed: memory above the sandbox's limit of 1536 MB" in v.log, v.log[-2000:]
    assert kind in v.isolation
    assert time.monotonic() - t0 < 60
    assert run_eval(elementwise, honest).status == "ok"  # the caller carries on


SYSCALLS = {
    "ptrace": (101, 0, 0, 0, 0),
    "unshare": (272, 0x10000000),
    "mount": (165, 0, 0, 0, 0, 0),
    "keyctl": (250, 0, -3, 0),
    "perf_event_open": (298, 0, 0, -1, -1, 0),
    "bpf": (321, 0, 0, 0),
    "setns": (308, 0, 0),
    "init_module": (175, 0, 0, 0),
}


def test_the_calls_solution_code_never_needs_are_refused(probe):
    assert sys.platform == "linux" and os.uname().machine == "x86_64"  # the numbers below are x86-64's
    result = probe(f"""
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        for name, args in {SYSCALLS!r}.items():
            ret = libc.syscall(*[ctypes.c_long(a) for a in args])
            result[name] = (ret, ctypes.get_errno())
        with open("/proc/self/status") as fh:
            result["mode"] = [line.split()[1] for line in fh if line.startswith("Seccomp:")][0]
        """)
    assert result.pop("mode") == "2"  # a seccomp filter is loaded
    # keyctl and perf_event_open answer other errors (or succeed) without the filter: EPERM is the filter's.
    assert result == {name: [-1, 1] for name in SYSCALLS}, result


def test_a_denied_call_gives_a_clear_error(run_eval, files, elementwise):
    source = """
        import ctypes, os
        import torch.nn as nn
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(0x10000000) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))

        class ModelNew(nn.Module):
            pass
        """
    v = run_eval(elementwise, files.solution(textwrap.dedent(source)))
    assert v.status == "load_error" and v.reward == -1, (v.status, v.log[-2000:])
    assert "Operation not permitted" in v.log and seccomp.DENIED_NOTE in v.log, v.log[-2000:]


def test_what_users_see_of_jailed_output_names_no_host_path(run_eval, files, elementwise, ks_cache_dir):
    source = """
        import os
        import torch
        raise RuntimeError(f"failing on purpose in {__file__}: cwd {os.getcwd()}/, torch {torch.__file__}, "
                           f"cache {os.environ['KS_CACHE_DIR']}, home {os.environ['HOME']}")
        """
    v = run_eval(elementwise, files.solution(textwrap.dedent(source)))
    assert v.status == "load_error", (v.status, v.log[-2000:])
    assert "failing on purpose in solution.py" in v.log, v.log[-3000:]
    assert "<site-packages>/torch/__init__.py" in v.log, v.log[-3000:]
    import torch

    for host_path in (
        str(settings.work_root()),
        str(ks_cache_dir),
        str(Path(torch.__file__).parent.parent),
        str(PACKAGE_ROOT),
        str(Path.home()),
    ):
        assert host_path not in v.log, (host_path, v.log[-3000:])


PARENT = """
import sys, time
from sandbox.isolation import Jail
jail = Jail("cand", "cpu")
proc = jail.start(["sleep", "300"])
print(jail.private, jail.uid, proc.pid, flush=True)
time.sleep(300)
"""


def test_a_killed_worker_leaves_no_jailed_process_and_its_folder_is_swept(monkeypatch, request):
    import psutil

    # A work root of its own: any jail made elsewhere on the host (a parallel test worker's) sweeps the shared one.
    # Under /tmp like the default one, where jailed uids can pass (pytest's tmp_path is its owner's alone).
    root = Path(tempfile.mkdtemp(prefix="ks-jail-test-"))
    os.chmod(root, 0o711)
    monkeypatch.setenv("KS_SANDBOX_WORK", str(root / "work"))
    request.addfinalizer(lambda: shutil.rmtree(root, ignore_errors=True))
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_ROOT)}
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True, env=env)
    private, uid, bwrap_pid = parent.stdout.readline().split()
    private = Path(private)
    deadline = time.monotonic() + 30
    while not [
        p
        for p in psutil.process_iter(["name", "uids"])
        if p.info["name"] == "sleep" and p.info["uids"] and str(p.info["uids"].real) == uid
    ]:
        assert time.monotonic() < deadline, "the jailed sleep never started"
        time.sleep(0.1)
    parent.send_signal(signal.SIGKILL)  # what RQ does to a stopped job's work horse
    parent.wait()
    deadline = time.monotonic() + 10
    while [p for p in psutil.process_iter(["uids"]) if p.info["uids"] and str(p.info["uids"].real) == uid]:
        assert time.monotonic() < deadline, "a jailed process outlived its worker"
        time.sleep(0.1)
    assert not psutil.pid_exists(int(bwrap_pid)) or psutil.Process(int(bwrap_pid)).status() == psutil.STATUS_ZOMBIE
    assert private.is_dir()  # nobody cleaned up after the killed worker...
    assert private in sweep_stale()  # ...until the next sweep
    assert not private.exists()


HELD_LOCK = """
import logging, os, threading, time
from sandbox.isolation import Jail
held, release = threading.Event(), threading.Event()

def hold():  # another thread of the harness, busy in logging (parallel evaluations and rollouts have such threads)
    with logging._lock:
        held.set()
        release.wait(60)

threading.Thread(target=hold, daemon=True).start()
held.wait()
jail = Jail("cand", "cpu")
t0 = time.monotonic()
proc = jail.start(["sleep", "30"])
started = round(time.monotonic() - t0, 1)
for _ in range(100):  # the launcher joins the group before it execs the jail
    in_leaf = open(f"/proc/{proc.pid}/cgroup").read().count(proc.leaf.folders[0].name)
    if in_leaf:
        break
    time.sleep(0.1)
print(started, in_leaf, flush=True)
release.set()
proc.kill()
proc.wait()
jail.close()
"""


def test_a_jail_starts_while_another_thread_holds_a_lock_of_the_interpreter(monkeypatch, request):
    """No Python code runs between fork and exec (it would take logging's lock and the import lock, and deadlock a
    harness whose other threads hold them: seen on the GPU host as 4 parallel evaluations hanging for good); the
    process still lands in its cgroup."""
    if not cgroups.available()[0]:
        pytest.skip(cgroups.available()[1])
    root = Path(tempfile.mkdtemp(prefix="ks-jail-test-"))
    os.chmod(root, 0o711)
    monkeypatch.setenv("KS_SANDBOX_WORK", str(root / "work"))
    request.addfinalizer(lambda: shutil.rmtree(root, ignore_errors=True))
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_ROOT)}
    run = subprocess.run([sys.executable, "-c", HELD_LOCK], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    seconds, in_leaf = run.stdout.split()
    assert float(seconds) < 30, f"starting the jail waited {seconds} s for the lock another thread held"
    assert int(in_leaf) >= 1, "the jailed process is not in its cgroup"


def test_without_cgroups_the_jail_says_why_and_falls_back_to_rlimits(probe, monkeypatch):
    monkeypatch.setattr(settings, "CGROUP", "off")
    cgroups.hierarchy.cache_clear()
    try:
        level = isolation_level()
        assert "+rlimits" in level and "no cgroup" in level and "KS_SANDBOX_CGROUP=off" in level, level
        result = probe("""
            import resource
            result["as"] = resource.getrlimit(resource.RLIMIT_AS)[0]
            """)
        assert result["as"] == 2 * settings.MEMORY_MB << 20
    finally:
        monkeypatch.undo()
        cgroups.hierarchy.cache_clear()
    assert cgroups.available()[0]
    assert resource.RLIM_INFINITY == -1


def test_an_exported_solution_builds_its_workspace_inside_its_own_jail(run_eval, files):
    # A solution.py in the workspace form (agent.workspace.workspace_solution_source: what a workspace that cannot be
    # a plain KernelBench solution is exported as) builds its sources at import; it finds no writable build cache in
    # its jail (only its evaluation's own build folder is there, read-only): it builds into its private folder.
    from agent.workspace import workspace_solution_source

    reference = PACKAGE_ROOT / "agent" / "reference" / "cpu_add_relu"
    sources = {
        str(p.relative_to(reference)): p.read_text()
        for p in reference.rglob("*")
        if p.is_file() and p.name != "problem.py" and "__pycache__" not in p.parts
    }
    exported = workspace_solution_source(sources, "a test", "a reason")
    v = run_eval(reference / "problem.py", files.solution(exported, "exported.py"))
    assert v.status == "ok" and v.correct, (v.status, v.log[-2000:])
