"""The RNN family end to end on the CPU target: nn.LSTM, nn.GRU and nn.RNN modules written the way users write them
(and a KernelBench level-3 LSTM scaled down), captured whole as aten.lstm / gru / rnn_*, planned as a GEMM of every
step's input projection and a step kernel per layer and direction, compiled, verified and submitted through
`python -m agent optimize`'s episode; plus the planner's decisions and its CUDA output compiled by nvcc."""

import json
import re
import shutil
from pathlib import Path

import pytest

from agent.heuristic.analyze import analyze
from agent.heuristic.codegen import workspace_files
from agent.heuristic.errors import Unsupported
from agent.heuristic.plan import make_plan

LSTM_CLASSIFIER = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, features, hidden, classes):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1, :])

def get_inputs():
    return [torch.randn(4, 12, 16)]

def get_init_inputs():
    return [16, 32, 5]
"""
GRU_HIDDEN = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, features, hidden):
        super().__init__()
        self.gru = nn.GRU(features, hidden, num_layers=2, bidirectional=True)

    def forward(self, x, h0):
        _, h_n = self.gru(x, h0)
        return h_n

def get_inputs():
    return [torch.randn(10, 3, 8), torch.randn(4, 3, 24)]

def get_init_inputs():
    return [8, 24]
"""
BIDIRECTIONAL_RNN_WITHOUT_BIAS = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(6, 16, num_layers=2, nonlinearity="relu", bias=False, bidirectional=True, batch_first=True)

    def forward(self, x):
        out, h_n = self.rnn(x)
        # the last layer's final states, forward then reverse: the reverse one is its output at time 0
        return out.sum(dim=1) + torch.cat((h_n[-2], h_n[-1]), dim=1)

def get_inputs():
    return [torch.randn(3, 7, 6)]

def get_init_inputs():
    return []
"""
PACKED = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 8)

    def forward(self, x, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, enforce_sorted=False)
        out, _ = self.lstm(packed)
        return nn.utils.rnn.pad_packed_sequence(out)[0]

def get_inputs():
    return [torch.randn(5, 2, 4), torch.tensor([5, 3])]

def get_init_inputs():
    return []
"""
SHARED = Path(__file__).resolve().parents[3] / "shared" / "kernelbench" / "problems.jsonl"


def kernelbench_lstm_scaled_down():
    """KernelBench level 3's 37_LSTMCn (a 6-layer batch_first LSTM given h0 and c0, returning c_n) at CPU-test sizes:
    its own source with the test configuration made small, as a user trimming it would."""
    source = next(
        p["code"]
        for p in map(json.loads, SHARED.read_text().splitlines())
        if p["level"] == 3 and p["name"] == "37_LSTMCn"
    )
    sizes = {"batch_size": 3, "sequence_length": 9, "input_size": 12, "hidden_size": 16, "num_layers": 3}
    for name, value in sizes.items():
        source, count = re.subn(rf"^{name} = \d+$", f"{name} = {value}", source, flags=re.M)
        assert count == 1, name
    return source


def plan_of(tmp_path, source):
    problem = tmp_path / "problem.py"
    problem.write_text(source)
    return make_plan(analyze(str(problem)))


CASES = [
    ("lstm_classifier", LSTM_CLASSIFIER),
    ("gru_hidden", GRU_HIDDEN),
    ("bidirectional_rnn_without_bias", BIDIRECTIONAL_RNN_WITHOUT_BIAS),
]
if SHARED.exists():
    CASES.append(("kernelbench_37_lstm_cn", kernelbench_lstm_scaled_down()))


@pytest.mark.parametrize("name,source", CASES, ids=[case[0] for case in CASES])
def test_a_recurrent_module_reaches_a_correct_solution_through_the_rnn_family(
    heuristic_episode, tmp_path, name, source
):
    traj = heuristic_episode(source, name)
    assert traj.stop_reason == "submitted", traj.stop_reason
    verdict = traj.verdict
    assert verdict["status"] == "ok" and verdict["correct"] and verdict["reward"] >= 1, verdict.get("log", "")[-3000:]
    workspace = tmp_path / "workspace"
    kernels = (workspace / "kernels" / "fused.cpp").read_text()
    assert "torch" not in kernels and "ks_rnn<" in kernels
    assert (workspace / "kernels" / "ks_rnn_cell.h").exists()
    # the library's headers come with the workspace: the teacher includes them and writes only its own files
    written = {c.arguments["path"] for turn in traj.turns for c in turn.tool_calls if c.name == "write_file"}
    assert written == {"binding.cpp", "kernels/fused.cpp", "model_new.py"}, written
    assert "ops.fused(" in (workspace / "model_new.py").read_text()


def test_each_layer_is_one_input_gemm_and_one_step_kernel_per_direction(tmp_path):
    plan = plan_of(tmp_path, LSTM_CLASSIFIER)
    kinds = [k.kind for k in plan.kernels]
    # per layer: the projection of every step's input, then the steps; the head's GEMM reads the last step's h
    assert kinds[:4] == ["gemm", "rnn", "gemm", "rnn"] and kinds.count("rnn") == 2
    first, second = (k for k in plan.kernels if k.kind == "rnn")
    assert first.node.attrs["mode"] == "lstm" and first.node.attrs["steps"] == 12
    # layer 0 projects batch_first x in its own order (no transposed copy); layer 1 reads layer 0's states in place
    assert (first.node.attrs["x_time"], first.node.attrs["x_batch"]) == (1, 12)
    second_projection = plan.kernels[kinds.index("rnn") + 1]
    assert second_projection.layout["a"] is first.node
    assert plan.batch_plans.get("reason") is None  # the batch size is read at run time


def test_a_bidirectional_layer_runs_its_second_direction_in_reverse(tmp_path):
    plan = plan_of(tmp_path, BIDIRECTIONAL_RNN_WITHOUT_BIAS)
    steps = [k.node.attrs for k in plan.kernels if k.kind == "rnn"]
    assert [(a["mode"], a["reverse"], a["bias"]) for a in steps] == [
        ("rnn_relu", False, False),
        ("rnn_relu", True, False),
    ] * 2


def test_a_packed_sequence_is_refused_by_name(tmp_path):
    with pytest.raises(Unsupported, match="pack"):
        plan_of(tmp_path, PACKED)


NVCC = shutil.which("nvcc")


@pytest.mark.skipif(NVCC is None, reason="no nvcc on this machine")
@pytest.mark.parametrize("name,source", CASES[:3], ids=[case[0] for case in CASES[:3]])
def test_the_rnn_familys_cuda_kernels_compile_with_nvcc(tmp_path, nvcc_compile, name, source):
    plan = plan_of(tmp_path, source)
    files = workspace_files(plan, "cuda", source)
    assert "ks_rnn<" in files["kernels/fused.cu"] and "kernels/ks_rnn.cuh" in files
    result = nvcc_compile(files)
    if "cublas_v2.h" in result.stderr and "No such file" in result.stderr:
        pytest.skip("this machine's CUDA toolkit has no cuBLAS headers (tests/gpu builds these on the GPU host)")
    assert result.returncode == 0, result.stderr[-3000:]
