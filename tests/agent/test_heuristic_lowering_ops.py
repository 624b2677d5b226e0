"""Everyday ops the DAG lowering writes in terms of others (bucketize and searchsorted as counts of the boundaries
before each value), and the dtypes it refuses by name rather than failing inside code generation."""

import pytest
import torch

from agent.heuristic.analyze import analyze
from agent.heuristic.errors import Unsupported
from agent.heuristic.plan import make_plan


def plan_of(tmp_path, source):
    problem = tmp_path / "problem.py"
    problem.write_text(source)
    return make_plan(analyze(str(problem)))


# A T5/LLaMA RMSNorm of a model cast to bfloat16: statistics in float32 (x.float()), the result cast back (.type_as(x)).
BFLOAT16_RMS_NORM = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(64, dtype=torch.bfloat16))

    def forward(self, x):
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)).type_as(x)

def get_inputs():
    return [torch.randn(4, 64).to(torch.bfloat16)]

def get_init_inputs():
    return []
"""


def test_a_half_precision_model_is_refused_by_its_dtype(tmp_path):
    with pytest.raises(Unsupported, match="bfloat16 values"):
        plan_of(tmp_path, BFLOAT16_RMS_NORM)


# Values binned by sorted boundaries, as feature bucketing and position bins are written: bucketize either side (its
# int32 form too), searchsorted over one sorted row per batch row, a number's bucket.
SORTED_POSITIONS = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("edges", torch.tensor([-1.0, -0.5, 0.0, 0.0, 0.5, 1.0]))

    def forward(self, x, rows):
        a = torch.bucketize(x, self.edges)
        b = torch.bucketize(x, self.edges, right=True, out_int32=True)
        c = torch.searchsorted(rows, x, side="right")
        return a * 100 + b * 10 + c + torch.bucketize(0.25, self.edges)

def get_inputs():
    return [torch.randn(8, 12), torch.randn(8, 5).sort(-1).values]

def get_init_inputs():
    return []
"""


def test_bucketize_and_searchsorted_count_the_boundaries_before_each_value(cpu_solution):
    solution, model, _ = cpu_solution(SORTED_POSITIONS)
    x, rows = torch.randn(8, 12), torch.randn(8, 5).sort(-1).values
    x[0, :6] = torch.tensor([-1.0, 0.0, 0.5, 1.0, float("nan"), -float("inf")])  # on a boundary, a tie, NaN: last
    rows[1] = torch.tensor([0.0, 0.0, 0.0, 1.0, 1.0])
    x[1, :3] = torch.tensor([0.0, 1.0, 2.0])
    torch.testing.assert_close(solution(x, rows), model(x, rows), rtol=0, atol=0)
