"""The heuristic's analysis through the warm pool: the bash tool hands `python -m agent.heuristic.analyze FILE` to a
warm pooled process and observes exactly what a fresh jail gives (output, exit status, analysis.json); without a pool,
or when its process died, the command runs in a fresh jail and the episode goes on."""

import logging
import os
import signal
import time

import pytest
from sandbox.warm_pool import SOCKET_ENV, status

from agent import warm_analysis
from agent.loop import Episode, EpisodeConfig
from agent.policies.heuristic import HeuristicPolicy
from agent.tools import SCHEMAS, Tools
from agent.workspace import Workspace

COMMAND = "python -m agent.heuristic.analyze problem.py"
HEADER = "import torch\nimport torch.nn as nn\n\n\n"
INPUTS = "\n\ndef get_inputs():\n    return [torch.randn(16, 3, 12, 12)]\n\n\ndef get_init_inputs():\n    return []\n"
PROBLEMS = {
    "elementwise": HEADER
    + "class Model(nn.Module):\n    def forward(self, x):\n        return torch.sigmoid(x) * 2.0 - 0.5\n"
    + INPUTS,
    "conv_and_norm": HEADER
    + "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    + "        self.conv = nn.Conv2d(3, 8, 3)\n        self.norm = nn.BatchNorm2d(8)\n\n"
    + "    def forward(self, x):\n        return torch.relu(self.norm(self.conv(x)))\n"
    + INPUTS,
    # What the analysis reports as a reason, and what it fails on with a traceback.
    "forward_raises": HEADER
    + "class Model(nn.Module):\n    def forward(self, x):\n        raise ValueError('no forward here')\n"
    + INPUTS,
    "inputs_raise": HEADER
    + "class Model(nn.Module):\n    def forward(self, x):\n        return x\n"
    + INPUTS.replace("return [torch.randn(16, 3, 12, 12)]", "raise RuntimeError('no inputs')"),
}


@pytest.fixture(scope="module")
def pool():
    daemon = warm_analysis.start_pool(["cpu"], 1)
    yield daemon
    daemon.stop()


def wait_ready(path, timeout=300):
    deadline = time.monotonic() + timeout
    while not any(p["state"] == "ready" for p in status(path)["processes"]):
        assert time.monotonic() < deadline, f"no warm analysis process within {timeout} s"
        time.sleep(0.2)
    return status(path)


def analyse(folder, source, command=COMMAND):
    """The bash tool's observation of COMMAND in a fresh workspace of SOURCE, and the analysis.json it left."""
    folder.mkdir()
    (folder / "problem_src.py").write_text(source)
    ws = Workspace.create(folder / "ws", folder / "problem_src.py", "cpu")
    observation = Tools(ws, ws.problem, None).tool_bash(command).observation
    written = ws.root / "analysis.json"
    return observation, written.read_text() if written.exists() else None


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_a_pooled_analysis_observes_what_a_fresh_jail_does(name, pool, tmp_path, monkeypatch):
    monkeypatch.delenv(SOCKET_ENV, raising=False)
    fresh = analyse(tmp_path / "fresh", PROBLEMS[name])
    served = wait_ready(pool.socket)["served"]
    monkeypatch.setenv(SOCKET_ENV, str(pool.socket))
    pooled = analyse(tmp_path / "pooled", PROBLEMS[name])
    assert status(pool.socket)["served"] == served + 1  # the pool ran it
    assert pooled == fresh
    if name == "inputs_raise":
        assert "Traceback (most recent call last)" in pooled[0] and pooled[0].startswith("exit code 1")
    else:
        assert pooled[0].startswith("exit code 0") and pooled[1]


def test_a_misused_analysis_exits_as_a_fresh_one_does(pool, tmp_path, monkeypatch):
    command = "python -m agent.heuristic.analyze missing.py"
    monkeypatch.delenv(SOCKET_ENV, raising=False)
    fresh = analyse(tmp_path / "fresh", PROBLEMS["elementwise"], command)
    served = wait_ready(pool.socket)["served"]
    monkeypatch.setenv(SOCKET_ENV, str(pool.socket))
    pooled = analyse(tmp_path / "pooled", PROBLEMS["elementwise"], command)
    assert status(pool.socket)["served"] == served + 1
    assert pooled == fresh and pooled[0].startswith("exit code 2") and "missing.py does not exist" in pooled[0]


def test_only_the_analysis_command_goes_to_the_pool():
    assert warm_analysis.arguments(COMMAND) == ["problem.py"]
    assert warm_analysis.arguments("  python -m agent.heuristic.analyze sub/p-1.py\n") == ["sub/p-1.py"]
    for other in (
        "python -m agent.heuristic.analyze problem.py | head",
        "python -m agent.heuristic.analyze problem.py; rm -rf kernels",
        "python -m agent.heuristic.analyze $(cat x)",
        "python -m agent.heuristic.analyze a.py b.py",
        "cd kernels && python -m agent.heuristic.analyze problem.py",
    ):
        assert warm_analysis.arguments(other) is None, other


def test_without_a_pool_the_analysis_runs_in_a_fresh_jail(tmp_path, monkeypatch, caplog):
    monkeypatch.delenv(SOCKET_ENV, raising=False)  # KS_WARM_POOL=0: the worker starts none and names none
    with caplog.at_level(logging.WARNING, logger="agent.tools"):
        observation, written = analyse(tmp_path / "off", PROBLEMS["elementwise"])
    assert observation.startswith("exit code 0") and "ANALYSIS " in observation and written
    assert not caplog.records  # nothing to warn about: no pool was asked for


def test_a_dead_pooled_process_is_logged_and_the_episode_goes_on_in_a_fresh_jail(tmp_path, monkeypatch, caplog, capfd):
    monkeypatch.setenv("KS_WARM_POOL_WAIT", "0")  # the pool's own setting: a request never waits for a replacement
    daemon = warm_analysis.start_pool(["cpu"], 1)
    try:
        (process,) = wait_ready(daemon.socket)["processes"]
        os.killpg(process["pid"], signal.SIGKILL)
        monkeypatch.setenv(SOCKET_ENV, str(daemon.socket))
        (tmp_path / "problem.py").write_text(PROBLEMS["elementwise"])
        policy = HeuristicPolicy()
        with caplog.at_level(logging.WARNING, logger="agent.tools"):
            trajectory = Episode(
                tmp_path / "problem.py", policy, tmp_path / "ws", EpisodeConfig(device="cpu", max_turns=1)
            ).run()
        assert status(daemon.socket)["served"] == 0
    finally:
        daemon.stop()
    # The pool's log says which process died and how; the episode's, that its analysis ran without the pool and why
    # (found dead when leased, or the pool backing off, or its replacement still warming, as the timing fell).
    died = f"process {process['pid']} (cpu) died before use (killed by signal SIGKILL)"
    lost = f"the warm cpu process {process['pid']} had died before use (killed by signal SIGKILL)"
    assert died in capfd.readouterr().err or lost in caplog.text
    (warning,) = [r.getMessage() for r in caplog.records]
    assert "the analysis runs in a fresh jail: " in warning
    assert lost in warning or "no warm cpu process" in warning
    observation = trajectory.turns[0].tool_calls[0].observation
    assert observation.startswith("exit code 0") and "ANALYSIS " in observation
    # The policy read the analysis: its next action writes the kernel.
    assert any(call.name == "write_file" for call in policy.act([], SCHEMAS).tool_calls)
