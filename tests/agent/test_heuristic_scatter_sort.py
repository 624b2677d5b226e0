"""The DAG planner's scatter and sort families: user-style modules (a graph readout by index_add, index_put_,
scatter_reduce and a scatter_add histogram with int64 ids; a top-k by sort) end to end on the CPU target,
nn.EmbeddingBag as a gather and a segment reduction, an out-of-range index raising instead of writing out of bounds,
and the CUDA kernels of every path compiled by nvcc."""

import importlib.util
import shutil

import pytest
import torch

from agent.heuristic.analyze import analyze
from agent.heuristic.codegen import workspace_files
from agent.heuristic.plan import make_plan

# A graph network's readout: per segment (a graph of the batch) its nodes' mean by index_add over a count by index_put_
# with accumulate, their max by scatter_reduce, and a histogram of each node's feature bins by scatter_add.
READOUT = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, segments, bins):
        super().__init__()
        self.segments, self.bins = segments, bins

    def forward(self, x, segment):
        n, d = x.shape
        sums = torch.zeros(self.segments, d).index_add(0, segment, x)
        counts = torch.zeros(self.segments)
        counts.index_put_((segment,), torch.ones(n), accumulate=True)
        index = segment[:, None].expand(n, d)
        peaks = torch.zeros(self.segments, d).scatter_reduce(0, index, x, reduce="amax", include_self=False)
        ids = (torch.sigmoid(x) * self.bins).long().clamp(0, self.bins - 1)
        histogram = torch.zeros(n, self.bins).scatter_add(1, ids, torch.ones(n, d)).mean(0)
        return torch.cat([sums / counts.clamp_min(1.0)[:, None], peaks], dim=1) + histogram.max()

def get_inputs():
    return [torch.randn(400, 16), torch.randint(0, 32, (400,))]

def get_init_inputs():
    return [32, 8]
"""
TOPK_BY_SORT = """import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        values, indices = x.sort(-1, descending=True)
        rank_of_column = torch.argsort(x, dim=0)[0].float()
        return values[:, :4].mean(-1) + indices[:, 0] + rank_of_column.mean()

def get_inputs():
    return [torch.randn(64, 50)]

def get_init_inputs():
    return []
"""
# nn.EmbeddingBag in its three modes: bags of fixed size (2D ids) summed with per-sample weights, bags given by
# offsets (one empty) averaged, their maxima skipping a padding id.
EMBEDDING_BAGS = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.sum = nn.EmbeddingBag(50, 8, mode="sum")
        self.mean = nn.EmbeddingBag(50, 8, mode="mean")
        self.max = nn.EmbeddingBag(50, 8, mode="max", padding_idx=3)

    def forward(self, ids, weights, flat, offsets):
        summed = self.sum(ids, per_sample_weights=weights)
        return torch.cat([summed[:4], self.mean(flat, offsets), self.max(flat, offsets)], dim=1)

def get_inputs():
    return [torch.randint(0, 50, (6, 5)), torch.rand(6, 5), torch.randint(0, 50, (30,)), torch.tensor([0, 4, 4, 11])]

def get_init_inputs():
    return []
"""
# Every kernel path of both families: atomic adds and compare-and-swap loops (products, int8 maxima, means), targets
# reset first (include_self=False), several index tensors apart, a plain scatter of a number, and sorts of short rows,
# of rows longer than a block's shared memory (merge passes), along a dim that is not the last.
EVERY_PATH = """import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x, ids, small, rows, cols, long_rows):
        a = x.scatter_reduce(1, ids, x[:, :6] * 2.0, reduce="prod", include_self=False)
        b = x.scatter_reduce(1, ids, x[:, :6], reduce="mean").double()
        c = small.scatter_reduce(0, ids[:3, :2] % 8, small[:3, :2] + 1, reduce="amax").sum().float()
        cube = x.view(x.shape[0], 4, 4)
        d = torch.ops.aten.index_put(cube, [rows, None, cols], torch.ones(5, 4), True).view(x.shape[0], 16)
        e = x.scatter(1, ids, 0.5)
        s = long_rows.sort(dim=1, descending=True)
        t = torch.sort(x, dim=0, stable=True)
        return (a + e + d).double() + b + c + s.values[:1, :16, 0].double() + s.indices[:1, :16, 1] + t.values

def get_inputs():
    return [torch.randn(8, 16), torch.randint(0, 16, (8, 6)), torch.randint(-9, 9, (8, 4), dtype=torch.int8),
            torch.randint(0, 8, (5,)), torch.randint(-3, 3, (5,)), torch.randn(2, 9000, 3, dtype=torch.float64)]

def get_init_inputs():
    return []
"""


def plan_of(tmp_path, source):
    problem = tmp_path / "problem.py"
    problem.write_text(source)
    return make_plan(analyze(str(problem)))


CASES = [("readout", READOUT, "scatter"), ("topk_by_sort", TOPK_BY_SORT, "sort")]


@pytest.mark.parametrize("name,source,family", CASES, ids=[case[0] for case in CASES])
def test_a_scatter_or_sort_module_reaches_a_correct_solution_on_the_cpu(
    heuristic_episode, tmp_path, name, source, family
):
    traj = heuristic_episode(source, name)
    assert traj.stop_reason == "submitted", traj.stop_reason
    verdict = traj.verdict
    assert verdict["status"] == "ok" and verdict["correct"] and verdict["reward"] >= 1, verdict
    assert f" {family}" in (tmp_path / "workspace" / "binding.cpp").read_text().split("\n", 1)[0]


def test_an_out_of_range_index_raises_instead_of_writing_out_of_bounds(tmp_path):
    # the readout's own files: built already where its episode ran first (builds are cached by content)
    plan = plan_of(tmp_path, READOUT)
    workspace = tmp_path / "workspace"
    for path, text in workspace_files(plan, "cpu", READOUT).items():
        (workspace / path).parent.mkdir(parents=True, exist_ok=True)
        (workspace / path).write_text(text)
    spec = importlib.util.spec_from_file_location("readout_solution", workspace / "model_new.py")
    solution = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(solution)
    model, reference = solution.ModelNew(32, 8), solution._reference["Model"](32, 8)
    x, segment = torch.randn(400, 16), torch.randint(0, 32, (400,))
    torch.testing.assert_close(model(x, segment), reference(x, segment))
    segment[7] = 40
    with pytest.raises(RuntimeError, match="index 40 is out of bounds for dimension 0 with size 32"):
        model(x, segment)
    segment[7] = -33  # past the negative end: -1 is the last segment, as in torch's index_put
    with pytest.raises(RuntimeError, match="index -33 is out of bounds for dimension 0 with size 32"):
        model(x, segment)


def test_an_embedding_bag_is_a_gather_and_a_segment_reduction(cpu_solution):
    solution, model, files = cpu_solution(EMBEDDING_BAGS)
    assert " scatter" in files["binding.cpp"].split("\n", 1)[0]  # capture.py's decomposition: torch has none
    model.load_state_dict(solution.state_dict())
    ids, weights, flat = torch.randint(0, 50, (6, 5)), torch.rand(6, 5), torch.randint(0, 50, (30,))
    flat[[0, 5, 6]] = 3  # the padding id: left out of the max, the bag of only it is zeros
    for offsets in ([0, 4, 4, 11], [0, 1, 2, 29], [0, 10, 20, 30]):
        offsets = torch.tensor(offsets)
        torch.testing.assert_close(solution(ids, weights, flat, offsets), model(ids, weights, flat, offsets))


NVCC = shutil.which("nvcc")


@pytest.mark.skipif(NVCC is None, reason="no nvcc on this machine")
def test_the_scatter_and_sort_cuda_kernels_compile_with_nvcc(tmp_path, nvcc_compile):
    plan = plan_of(tmp_path, EVERY_PATH)
    files = workspace_files(plan, "cuda", EVERY_PATH)
    assert plan.specialized is None, plan.specialized  # the kernels read the batch size at run time
    source = files["kernels/fused.cu"]
    for call in (
        "ks_atomic_add(",
        "ks_atomic_apply(",
        "_mark<<<",
        "_merge<<<",
        "ks_bitonic_sort<",
        "ks_check_indices(",
    ):
        assert call in source, call
    result = nvcc_compile(files)
    assert result.returncode == 0, result.stderr[-3000:]
