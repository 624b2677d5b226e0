"""The heuristic's GEMMs and convolutions on the CPU target: verified through sandbox.evaluate, linked to OpenBLAS."""

import subprocess

import pytest
import torch

from agent.heuristic.analyze import analyze
from agent.heuristic.codegen import workspace_files
from agent.heuristic.plan import make_plan
from sandbox import EvalConfig, evaluate
from sandbox.native.build import build_workspace

LINEAR_GELU = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(96, 80)

    def forward(self, x):
        return torch.nn.functional.gelu(self.linear(x)) * 0.5

def get_inputs():
    return [torch.randn(70, 96)]

def get_init_inputs():
    return []
"""
CONV2D_RELU = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(6, 10, 3, stride=(1, 2), padding=1, dilation=(2, 1))
        self.scale = nn.Parameter(torch.randn(10, 1, 1))

    def forward(self, x):
        return torch.relu(self.conv(x) * self.scale)

def get_inputs():
    return [torch.randn(3, 6, 21, 18)]

def get_init_inputs():
    return []
"""
BATCHED_MATMUL = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, a, b):
        return torch.tanh(torch.matmul(a, b))

def get_inputs():
    return [torch.randn(3, 40, 24), torch.randn(3, 24, 36)]

def get_init_inputs():
    return []
"""


def heuristic_workspace(folder, source):
    """The problem file and the workspace the heuristic policy writes for SOURCE on the CPU target."""
    folder.mkdir(parents=True, exist_ok=True)
    problem = folder / "problem.py"
    problem.write_text(source)
    plan = make_plan(analyze(str(problem)))
    workspace = folder / "workspace"
    for rel, text in workspace_files(plan, "cpu", source).items():
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text(text)
    return problem, workspace


@pytest.mark.parametrize("source", [LINEAR_GELU, CONV2D_RELU, BATCHED_MATMUL], ids=["linear_gelu", "conv2d", "bmm"])
def test_gemms_and_convolutions_verify_through_openblas_on_cpu(tmp_path, source):
    problem, workspace = heuristic_workspace(tmp_path, source)
    verdict = evaluate(
        problem,
        workspace,
        EvalConfig(device="cpu", trials=2, compiled_baseline=False, time_budget_s=0.2, timeout_s=300),
    )
    assert verdict.status == "ok" and verdict.correct, (verdict.status, verdict.log[-3000:])
    library = build_workspace(workspace, "cpu").library  # found in the cache the evaluation filled
    assert "libscipy_openblas" in subprocess.run(["ldd", library], capture_output=True, text=True).stdout
    undefined = subprocess.run(["nm", "-D", "--undefined-only", library], capture_output=True, text=True).stdout
    assert "scipy_cblas_sgemm" in undefined


@pytest.mark.parametrize(
    "source,header", [(LINEAR_GELU, "ks_gemm.h"), (CONV2D_RELU, "ks_conv.h")], ids=["gemm", "conv"]
)
def test_the_workspace_carries_the_library_kernels_it_includes(tmp_path, source, header):
    # The kernels' headers are files of the workspace, not of the installation: a solution builds anywhere.
    _, workspace = heuristic_workspace(tmp_path, source)
    assert f'#include "{header}"' in (workspace / "kernels" / "fused.cpp").read_text()
    assert '#include "ks_blas.h"' in (workspace / "kernels" / header).read_text()
    assert "scipy_openblas_set_num_threads(1)" in (workspace / "kernels" / "ks_blas.h").read_text()


@pytest.mark.slow
def test_a_cpu_solution_calling_openblas_packages_and_its_package_passes_its_tests(tmp_path):
    from sandbox.package import package_solution
    from sandbox.package.verify import check_package

    # Square: a package's fake implementations assume outputs shaped like the first argument (its README says so).
    problem, workspace = heuristic_workspace(tmp_path, LINEAR_GELU.replace("nn.Linear(96, 80)", "nn.Linear(96, 96)"))
    result = package_solution(problem, workspace, tmp_path / "dist", name="ks-linear-gelu", build_wheel=False)
    check = check_package(result.sdist, tmp_path / "check")  # built from the sdist in a fresh environment
    assert check.ok, check.log
    assert "test_model_new_compiles_without_graph_breaks PASSED" in check.log


def test_the_teacher_includes_the_library_writes_only_its_own_files_and_the_export_still_runs(tmp_path):
    from agent.loop import Episode, EpisodeConfig, save
    from agent.policies.heuristic import HeuristicPolicy

    problem = tmp_path / "problem.py"
    problem.write_text(LINEAR_GELU)
    fast = EvalConfig(device="cpu", trials=2, compiled_baseline=False, time_budget_s=0.2, timeout_s=300)
    config = EpisodeConfig(device="cpu", eval=fast, max_turns=8)
    trajectory = Episode(problem, HeuristicPolicy(), tmp_path / "out" / "workspace", config).run()
    assert trajectory.verdict["correct"], trajectory.verdict.get("log", "")[-2000:]
    written = {c.arguments["path"] for turn in trajectory.turns for c in turn.tool_calls if c.name == "write_file"}
    assert written == {
        "binding.cpp",
        "kernels/fused.cpp",
        "model_new.py",
    }  # ks_checks.h, ks_gemm.h, ks_blas.h: the library's
    assert '#include "kernels/ks_checks.h"' in trajectory.best["files"]["binding.cpp"]
    save(trajectory, tmp_path / "out")  # solution.py: every included header inlined, built by load_inline
    exported = evaluate(problem, tmp_path / "out" / "solution.py", fast)
    assert exported.status == "ok" and exported.correct, exported.log[-2000:]


WIDE_STRIDED_CONV = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(512, 4, 3, stride=(1, 2), padding=(1, 2))

    def forward(self, x):
        return self.conv(x)

def get_inputs():
    return [torch.randn(2, 512, 9, 11)]

def get_init_inputs():
    return []
"""


def test_a_convolutions_column_blocks_starting_mid_row_match_torch(cpu_solution):
    # 4608 im2col rows: a block of a few dozen output positions, so blocks start inside an output row of 7, whose
    # first output reads the padding; the stride-2 rows start and end in it
    solution, model, files = cpu_solution(WIDE_STRIDED_CONV)
    assert "ks_conv(" in files["kernels/fused.cpp"]
    solution.load_state_dict(model.state_dict())
    x = torch.randn(3, 512, 9, 11)
    with torch.no_grad():
        torch.testing.assert_close(solution(x), model(x), rtol=1e-4, atol=1e-4)
