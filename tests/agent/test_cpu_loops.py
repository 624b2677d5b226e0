"""The DAG planner's CPU loops: a kernel runs over rows of its trailing dims (i = io * inner + il), so that its
index arithmetic divides only in the outer loop and the inner one vectorizes; a row reduction is an `omp simd`
loop, and a float max or min still gives torch's NaN."""

import re

import torch

from agent.heuristic.analyze import analyze
from agent.heuristic.codegen import workspace_files
from agent.heuristic.plan import make_plan
from agent.library import library_files

SCALED_BY_ROW_MAX = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        scale = x.abs().amax(dim=-1, keepdim=True) / 127.0
        return torch.round(x / scale) * scale + x.amin(dim=-1, keepdim=True)


def get_inputs():
    return [torch.randn(8, 16, 64)]


def get_init_inputs():
    return []
"""


def written(tmp_path, source, device="cpu"):
    problem = tmp_path / "problem.py"
    problem.write_text(source)
    files = {**library_files(device), **workspace_files(make_plan(analyze(str(problem))), device, source)}
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    return files


def test_an_elementwise_kernel_loops_over_rows_and_its_inner_loop_never_divides(tmp_path):
    source = written(tmp_path, SCALED_BY_ROW_MAX)["kernels/fused.cpp"]
    kernels = re.split(r"\nvoid ", source)
    rowwise = [k for k in kernels if "for (int64_t il = 0; il < 64LL; ++il)" in k]
    assert rowwise, source
    for kernel in rowwise:
        body = kernel.split("const int64_t i = io * 64LL + il;", 1)[1]
        # the row's statistics are read at io, the row itself at i: nothing divides in the inner loop
        assert not re.search(r"[/%]\s*\d+LL", body), kernel


def test_row_reductions_are_simd_loops_and_keep_torchs_nan(cpu_solution):
    solution, model, files = cpu_solution(SCALED_BY_ROW_MAX)
    assert "#pragma omp simd reduction(max:" in files["kernels/fused.cpp"]
    assert "#pragma omp simd reduction(min:" in files["kernels/fused.cpp"]
    x = torch.randn(8, 16, 64)
    x[2, 3, 17] = float("nan")  # one row holds a NaN: its max, min and every element of it are NaN in torch
    with torch.no_grad():
        expected, got = model(x), solution(x)
    assert torch.equal(torch.isnan(got), torch.isnan(expected))
    assert torch.isnan(got[2, 3]).all() and not torch.isnan(got[2, 2]).any()
    torch.testing.assert_close(got, expected, equal_nan=True)


POOLED_WITH_A_SKIP = """import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x):
        pooled = F.max_pool2d(x, 2)
        return pooled * torch.sigmoid(pooled) + F.avg_pool2d(x, 2)


def get_inputs():
    return [torch.randn(2, 4, 16, 16)]


def get_init_inputs():
    return []
"""


def test_a_max_pool_window_with_a_nan_gives_torchs_nan(cpu_solution):
    solution, model, _ = cpu_solution(POOLED_WITH_A_SKIP)
    x = torch.randn(2, 4, 16, 16)
    x[1, 2, 5, 6] = float("nan")  # the window (2, 3) of channel 2 holds it: torch's max is NaN there
    with torch.no_grad():
        expected, got = model(x), solution(x)
    assert torch.isnan(expected[1, 2, 2, 3])
    torch.testing.assert_close(got, expected, equal_nan=True)


WIDE_ROW_MAX = SCALED_BY_ROW_MAX.replace("torch.randn(8, 16, 64)", "torch.randn(8, 4096)")


def test_cuda_block_reductions_of_floats_keep_nan_as_torchs_max_and_min_do(tmp_path):
    source = written(tmp_path, WIDE_ROW_MAX, device="cuda")["kernels/fused.cu"]
    # the block's combine, and each thread's own loop, let NaN win where fmaxf / a bare comparison would drop it
    assert "block_reduce(" in source and "fmaxf" not in source and "fminf" not in source
    assert "a > b || a != a ? a : b" in source and "a < b || a != a ? a : b" in source
    assert re.search(r"(\w+) = (\w+) > \1 \|\| \2 != \2 \? \2 : \1;", source), source


SEGMENT_SUMS = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        # Mamba2's segsum: a causal mask's complement filled with -inf, then exp
        t = x.size(-1)
        cs = torch.cumsum(x, dim=-1)
        seg = cs[..., :, None] - cs[..., None, :]
        mask = torch.tril(torch.ones(t, t, device=x.device, dtype=bool), diagonal=0)
        return torch.exp(seg.masked_fill(~mask, -torch.inf))


def get_inputs():
    return [torch.randn(2, 8, 3)]


def get_init_inputs():
    return []
"""


def test_bitwise_not_of_a_bool_mask_is_a_logical_not(cpu_solution):
    solution, model, _ = cpu_solution(SEGMENT_SUMS)
    x = torch.randn(2, 8, 3)
    with torch.no_grad():
        expected, got = model(x), solution(x)
    assert (expected == 0).any() and (expected > 0).any()  # the upper triangle is exp(-inf), the rest is not
    torch.testing.assert_close(got, expected)


SHUFFLED_TANH = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.tanh(nn.functional.pixel_shuffle(x, 3))


def get_inputs():
    return [torch.randn(2, 45, 5, 7)]


def get_init_inputs():
    return []
"""


def test_a_permutations_inner_loop_is_declared_simd_and_stays_correct(cpu_solution):
    # out[.., h, w] reads x[.., (h % 3) * 3 + w % 3, h / 3, w / 3]: an index GCC's own analysis gives up on
    solution, model, files = cpu_solution(SHUFFLED_TANH)
    source = files["kernels/fused.cpp"]
    assert re.search(r"#pragma omp simd\n\s*for \(int64_t il = 0;", source), source
    x = torch.randn(3, 45, 5, 7)  # another batch; rows of 21, not a multiple of a vector's lanes
    with torch.no_grad():
        torch.testing.assert_close(solution(x), model(x))


FEW_LONG_ROWS = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, logits, target):
        return -logits.log_softmax(-1).gather(-1, target.unsqueeze(-1)).mean()


def get_inputs():
    return [torch.randn(64, 1000), torch.randint(0, 1000, (64,))]


def get_init_inputs():
    return []
"""


def test_a_kernel_of_few_long_rows_is_shared_by_the_threads(tmp_path):
    source = written(tmp_path, FEW_LONG_ROWS)["kernels/fused.cpp"]
    # the softmax's statistics: 64 rows of 1000, 64000 exps, past the threshold an elementwise pass of as many has
    conditions = re.findall(r"#pragma omp parallel for schedule\(static\) if\((.*)\)\n", source)
    shared = [c for c in conditions if eval(c.replace("ks_batch", "64").replace("LL", ""))]  # noqa: S307
    assert shared, conditions
