"""What a job leaves running: a child subreaper adopts the orphans of its descendants (a killed work horse's jails,
daemons that left their session) and end_children() ends them all, keeping the children it is told to keep."""

import json
import subprocess
import sys
import textwrap

import psutil

# A worker that becomes a subreaper and keeps one child (a scheduler), then forks a "work horse" that starts two
# processes in sessions of their own (as jails are), one with a child of its own, and is SIGKILLed (as a stopped
# job's horse is). Prints what the horse started, then what the worker saw and did, as JSON lines.
SCENARIO = textwrap.dedent("""
    import json, os, signal, subprocess, sys, time
    import psutil
    from studio.lib import processes

    SLEEP = [sys.executable, "-c", "import time; time.sleep(60)"]
    processes.become_subreaper()
    kept = subprocess.Popen(SLEEP)
    read, write = os.pipe()
    horse = os.fork()
    if horse == 0:
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "start_new_session": True}
        daemon = subprocess.Popen(SLEEP, **quiet)
        nested = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                                   "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
                                   "time.sleep(60)"], **quiet)
        while not psutil.Process(nested.pid).children():
            time.sleep(0.05)
        os.write(write, json.dumps({"daemon": daemon.pid, "nested": nested.pid}).encode() + b"\\n")
        time.sleep(60)
        os._exit(0)
    started = json.loads(os.fdopen(read).readline())
    print(json.dumps(started), flush=True)
    os.kill(horse, signal.SIGKILL)
    os.waitpid(horse, 0)
    orphans = sorted(c.pid for c in psutil.Process().children() if c.pid != kept.pid)
    ended = processes.end_children(keep={kept.pid})
    left = sorted(c.pid for c in psutil.Process().children())
    print(json.dumps({"orphans": orphans, "ended": ended, "left": left, "kept": kept.pid}), flush=True)
    kept.kill()
""")


def test_the_orphans_of_a_killed_work_horse_are_adopted_and_ended_and_kept_children_stay():
    proc = subprocess.run([sys.executable, "-c", SCENARIO], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    started, result = (json.loads(line) for line in proc.stdout.splitlines())
    # Both processes the horse started in sessions of their own outlived it and were handed to the subreaper.
    assert set(result["orphans"]) == {started["daemon"], started["nested"]}
    assert result["ended"] == 3 and result["left"] == [result["kept"]]  # the nested one's child ended with it
    assert not any(psutil.pid_exists(pid) for pid in (started["daemon"], started["nested"]))


def test_without_a_subreaper_the_orphans_escape_to_init():
    # The same scenario without become_subreaper(): what the worker would have lost track of.
    proc = subprocess.run(
        [sys.executable, "-c", SCENARIO.replace("processes.become_subreaper()", "")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    started, result = (json.loads(line) for line in proc.stdout.splitlines())
    try:
        assert result["orphans"] == [] and result["ended"] == 0
        assert all(psutil.pid_exists(pid) for pid in (started["daemon"], started["nested"]))
    finally:
        for pid in (started["daemon"], started["nested"]):
            try:
                for process in [psutil.Process(pid)] + psutil.Process(pid).children(recursive=True):
                    process.kill()
            except psutil.NoSuchProcess:
                pass
