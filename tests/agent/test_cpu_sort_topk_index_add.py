"""The CPU target's sort, topk and index_add kernels against torch: the radix sort is stable and orders NaN last (first
descending), -0 and 0 as equals, in rows short and long; topk keeps torch's values and indices, NaN the largest; and
index_add, whose rows are `omp simd` loops over thread shares that cut rows anywhere, keeps torch's sums bit for bit.
A topk past the CPU's buffer takes CUDA's passes over the row, NaN the largest there too."""

import shutil

import pytest
import torch

from agent.heuristic.analyze import analyze
from agent.heuristic.codegen import workspace_files
from agent.heuristic.plan import make_plan


SORTS = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, short, ints, distinct):
        a = torch.sort(x, dim=-1, stable=True)
        b = torch.sort(x, dim=-1, descending=True, stable=True)
        c = torch.sort(short, dim=0, descending=True, stable=True)
        d = torch.sort(ints, dim=-1, stable=True)
        v, i = torch.topk(distinct, 5, dim=-1)
        s, j = torch.topk(distinct, 3, dim=-1, largest=False)
        parts = [a.values, a.indices, b.values, b.indices, c.values, c.indices, d.values, d.indices, v, i, s, j]
        return torch.cat([p.double().flatten() for p in parts])


def get_inputs():
    return [torch.randn(6, 300), torch.randn(20, 3), torch.randint(-9, 9, (4, 50)), torch.randn(5, 100)]


def get_init_inputs():
    return []
"""
INDEX_ADD = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, segment, y, ids):
        a = torch.zeros(32, x.shape[1]).index_add(0, segment, x)
        b = torch.ones(y.shape[0], 10, y.shape[2]).index_add(1, ids, y)
        return torch.cat([a.flatten(), b.flatten()])


def get_inputs():
    return [torch.randn(29999, 37), torch.randint(0, 32, (29999,)), torch.randn(3, 400, 5), torch.randint(0, 10, (400,))]


def get_init_inputs():
    return []
"""


def with_ties_and_specials(shape):
    """Values of SHAPE with many ties (halves from -4 to 4), -0 beside 0, infinities and NaNs."""
    x = torch.randint(-8, 9, shape).float() / 2
    flat = x.view(-1)
    picks = torch.randperm(flat.numel())[: flat.numel() // 5]
    specials = torch.tensor([float("nan"), -0.0, 0.0, float("inf"), float("-inf")])
    flat[picks] = specials[torch.arange(picks.numel()) % specials.numel()]
    return x


def test_the_sort_is_stable_orders_nan_last_and_topk_keeps_torchs_values_and_indices(cpu_solution):
    model, reference, _ = cpu_solution(SORTS)
    distinct = torch.randperm(500).float().view(5, 100) / 7
    distinct[1, 17], distinct[3, 0] = float("nan"), float("nan")  # the largest, as torch's topk takes it
    inputs = [
        with_ties_and_specials((6, 300)),
        with_ties_and_specials((20, 3)),
        torch.randint(-9, 9, (4, 50)),
        distinct,
    ]
    got, want = model(*inputs), reference(*inputs)
    assert torch.equal(torch.isnan(got), torch.isnan(want))
    assert torch.equal(got.nan_to_num(), want.nan_to_num())  # indices too: equal values keep their positions' order


def test_index_add_keeps_torchs_sums_bit_for_bit(cpu_solution):
    model, reference, files = cpu_solution(INDEX_ADD)
    source = files["kernels/fused.cpp"]
    # 29999 x 37 elements: past the threshold of the threads sharing the lines, which they cut inside a row
    assert "ks_share(" in source and "#pragma omp simd" in source
    for seed in range(3):
        torch.manual_seed(seed)
        inputs = [
            torch.randn(29999, 37) * 1e3,
            torch.randint(0, 32, (29999,)),
            torch.randn(3, 400, 5),
            torch.randint(0, 10, (400,)),
        ]
        assert torch.equal(model(*inputs), reference(*inputs))


LONG_TOPK = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        top = torch.topk(x, 1100, dim=-1)
        low = torch.topk(x, 1030, dim=-1, largest=False)
        return torch.cat([top.values, top.indices.float(), low.values, low.indices.float()], dim=-1)


def get_inputs():
    return [torch.randn(3, 1500)]


def get_init_inputs():
    return []
"""


def test_a_topk_past_the_buffer_orders_nan_largest_as_torch(cpu_solution):
    # k past TOPK_BUFFER takes the passes over the row that CUDA's topk takes at every k
    model, reference, files = cpu_solution(LONG_TOPK)
    assert "[1100]" not in files["kernels/fused.cpp"]  # no buffer of k
    x = torch.stack([torch.randperm(1500) for _ in range(3)]).float() / 7  # distinct: torch orders ties as it likes
    x[0, [7, 700, 1499]] = float("nan")
    x[2, :600] = float("nan")  # more NaNs than the smallest 1030 can leave out
    with torch.no_grad():
        got, want = model(x), reference(x)
    values = torch.cat([torch.ones(1100), torch.zeros(1100), torch.ones(1030), torch.zeros(1030)]).bool()
    torch.testing.assert_close(got[:, values], want[:, values], rtol=0, atol=0, equal_nan=True)
    # the indices of the values (torch orders its NaNs among themselves as it likes)
    picked = ~torch.cat([want[:, :1100], want[:, :1100], want[:, 2200:3230], want[:, 2200:3230]], dim=1).isnan()
    assert torch.equal(got[:, ~values][picked[:, ~values]], want[:, ~values][picked[:, ~values]])


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc on this machine")
def test_the_nan_aware_topk_compiles_for_cuda(tmp_path, nvcc_compile):
    problem = tmp_path / "problem.py"
    problem.write_text(LONG_TOPK)
    files = workspace_files(make_plan(analyze(str(problem))), "cuda", LONG_TOPK)
    assert " != " in files["kernels/fused.cu"]  # NaN is compared as the largest value there too
    result = nvcc_compile(files)
    assert result.returncode == 0, result.stderr[-3000:]
