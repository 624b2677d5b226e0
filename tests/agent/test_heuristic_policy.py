"""The heuristic policy end to end on the CPU target: real analysis, code generation, builds and evaluations."""

import pytest

from agent.heuristic.plan import Unsupported, make_plan
from agent.policies import make_policy
from agent.policies.base import Task
from agent.policies.heuristic import CannotOptimize

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
    return [torch.randn(256, 2048)]

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
RMS_NORM = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5)

def get_inputs():
    return [torch.randn(4, 16, 8, 8)]

def get_init_inputs():
    return []
"""
CONV_EPILOGUE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.ConvTranspose2d(4, 6, (3, 2), stride=2, padding=1, output_padding=1, groups=2, dilation=(1, 2))
        self.scale = nn.Parameter(torch.randn(6, 1, 1))

    def forward(self, x):
        return torch.sigmoid(self.conv(x) - self.scale)

def get_inputs():
    return [torch.randn(2, 4, 7, 9)]

def get_init_inputs():
    return []
"""
LINEAR_SOFTMAX = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(32, 48)

    def forward(self, x):
        return torch.softmax(torch.nn.functional.gelu(self.linear(x)), dim=1) * 2.0

def get_inputs():
    return [torch.randn(16, 32)]

def get_init_inputs():
    return []
"""
CONV_CHANNEL_MIN = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    def forward(self, x):
        x = torch.min(self.conv(x) * 0.5, dim=1, keepdim=True)[0]
        return torch.tanh(torch.tanh(x))

def get_inputs():
    return [torch.randn(2, 3, 12, 12)]

def get_init_inputs():
    return []
"""
GROUP_NORM = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.GroupNorm(4, 16)

    def forward(self, x):
        return torch.relu(self.norm(x * 2.0)) - 0.5

def get_inputs():
    return [torch.randn(4, 16, 8, 8)]

def get_init_inputs():
    return []
"""
LINEAR_GROUP_NORM = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(32, 64)
        self.norm = nn.GroupNorm(8, 64)

    def forward(self, x):
        return torch.nn.functional.hardtanh(self.norm(self.linear(x)), -0.5, 0.5)

def get_inputs():
    return [torch.randn(16, 32)]

def get_init_inputs():
    return []
"""
CONV_INSTANCE_NORM = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.norm = nn.InstanceNorm2d(8)

    def forward(self, x):
        return self.norm(self.conv(x)) / 2.0

def get_inputs():
    return [torch.randn(2, 3, 12, 12)]

def get_init_inputs():
    return []
"""
MLP = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.network = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 48), nn.ReLU(), nn.Linear(48, 10))

    def forward(self, x):
        return self.network(x)

def get_inputs():
    return [torch.randn(8, 32)]

def get_init_inputs():
    return []
"""
LENET = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 4, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(4, 8, 3), nn.ReLU())
        self.classifier = nn.Sequential(nn.Dropout(p=0.0), nn.Linear(8 * 4 * 4, 16), nn.ReLU(), nn.Linear(16, 10))

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))

def get_inputs():
    return [torch.randn(2, 1, 16, 16)]

def get_init_inputs():
    return []
"""
FFT = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.fft.rfft(torch.relu(x), dim=1).abs()

def get_inputs():
    return [torch.randn(4, 64)]

def get_init_inputs():
    return []
"""
CONV_BATCH_NORM = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.bn = nn.BatchNorm2d(8)

    def forward(self, x):
        return self.bn(torch.relu(self.conv(x)))

def get_inputs():
    return [torch.randn(2, 3, 16, 16)]

def get_init_inputs():
    return []
"""
# KernelBench level 2's 33_Gemm_Scale_BatchNorm in small: a linear layer's bias and a parameter in one epilogue.
LINEAR_SCALE_BATCH_NORM = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gemm = nn.Linear(32, 16)
        self.scale = nn.Parameter(torch.randn(16))
        self.bn = nn.BatchNorm1d(16)

    def forward(self, x):
        return self.bn(self.gemm(x) * self.scale)

def get_inputs():
    return [torch.randn(8, 32)]

def get_init_inputs():
    return []
"""
MAX_POOL = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1, dilation=2)

    def forward(self, x):
        return self.pool(x * 3.0) + 1.0

def get_inputs():
    return [torch.randn(4, 8, 33, 30)]

def get_init_inputs():
    return []
"""
AVG_POOL_3D = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.nn.functional.avg_pool3d(x, 3, stride=2, padding=1, count_include_pad=False)

def get_inputs():
    return [torch.randn(2, 4, 9, 10, 11)]

def get_init_inputs():
    return []
"""
CONV_POOL_CHAIN = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.ConvTranspose2d(3, 8, 3, stride=2)
        self.pool = nn.MaxPool2d(2)
        self.bias = nn.Parameter(torch.randn(8, 1, 1))

    def forward(self, x):
        x = torch.nn.functional.hardtanh(self.pool(self.conv(x)) + self.bias, -1.0, 1.0)
        return torch.tanh(torch.mean(x, dim=(2, 3), keepdim=True))

def get_inputs():
    return [torch.randn(2, 3, 9, 9)]

def get_init_inputs():
    return []
"""

# Operators the synthesized tasks draw (training/synthesis/seeds.py): math functions, shrinkages, two-input
# functions with their own rounding rules (Python's remainder, fmod) and casts of float32 to itself.
MATH_CHAIN = """
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.CELU(0.7)
        self.shrink = nn.Softshrink(0.3)
        self.cut = nn.Threshold(0.1, -2.0)

    def forward(self, x, y):
        a = torch.tanh(x)
        b = torch.acos(a * 0.9) + torch.asin(a * 0.5) + torch.atan(x) + torch.asinh(x) + torch.atanh(a * 0.5)
        c = torch.sinh(a) + torch.cosh(a) + torch.tan(a) + torch.deg2rad(x) + torch.rad2deg(a)
        d = torch.ceil(x) + torch.floor(x) + torch.round(x * 3) + torch.trunc(x) + torch.sign(x) + torch.erf(x)
        e = torch.erfc(x) + torch.exp2(a) + torch.expm1(a) + torch.log2(x.abs() + 1) + torch.log10(x.abs() + 1)
        e = e + torch.log1p(x.abs()) + torch.lgamma(x.abs() + 1) + torch.sinc(x) + torch.logit(torch.sigmoid(x), eps=1e-3)
        f = self.act(x) + F.logsigmoid(x) + F.relu6(x * 4) + F.tanhshrink(x) + self.shrink(x) + F.hardshrink(x, 0.4)
        f = f + self.cut(x) + torch.negative(x)
        g = torch.atan2(x, y) + torch.hypot(x, y) + torch.copysign(x, y) + torch.fmax(x, y) + torch.fmin(x, y)
        g = g + torch.fmod(x, y) + torch.remainder(x, y) + torch.ldexp(x, torch.round(y)) + torch.logaddexp(x, y)
        g = g + torch.logaddexp2(x, y)
        return (b + c + d + e + f + g + x.float().contiguous()).clone()

def get_inputs():
    return [torch.randn(16, 512), torch.randn(16, 512)]

def get_init_inputs():
    return []
"""


@pytest.mark.parametrize(
    "name,source",
    [
        ("chain", ELEMENTWISE_CHAIN),
        ("softmax", ROW_REDUCTION),
        ("linear", LINEAR_EPILOGUE),
        ("conv", CONV_EPILOGUE),
        ("rms_norm", RMS_NORM),
    ],
)
def test_the_heuristic_reaches_a_correct_faster_solution_on_cpu(heuristic_episode, tmp_path, name, source):
    traj = heuristic_episode(source, name)
    assert traj.stop_reason == "submitted"
    assert traj.verdict["status"] == "ok" and traj.verdict["correct"]
    # Timed, not judged on speed: alone on the 2-core machine these run at 1.6-4x eager, but beside the parallel
    # suite's other worker a 2-thread kernel waits for a descheduled thread (0.22x and 0.8x seen, 2026-11-29).
    # Speed is measured side by side in benchmarks (bench.cpu_gemm, bench.heuristic_kernelbench --device cpu).
    assert traj.verdict["runtime_ms"] > 0 and traj.verdict["eager_ms"] > 0 and traj.verdict["reward"] >= 1, traj.verdict
    tools = [call.name for turn in traj.turns for call in turn.tool_calls]
    assert tools[0] == "bash" and "compile" in tools and tools[-1] == "submit"
    assert "fused" in (tmp_path / "workspace" / "binding.cpp").read_text()


@pytest.mark.parametrize(
    "name,source",
    [
        ("linear_softmax", LINEAR_SOFTMAX),
        ("conv_channel_min", CONV_CHANNEL_MIN),
        ("group_norm", GROUP_NORM),
        ("linear_group_norm", LINEAR_GROUP_NORM),
        ("conv_instance_norm", CONV_INSTANCE_NORM),
        ("max_pool", MAX_POOL),
        ("avg_pool_3d", AVG_POOL_3D),
        ("conv_pool_chain", CONV_POOL_CHAIN),
        ("mlp", MLP),
        ("lenet", LENET),
        ("conv_batch_norm", CONV_BATCH_NORM),
        ("linear_scale_batch_norm", LINEAR_SCALE_BATCH_NORM),
        ("math_chain", MATH_CHAIN),
    ],
)
def test_the_heuristic_reaches_a_correct_solution_for_norms_pools_and_chained_stages_on_cpu(
    heuristic_episode, tmp_path, name, source
):
    # Their speed on the CPU against eager is not the point here (tiny shapes); that they are right is.
    traj = heuristic_episode(source, name)
    assert traj.stop_reason == "submitted", traj.stop_reason
    assert traj.verdict["status"] == "ok" and traj.verdict["correct"] and traj.verdict["reward"] >= 1, traj.verdict
    assert "ops.fused(" in (tmp_path / "workspace" / "model_new.py").read_text()


def test_the_heuristic_names_the_operator_it_cannot_handle_and_writes_no_fallback(heuristic_episode, tmp_path):
    traj = heuristic_episode(FFT, "fft")
    assert traj.stop_reason.startswith("policy_error") and "aten._fft_r2c" in traj.stop_reason
    assert traj.verdict["reward"] == -1
    written = [call for turn in traj.turns for call in turn.tool_calls if call.name == "write_file"]
    assert written == []
    # The untouched starter is not sent to the sandbox: its verdict says why there is no solution.
    assert traj.verdict["status"] == "runtime_error" and "still holds the starter" in traj.verdict["log"]
    assert "_fft_r2c" in traj.verdict["log"] and traj.verdict["wall_s"] is None


DEEP_MLP = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, width=32, depth=24):
        super().__init__()
        layers = []
        for _ in range(depth):
            layers += [nn.Linear(width, width), nn.ReLU()]
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)

def get_inputs():
    return [torch.randn(8, 32)]

def get_init_inputs():
    return []
"""


def test_a_graph_too_large_for_one_observation_is_read_back_from_its_file(heuristic_episode, tmp_path):
    # 24 layers make a graph of over 12,000 characters of JSON: more than one observation holds (a whole
    # network's graph cut there once crashed the policy); it is read back from analysis.json, a few lines a call.
    traj = heuristic_episode(DEEP_MLP, "deep_mlp")
    analysis = traj.turns[0].tool_calls[0].observation
    assert "ANALYSIS-FILE analysis.json" in analysis and "\nANALYSIS {" not in analysis
    reads = [call for call in traj.turns[1].tool_calls if call.name == "read_file"]
    assert len(reads) >= 2 and all(call.arguments["path"] == "analysis.json" for call in reads)
    assert traj.stop_reason == "submitted", traj.stop_reason
    assert traj.verdict["status"] == "ok" and traj.verdict["correct"], traj.verdict


def test_an_analysis_cut_short_is_a_clear_policy_error_not_a_crash(tmp_path):
    policy = make_policy("heuristic")
    policy.reset(
        Task(problem_name="deep_mlp", problem_source=DEEP_MLP, device="cpu", workspace=str(tmp_path), max_turns=8)
    )
    policy.act([], [])
    policy.observations = ['analysis.json lines 1-2 of 4\n{"ok": true, "nodes": [']
    policy.state = "read"
    with pytest.raises(CannotOptimize, match="could not be read back"):
        policy.act([], [])


def test_plans_refuse_random_operators():
    analysis = {
        "ok": True,
        "params": {},
        "nodes": [
            {"name": "x", "op": "placeholder", "args": [], "kwargs": {}, "shape": [4, 4], "dtype": "float32"},
            {
                "name": "dropout",
                "op": "call_module",
                "target": "Dropout",
                "args": [{"node": "x"}],
                "kwargs": {},
                "attrs": {"p": 0.5},
                "shape": [4, 4],
                "dtype": "float32",
            },
            {
                "name": "output",
                "op": "output",
                "args": [{"node": "dropout"}],
                "kwargs": {},
                "shape": [4, 4],
                "dtype": "float32",
            },
        ],
    }
    with pytest.raises(Unsupported, match="dropout"):
        make_plan(analysis)


MATMUL_TRANSPOSED_B = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, A, B):
        return torch.matmul(A, B.T)

def get_inputs():
    return [torch.randn(64, 96), torch.randn(80, 96)]

def get_init_inputs():
    return []
"""
MATMUL_3D_BY_2D = MATMUL_TRANSPOSED_B.replace("B.T", "B").replace(
    "[torch.randn(64, 96), torch.randn(80, 96)]", "[torch.randn(4, 32, 48), torch.randn(48, 40)]"
)


@pytest.mark.parametrize(
    "source,expected",
    [
        (MATMUL_TRANSPOSED_B, dict(m=64, n=80, k=96, batch=1, transposed_b=True)),
        (MATMUL_3D_BY_2D, dict(m=128, n=40, k=48, batch=1, transposed_b=False)),
    ],
    ids=["transposed_b", "3d_by_2d"],
)
def test_matmuls_of_transposed_or_stacked_inputs_plan_one_gemm(tmp_path, source, expected):
    from agent.heuristic.analyze import analyze

    problem = tmp_path / "problem.py"
    problem.write_text(source)
    plan = make_plan(analyze(str(problem)))
    assert plan.kind == "gemm"
    assert {key: getattr(plan, key) for key in expected} == expected
    assert plan.weight.source == "input" and plan.weight.ref == 1


@pytest.mark.parametrize(
    "source,row_op,fused",
    [
        (LINEAR_SOFTMAX, "softmax", 1),
        (CONV_CHANNEL_MIN, "min", 2),
        (LINEAR_GROUP_NORM, "group_norm", 0),
        (CONV_INSTANCE_NORM, "instance_norm", 1),
    ],
    ids=["gemm_softmax", "conv_min", "gemm_group_norm", "conv_instance_norm"],
)
def test_a_row_operation_after_a_product_becomes_a_tail_kernel_over_its_result(tmp_path, source, row_op, fused):
    from agent.heuristic.analyze import analyze
    from agent.heuristic.codegen import workspace_files

    problem = tmp_path / "problem.py"
    problem.write_text(source)
    plan = make_plan(analyze(str(problem)))
    assert len(plan.tails) == 1 and plan.tails[0].row_op == row_op
    assert f"with {fused} operator(s) fused after it, then one row-wise {row_op} kernel" in plan.describe
    assert plan.tails[0].main.shape == plan.out_shape and plan.tails[0].main.name.startswith("u0_")
    for device in ("cpu", "cuda"):
        files = workspace_files(plan, device, source)
        kernel = files["kernels/fused.cu" if device == "cuda" else "kernels/fused.cpp"]
        assert "namespace ks_head {" in kernel and "namespace ks_tail0 {" in kernel
        assert "Tensor mid0 = torch::stable::new_empty(" in files["binding.cpp"]


def test_a_tail_that_reads_a_model_input_again_goes_to_the_dag_planner(tmp_path):
    # The stage planner's chain cannot read x after the GEMM (a residual); the DAG planner reads it in the softmax's
    # kernel.
    from agent.heuristic.analyze import analyze

    problem = tmp_path / "problem.py"
    problem.write_text(LINEAR_SOFTMAX.replace("* 2.0", "+ x").replace("nn.Linear(32, 48)", "nn.Linear(32, 32)"))
    plan = make_plan(analyze(str(problem)))
    assert plan.kind == "graph" and [k.kind for k in plan.kernels][0] == "gemm"


def test_group_norm_rows_are_sample_groups_and_its_affine_is_per_channel(tmp_path):
    from agent.heuristic.analyze import analyze
    from agent.heuristic.codegen import cpp_rowwise

    problem = tmp_path / "problem.py"
    problem.write_text(GROUP_NORM)
    plan = make_plan(analyze(str(problem)))
    assert (plan.kind, plan.row_op, plan.outer, plan.reduce, plan.inner) == ("rowwise", "group_norm", 16, 256, 1)
    assert (plan.groups, plan.channels, plan.spatial) == (4, 16, 64)
    assert [o.ref for o in plan.affine] == ["norm.weight", "norm.bias"]
    # element r of row o (sample o / 4, group o % 4) is channel (o % 4) * 4 + r / 64
    assert "[((o) % 4LL) * 4LL + r / 64LL]" in cpp_rowwise(plan)


def test_stages_chain_through_intermediates_each_reading_the_one_before(tmp_path):
    from agent.heuristic.analyze import analyze
    from agent.heuristic.codegen import workspace_files

    problem = tmp_path / "problem.py"
    problem.write_text(CONV_POOL_CHAIN)
    plan = make_plan(analyze(str(problem)))
    assert plan.kind == "conv" and [t.kind for t in plan.tails] == ["pool", "rowwise"]
    pool, mean = plan.tails
    assert pool.main.shape == [2, 8, 19, 19] and pool.out_shape == [2, 8, 9, 9] == mean.main.shape
    assert [o.ref for o in pool.operands] == ["bias"]  # the bias add and the clamp fused after the pool
    assert plan.result_shape == [2, 8, 1, 1]
    binding = workspace_files(plan, "cpu", CONV_POOL_CHAIN)["binding.cpp"]
    assert "ks_tail0::run_fused((const float*)mid0.data_ptr()" in binding
    # the mean's rows: 8 channels of each sample, as many samples as the batch given at run time
    assert "ks_tail1::run_fused((const float*)mid1.data_ptr()" in binding
    assert "(float*)out.data_ptr(), (ks_batch * 8LL))" in binding


def test_products_follow_stages_and_reshapes_between_stages_cost_nothing(tmp_path):
    from agent.heuristic.analyze import analyze
    from agent.heuristic.codegen import workspace_files

    problem = tmp_path / "problem.py"
    problem.write_text(LENET)
    plan = make_plan(analyze(str(problem)))
    assert [plan.kind] + [t.kind for t in plan.tails] == ["conv", "pool", "conv", "gemm", "gemm"]
    conv2, linear1 = plan.tails[1], plan.tails[2]
    assert conv2.weight.name == "u1_w" and conv2.conv["in_shape"] == [2, 4, 6, 6]
    # flatten: the second convolution writes [2, 8, 4, 4]; the first linear layer reads it as [2, 128]
    assert conv2.out_shape == [2, 8, 4, 4] and (linear1.m, linear1.k, linear1.n) == (2, 128, 16)
    args = [name for name, _, _ in __import__("agent.heuristic.codegen", fromlist=["_tensor_args"])._tensor_args(plan)]
    assert len(args) == len(set(args)) and "u2_w" in args and "u3_w" in args
    assert "ks_tail3::run_fused((const float*)mid3.data_ptr()" in workspace_files(plan, "cpu", LENET)["binding.cpp"]


def test_batch_norm_kernels_follow_the_modules_mode_and_update_its_running_statistics(heuristic_episode, tmp_path):
    import importlib.util

    import torch

    traj = heuristic_episode(CONV_BATCH_NORM, "conv_batch_norm")
    assert traj.stop_reason == "submitted" and traj.verdict["correct"], traj.stop_reason
    workspace = tmp_path / "workspace"
    spec = importlib.util.spec_from_file_location("ks_bn_solution", workspace / "model_new.py")
    solution = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(solution)  # builds the extension here, as the sandbox did
    namespace = {}
    exec(CONV_BATCH_NORM, namespace)  # noqa: S102 (the test's own problem source)
    torch.manual_seed(0)
    ref = namespace["Model"]()
    new = solution.ModelNew()
    new.load_state_dict(ref.state_dict())
    for step in range(3):  # training mode: batch statistics, running statistics updated alike
        x = torch.randn(2, 3, 16, 16)
        torch.testing.assert_close(new(x), ref(x), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(new.bn.running_mean, ref.bn.running_mean)
    torch.testing.assert_close(new.bn.running_var, ref.bn.running_var)
    assert not torch.equal(ref.bn.running_var, torch.ones(8))
    ref.eval(), new.eval()
    x = torch.randn(2, 3, 16, 16)  # eval mode: the running statistics
    torch.testing.assert_close(new(x), ref(x), atol=1e-4, rtol=1e-4)


PARAMETER_TRANSPOSED = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(24, 32))

    def forward(self, x):
        x = torch.matmul(x, self.weight.T) / 2
        return torch.sum(x, dim=1, keepdim=True) * 1.5

def get_inputs():
    return [torch.randn(8, 32)]

def get_init_inputs():
    return []
"""
POOL_OF_UNSQUEEZED = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.matmul = nn.Linear(32, 48)
        self.max_pool = nn.MaxPool1d(2)

    def forward(self, x):
        x = self.max_pool(self.matmul(x).unsqueeze(1)).squeeze(1)
        return torch.sum(x, dim=1) * 0.5

def get_inputs():
    return [torch.randn(8, 32)]

def get_init_inputs():
    return []
"""
RESHAPED_OUTPUT = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1).view(4, -1)

def get_inputs():
    return [torch.randn(4, 8, 16)]

def get_init_inputs():
    return []
"""


@pytest.mark.parametrize(
    "name,source,stages,shape",
    [
        ("parameter_transposed", PARAMETER_TRANSPOSED, ["gemm", "rowwise"], [8, 1]),
        ("pool_of_unsqueezed", POOL_OF_UNSQUEEZED, ["gemm", "pool", "rowwise"], [8]),
        ("reshaped_output", RESHAPED_OUTPUT, ["rowwise"], [4, 128]),
    ],
)
def test_transposed_parameters_squeezes_and_a_reshaped_output_plan_and_verify(
    heuristic_episode, tmp_path, name, source, stages, shape
):
    from agent.heuristic.analyze import analyze

    problem = tmp_path / "problem.py"
    problem.write_text(source)
    plan = make_plan(analyze(str(problem)))
    assert [plan.kind] + [t.kind for t in plan.tails] == stages and plan.result_shape == shape
    traj = heuristic_episode(source, name)
    assert traj.stop_reason == "submitted" and traj.verdict["correct"], traj.stop_reason


CHANNEL_LOG_SOFTMAX = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.log_softmax(x * 2.0, dim=1) + 1.0

def get_inputs():
    return [torch.randn(2, 8, 5, 6)]

def get_init_inputs():
    return []
"""
CONV_CHANNEL_LOGSUMEXP = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(3, 8, 3)

    def forward(self, x):
        return torch.relu(torch.logsumexp(self.conv(x), dim=1, keepdim=True))

def get_inputs():
    return [torch.randn(2, 3, 6, 7, 8)]

def get_init_inputs():
    return []
"""
CONV_CHANNEL_SOFTMAX = CONV_CHANNEL_LOGSUMEXP.replace(
    "torch.relu(torch.logsumexp(self.conv(x), dim=1, keepdim=True))",
    "torch.sigmoid(torch.softmax(self.conv(x), dim=1))",
)


@pytest.mark.parametrize(
    "name,source,geometry",
    [
        ("conv_channel_logsumexp", CONV_CHANNEL_LOGSUMEXP, (2, 8, 4 * 5 * 6)),
        ("conv_channel_softmax", CONV_CHANNEL_SOFTMAX, (2, 8, 4 * 5 * 6)),
        ("channel_log_softmax", CHANNEL_LOG_SOFTMAX, (2, 8, 5 * 6)),
    ],
)
def test_softmax_and_logsumexp_over_a_dim_that_is_not_the_last_read_strided_rows(
    heuristic_episode, tmp_path, name, source, geometry
):
    from agent.heuristic.analyze import analyze

    problem = tmp_path / "problem.py"
    problem.write_text(source)
    plan = make_plan(analyze(str(problem)))
    row = plan.tails[0] if plan.tails else plan
    assert (row.outer, row.reduce, row.inner) == geometry
    traj = heuristic_episode(source, name)
    assert traj.stop_reason == "submitted" and traj.verdict["correct"], traj.stop_reason


BATCH_NORM_CONV = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm2d(8)
        self.conv = nn.Conv2d(8, 16, 3)

    def forward(self, x):
        return self.conv(self.bn(x))

def get_inputs():
    return [torch.randn(4, 8, 12, 12)]

def get_init_inputs():
    return []
"""


def test_a_convolution_after_another_stage_loads_cudnn_parts_on_cuda_and_verifies_on_cpu(heuristic_episode, tmp_path):
    """The cuDNN preload goes with any convolution stage: a synthesized BatchNorm2d -> Conv2d, whose convolution is
    the second stage, died of SIGSEGV on the H100 without it."""
    from agent.heuristic.analyze import analyze
    from agent.heuristic.codegen import workspace_files

    problem = tmp_path / "problem.py"
    problem.write_text(BATCH_NORM_CONV)
    plan = make_plan(analyze(str(problem)))
    assert plan.kind == "rowwise" and [t.kind for t in plan.tails] == ["conv"]
    assert "_load_cudnn_parts()" in workspace_files(plan, "cuda", BATCH_NORM_CONV)["model_new.py"]
    assert "_load_cudnn_parts" not in workspace_files(plan, "cpu", BATCH_NORM_CONV)["model_new.py"]
    traj = heuristic_episode(BATCH_NORM_CONV, "batch_norm_conv")
    assert traj.stop_reason == "submitted" and traj.verdict["correct"], (traj.stop_reason, traj.verdict)


@pytest.mark.parametrize("tune", [True, False])
def test_an_untuned_heuristic_submits_its_first_verified_cuda_kernel(tune, tmp_path):
    policy = make_policy("heuristic", tune=tune)
    policy.reset(Task(problem_name="relu", problem_source="", device="cuda", workspace=str(tmp_path), max_turns=8))
    policy.plan = type("Plan", (), {"describe": "one loop", "kind": "elementwise"})()
    policy.state, policy.last_verdict = "judge", {"status": "ok", "runtime_ms": 1.0}
    names = [call.name for call in policy.act([], []).tool_calls]
    assert names == (["edit_file", "verify"] if tune else ["submit"])
