"""A worker of users' runs keeps a warm analysis pool (KS_WARM_POOL processes per device): a run's first turn, the
heuristic's analysis, is run by a pooled process; with KS_WARM_POOL=0 there is no pool and it runs in a fresh jail.
(Burst workers, which drain their queue and exit, keep none.)"""

import time

import django_rq
import pytest
from django.contrib.auth import get_user_model

from studio.models import Problem, Run, RunEvent

pytestmark = pytest.mark.django_db(transaction=True)

CHAIN = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x * 2.0 + 1.0) - 0.5

def get_inputs():
    return [torch.randn(32, 512)]

def get_init_inputs():
    return []
"""


@pytest.fixture
def first_turn(client, start_worker):
    """Start a one-turn heuristic run on the CPU, run it on a real `rqworker cpu` (ENV added to its environment);
    (the run's first turn, the worker's output)."""

    def start(**env):
        user = get_user_model().objects.create_user("ada", password="pw")
        client.force_login(user)
        django_rq.get_queue("cpu").empty()
        problem = Problem.objects.create(owner=user, name="chain", source=CHAIN, sha256="0" * 64, device="cpu")
        client.post(f"/problems/{problem.pk}/runs", {"policy": "heuristic", "device": "cpu", "max_turns": 1})
        worker = start_worker("cpu", **env)
        run = Run.objects.get()
        deadline = time.monotonic() + 600
        while run.status in ("queued", "running"):
            assert time.monotonic() < deadline and worker.poll() is None, worker.log.read_text()[-3000:]
            time.sleep(0.5)
            run.refresh_from_db()
        turn = RunEvent.objects.get(run=run, kind="turn").payload
        return turn, worker.log.read_text()

    return start


def test_a_runs_first_turn_is_analysed_by_the_workers_warm_pool(first_turn):
    # The worker starts its pool as it starts; the run waits for the process to warm rather than run without it.
    turn, log = first_turn(KS_WARM_POOL="1", KS_WARM_POOL_WAIT="600")
    call = turn["tool_calls"][0]
    assert call["arguments"]["command"] == "python -m agent.heuristic.analyze problem.py"
    assert call["observation"].startswith("exit code 0") and "\nANALYSIS " in call["observation"]
    assert "warm pool: process" in log and "ran ['problem.py'], exited with code 0" in log, log[-3000:]
    assert "the analysis runs in a fresh jail" not in log


def test_a_worker_with_the_pool_off_analyses_in_a_fresh_jail(first_turn):
    turn, log = first_turn(KS_WARM_POOL="0")
    call = turn["tool_calls"][0]
    assert call["observation"].startswith("exit code 0") and "\nANALYSIS " in call["observation"]
    assert "warm pool" not in log and "fresh jail" not in log
