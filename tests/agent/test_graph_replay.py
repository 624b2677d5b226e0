"""Whole-forward CUDA-graph replay (issue 16 point 4) as the DAG planner writes it, checked without a GPU: which plans
replay (many small kernels), the binding that replays them (static inputs copied in, the graph launched on the caller's
stream, the output copied out, direct launches while the stream is capturing), that it compiles against the stable
ABI's headers, and that the CPU target is unchanged. tests/gpu/test_graph_replay_gpu.py runs it."""

import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest
import torch

from agent.heuristic.analyze import analyze
from agent.heuristic.codegen import workspace_files
from agent.heuristic.dag import codegen as dag_codegen
from agent.heuristic.plan import make_plan
from agent.loop import Episode, EpisodeConfig
from agent.policies import make_policy
from sandbox import EvalConfig

# A level-3-like network at a size where each kernel moves a few thousand elements: a dozen launches a call.
SMALL_NETWORK = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, dim, classes):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, 2 * dim)
        self.down = nn.Linear(2 * dim, dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        h = x + self.down(torch.relu(self.up(self.norm(x))))
        return torch.softmax(self.head(h), dim=1)

def get_inputs():
    return [torch.randn(BATCH, DIM)]

def get_init_inputs():
    return [DIM, 10]
"""
ONE_KERNEL = """import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2.0

def get_inputs():
    return [torch.randn(64, 64)]

def get_init_inputs():
    return []
"""


def network(batch=32, dim=64):
    return SMALL_NETWORK.replace("BATCH", str(batch)).replace("DIM", str(dim))


def plan_of(tmp_path, source):
    problem = tmp_path / "problem.py"
    problem.write_text(source)
    return make_plan(analyze(str(problem)))


def test_a_plan_of_many_small_kernels_replays_as_one_cuda_graph(tmp_path):
    source = network()
    plan = plan_of(tmp_path, source)
    per_call = [k for k in plan.kernels if not k.once]
    assert plan.kind == "graph" and len(per_call) >= dag_codegen.REPLAY_MIN_KERNELS
    binding = workspace_files(plan, "cuda", source)["binding.cpp"]
    fused = binding[binding.index("Tensor fused(") :]
    # every kernel of the call is launched by the launch lambda, on the stream it is given (the capture's or the
    # caller's), after the buffers it writes are allocated by the allocate lambda
    launch = fused[fused.index("auto launch") : fused.index("    };\n", fused.index("auto launch"))]
    assert launch.count(", s);") == len(per_call)
    assert "auto allocate = [&]()" in fused and "return ks_forward({&a_n" in fused
    # the replay: the inputs copied in, the graph launched, the output copied out, on the caller's stream; direct
    # launches while that stream is capturing
    for needed in ("cudaStreamIsCapturing", "cudaMemcpyAsync", "cudaGraphLaunch(g->exec, stream)", "empty_like"):
        assert needed in binding
    # the kernels read the batch size at run time: the graph is keyed by the inputs' sizes
    assert plan.specialized is None and "ks_set_batch(ks_batch)" in fused


def test_few_or_large_kernels_launch_directly(tmp_path):
    large = network(batch=4096, dim=1024)  # each kernel moves millions of elements: the GPU is the bottleneck
    plan = plan_of(tmp_path, large)
    assert len([k for k in plan.kernels if not k.once]) >= dag_codegen.REPLAY_MIN_KERNELS
    assert "ks_forward(" not in workspace_files(plan, "cuda", large)["binding.cpp"]
    plan = plan_of(tmp_path, ONE_KERNEL)
    files = workspace_files(plan, "cuda", ONE_KERNEL)
    assert "ks_forward(" not in files["binding.cpp"] and "cudaGraph" not in files["binding.cpp"]


def test_the_rule_weighs_a_gemms_multiply_adds_against_elements_moved(tmp_path):
    plan = plan_of(tmp_path, network())
    dag_codegen.workspace_files(plan, "cuda", network())
    functions = {f[4].node.name: f for f in plan.writer.functions}
    gemm = next(k.node for k in plan.kernels if k.kind == "gemm")
    m, n = gemm.shape
    k = gemm.args[0].shape[-1]
    moved = m * n + m * k + k * n  # its output, and the two operands it reads
    assert dag_codegen.kernel_work(plan, functions[gemm.name]) == moved + m * n * k // dag_codegen.FMA_PER_ELEMENT


def test_the_cpu_target_is_unchanged(tmp_path):
    source = network()
    files = workspace_files(plan_of(tmp_path, source), "cpu", source)
    assert not any("cuda" in text.lower() for text in files.values())
    assert "ks_forward" not in files["binding.cpp"] and "return b_n" in files["binding.cpp"]
    problem = tmp_path / "small_network.py"
    problem.write_text(source)
    config = EpisodeConfig(
        device="cpu", max_turns=8, eval=EvalConfig(device="cpu", compiled_baseline=False, time_budget_s=0.4)
    )
    traj = Episode(problem, make_policy("heuristic"), tmp_path / "workspace", config).run()
    assert traj.stop_reason == "submitted", traj.stop_reason
    assert traj.verdict["status"] == "ok" and traj.verdict["correct"], traj.verdict.get("log")


def _cuda_include():
    nvcc = shutil.which("nvcc")
    for folder in ([Path(nvcc).resolve().parents[1] / "include"] if nvcc else []) + [Path("/usr/local/cuda/include")]:
        if (folder / "cuda_runtime.h").exists():
            return folder
    return None


@pytest.mark.skipif(_cuda_include() is None, reason="no CUDA toolkit headers on this machine")
def test_the_replaying_binding_compiles_against_the_stable_abi(tmp_path):
    source = network()
    files = workspace_files(plan_of(tmp_path, source), "cuda", source)
    binding = files["binding.cpp"]
    assert "ks_forward(" in binding
    (tmp_path / "binding.cpp").write_text(binding)
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "ks_checks.h").write_text(files["kernels/ks_checks.h"])  # the library's, it includes
    root = Path(torch.__file__).parent
    result = subprocess.run(
        [
            "g++",
            "-std=c++17",
            "-fsyntax-only",
            "-DUSE_CUDA",
            "-DKS_NAMESPACE=ks_replay_test",
            f"-I{root / 'include'}",
            f"-I{root / 'include' / 'torch' / 'csrc' / 'api' / 'include'}",
            f"-I{sysconfig.get_paths()['include']}",
            f"-I{_cuda_include()}",
            str(tmp_path / "binding.cpp"),
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
