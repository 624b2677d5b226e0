"""A reduction's elementwise epilogue computed in the reduction's own kernel (schedule.py's fuse_epilogues): the plan
has one kernel fewer than with every reduction in a buffer of its own, the C++ solution matches PyTorch, the CUDA one
compiles; a reduction read elsewhere too, or broadcast back over its rows, keeps its buffer."""

import shutil

import pytest
import torch

from agent.heuristic.analyze import analyze
from agent.heuristic.codegen import workspace_files
from agent.heuristic.dag.schedule import Scheduler
from agent.heuristic.plan import make_plan

HEAD = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
MEAN_BIAS_RELU = (
    HEAD
    + """
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(32))

    def forward(self, x):
        return torch.relu(x.mean(-1) + self.bias)

def get_inputs():
    return [torch.randn(32, 300)]

def get_init_inputs():
    return []
"""
)
# the root mean square read by a GEMM and broadcast over the rows: the reduction's kernel writes sqrt(mean + eps)
ROOT_MEAN_SQUARE = (
    HEAD
    + """
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(1, 24))

    def forward(self, x):
        rms = torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-6)
        return torch.cat([rms @ self.w, x / rms], dim=-1)

def get_inputs():
    return [torch.randn(16, 64)]

def get_init_inputs():
    return []
"""
)
SOFT_TARGET_LOSS = (
    HEAD
    + """
class Model(nn.Module):
    def forward(self, x, t):
        return -(F.log_softmax(x, dim=-1) * t).sum(-1).mean() * 0.5

def get_inputs():
    return [torch.randn(64, 40), torch.rand(64, 40)]

def get_init_inputs():
    return []
"""
)
SCALED_AMAX = (
    HEAD
    + """
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(8, 5))
        self.shift = nn.Parameter(torch.randn(5))

    def forward(self, x):
        return x.amax(1) * self.scale + self.shift

def get_inputs():
    return [torch.randn(8, 30, 5)]

def get_init_inputs():
    return []
"""
)
# a chain of epilogue ops reading the finished value twice, and a second reduction of the same rows
TWO_REDUCTIONS_CHAINED = (
    HEAD
    + """
class Model(nn.Module):
    def forward(self, x):
        s = x.sum(1) * 0.5
        return torch.tanh(s * torch.sigmoid(s)) - x.amin(1)

def get_inputs():
    return [torch.randn(6, 70, 3)]

def get_init_inputs():
    return []
"""
)
FUSED = {
    "mean_bias_relu": MEAN_BIAS_RELU,
    "root_mean_square": ROOT_MEAN_SQUARE,
    "soft_target_loss": SOFT_TARGET_LOSS,
    "scaled_amax": SCALED_AMAX,
    "two_reductions_chained": TWO_REDUCTIONS_CHAINED,
}
# the mean broadcast back over its rows: computing it per element would redo each row's reduction
CENTERED_GATE = (
    HEAD
    + """
class Model(nn.Module):
    def forward(self, x):
        m = x.mean(-1, keepdim=True)
        return (x - m) * torch.sigmoid(m)

def get_inputs():
    return [torch.randn(16, 64)]

def get_init_inputs():
    return []
"""
)
# the sum read by a scan and by an elementwise op: one buffer, not the reduction twice
SCANNED_AND_SCALED = (
    HEAD
    + """
class Model(nn.Module):
    def forward(self, x):
        s = x.sum(-1)
        return torch.cat([s.cumsum(0), s * 2.0])

def get_inputs():
    return [torch.randn(16, 64)]

def get_init_inputs():
    return []
"""
)
KEPT = {"centered_gate": CENTERED_GATE, "scanned_and_scaled": SCANNED_AND_SCALED}


def dag_plan(tmp_path, source):
    problem = tmp_path / "problem.py"
    problem.write_text(source)
    plan = make_plan(analyze(str(problem)))
    assert plan.kind == "graph", plan.describe
    return plan


def kernel_count_without_epilogues(tmp_path, source, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(Scheduler, "fuse_epilogues", lambda self, roots, once, user_output: None)
        return len(dag_plan(tmp_path, source).kernels)


def inputs_of(source):
    namespace = {}
    exec(source, namespace)  # noqa: S102 -- the test's own module
    torch.manual_seed(0)
    return namespace["get_inputs"]()


@pytest.mark.parametrize("source", FUSED.values(), ids=FUSED.keys())
def test_a_reduction_read_only_by_its_epilogue_is_finished_in_the_epilogues_kernel(
    tmp_path, monkeypatch, cpu_solution, source
):
    plan = dag_plan(tmp_path, source)
    fused = sum(len(k.layout.get("reductions", [])) for k in plan.kernels)
    assert fused >= 1
    assert len(plan.kernels) == kernel_count_without_epilogues(tmp_path, source, monkeypatch) - fused
    solution, model, _ = cpu_solution(source)
    solution.load_state_dict(model.state_dict())
    inputs = inputs_of(source)
    with torch.no_grad():
        torch.testing.assert_close(solution(*inputs), model(*inputs), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("source", KEPT.values(), ids=KEPT.keys())
def test_a_reduction_broadcast_back_or_read_by_another_kernel_keeps_its_buffer(
    tmp_path, monkeypatch, cpu_solution, source
):
    problem = tmp_path / "problem.py"
    problem.write_text(source)
    plan = make_plan(analyze(str(problem)))
    if plan.kind == "graph":
        assert len(plan.kernels) == kernel_count_without_epilogues(tmp_path, source, monkeypatch)
        assert not any(k.layout.get("reductions") for k in plan.kernels)
    solution, model, _ = cpu_solution(source)
    inputs = inputs_of(source)
    with torch.no_grad():
        torch.testing.assert_close(solution(*inputs), model(*inputs), atol=1e-5, rtol=1e-5)


# (a GEMM needs cuBLAS's headers, which this machine's toolkit may lack: tests/gpu builds those on the GPU host)
WITHOUT_GEMM = {name: source for name, source in FUSED.items() if name != "root_mean_square"}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc on this machine")
@pytest.mark.parametrize("source", WITHOUT_GEMM.values(), ids=WITHOUT_GEMM.keys())
def test_a_fused_epilogue_compiles_with_nvcc(tmp_path, nvcc_compile, source):
    plan = dag_plan(tmp_path, source)
    files = workspace_files(plan, "cuda", source)
    result = nvcc_compile(files)
    assert result.returncode == 0, result.stderr[-3000:]


def test_a_long_rows_epilogue_is_applied_once_after_the_blocks_reduction(tmp_path):
    plan = dag_plan(tmp_path, MEAN_BIAS_RELU)
    cuda = workspace_files(plan, "cuda", MEAN_BIAS_RELU)["kernels/fused.cu"]
    (kernel,) = [line for line in cuda.split("__global__")[1:]]
    assert kernel.count("block_reduce(") == 1 and kernel.count("for (int64_t r") == 1
    assert "if (threadIdx.x == 0) out[i]" in kernel
