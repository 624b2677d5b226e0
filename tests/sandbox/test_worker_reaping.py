"""No jailed process outlives its evaluation (issue 17: zombies after the benchmarks): each worker is the subreaper
of what its children leave, and ends and reaps all of it before it exits."""

import os
import subprocess
import sys
import textwrap

import psutil

# Runs as its own process: a worker's start and end around children that leave an orphan behind.
SCENARIO = textwrap.dedent("""
    import json, os, subprocess, sys, time
    from sandbox.workers.common import _children, become_worker, reap_children

    become_worker()
    # A child that starts a grandchild and exits at once: the grandchild is an orphan, handed to this process.
    subprocess.Popen([sys.executable, "-c", "import subprocess, sys; subprocess.Popen(['sleep', '60']); sys.exit(0)"])
    long_lived = subprocess.Popen(["sleep", "60"])
    deadline = time.monotonic() + 10
    while len(_children()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    adopted = len(_children())
    reap_children()
    print(json.dumps({"adopted": adopted, "left": _children()}))
""")


def test_a_worker_ends_and_reaps_what_its_children_leave():
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    proc = subprocess.run(
        [sys.executable, "-c", SCENARIO], check=False, capture_output=True, text=True, timeout=60, env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    import json

    result = json.loads(proc.stdout.strip().splitlines()[-1])
    # The orphaned grandchild came to the worker (its own child, sleep, too), and nothing is left: not running, not
    # a zombie.
    assert result["adopted"] >= 2 and result["left"] == [], result


LEAVES_PROCESSES = """
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn as nn

# Solution code that leaves processes behind: a child never waited for, and a daemon in a session of its own.
subprocess.Popen(["sleep", "120"])
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "120"])
    os._exit(0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return torch.from_numpy(np.maximum(x.numpy() + y.numpy(), 0.0) * np.float32(2.0))
"""


def test_no_process_a_solution_started_outlives_its_evaluation(run_eval, files, elementwise, jailed_processes):
    v = run_eval(elementwise, files.solution(LEAVES_PROCESSES), shape_check=False)
    assert v.status == "ok", (v.status, v.log[-2000:])
    assert jailed_processes(wait=2.0) == []
    zombies = [c.pid for c in psutil.Process().children(recursive=True) if c.status() == psutil.STATUS_ZOMBIE]
    assert zombies == []
