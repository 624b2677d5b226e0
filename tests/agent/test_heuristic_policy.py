"""The heuristic policy end to end on the CPU target: real analysis, code generation, builds and evaluations."""
import pytest

from agent.heuristic.plan import Unsupported, make_plan
from agent.loop import Episode, EpisodeConfig
from agent.policies import make_policy
from sandbox import EvalConfig

ELEMENTWISE_CHAIN = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(channels, 1, 1))

    def forward(self, x, y):
        return torch.sigmoid((x + self.bias) * 0.5) - torch.nn.functional.gelu(y) * 2.0

def get_inputs():
    return [torch.randn(8, 16, 32, 32), torch.randn(8, 16, 32, 32)]

def get_init_inputs():
    return [16]
"""
ROW_REDUCTION = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x * 2.0, dim=-1) + 1.0

def get_inputs():
    return [torch.randn(64, 1000)]

def get_init_inputs():
    return []
"""
LINEAR_EPILOGUE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, features_in, features_out):
        super().__init__()
        self.linear = nn.Linear(features_in, features_out)

    def forward(self, x):
        return torch.sigmoid(torch.relu(self.linear(x) - 0.5) / 2.0) * 3.0 + 1.0

def get_inputs():
    return [torch.randn(8, 32)]

def get_init_inputs():
    return [32, 32]
"""
CONV = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    def forward(self, x):
        return torch.relu(self.conv(x))

def get_inputs():
    return [torch.randn(2, 3, 16, 16)]

def get_init_inputs():
    return []
"""


def run_episode(tmp_path, source, name):
    problem = tmp_path / f"{name}.py"
    problem.write_text(source)
    config = EpisodeConfig(device="cpu", max_turns=8,
                           eval=EvalConfig(device="cpu", compiled_baseline=False, time_budget_s=0.4))
    return Episode(problem, make_policy("heuristic"), tmp_path / "workspace", config).run()


@pytest.mark.parametrize("name,source", [("chain", ELEMENTWISE_CHAIN), ("softmax", ROW_REDUCTION),
                                         ("linear", LINEAR_EPILOGUE)])
def test_the_heuristic_reaches_a_correct_faster_solution_on_cpu(tmp_path, name, source):
    traj = run_episode(tmp_path, source, name)
    assert traj.stop_reason == "submitted"
    assert traj.verdict["status"] == "ok" and traj.verdict["correct"]
    assert traj.verdict["reward"] >= 1, traj.verdict
    tools = [call.name for turn in traj.turns for call in turn.tool_calls]
    assert tools[0] == "bash" and "compile" in tools and tools[-1] == "submit"
    assert "fused" in (tmp_path / "workspace" / "binding.cpp").read_text()


def test_the_heuristic_names_the_operator_it_cannot_handle_and_writes_no_fallback(tmp_path):
    traj = run_episode(tmp_path, CONV, "conv")
    assert traj.stop_reason.startswith("policy_error") and "Conv2d" in traj.stop_reason
    assert traj.verdict["reward"] == -1
    written = [call for turn in traj.turns for call in turn.tool_calls if call.name == "write_file"]
    assert written == []


def test_plans_refuse_random_operators():
    analysis = {"ok": True, "params": {}, "nodes": [
        {"name": "x", "op": "placeholder", "args": [], "kwargs": {}, "shape": [4, 4], "dtype": "float32"},
        {"name": "dropout", "op": "call_module", "target": "Dropout", "args": [{"node": "x"}], "kwargs": {},
         "attrs": {"p": 0.5}, "shape": [4, 4], "dtype": "float32"},
        {"name": "output", "op": "output", "args": [{"node": "dropout"}], "kwargs": {}, "shape": [4, 4], "dtype": "float32"}]}
    with pytest.raises(Unsupported, match="dropout"):
        make_plan(analysis)
