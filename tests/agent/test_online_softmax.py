"""The DAG planner's online softmax: a row's max and sum of exp(x - max) in one pass over it (dag/online.py) for
softmax, log_softmax, logsumexp and cross entropy, hand-written or as torch decomposes them; checked in the sources it
writes and against eager PyTorch on the CPU target, rows of -inf included."""

import pytest

from agent.heuristic.analyze import analyze
from agent.heuristic.codegen import workspace_files
from agent.heuristic.plan import make_plan


def _module(forward, inputs):
    return f"""import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def forward(self, x, *rest):
        {forward}

def get_inputs():
    return {inputs}

def get_init_inputs():
    return []
"""


# Every fourth row masked whole (eager: softmax NaN, logsumexp -inf), and a third of the other entries.
MASK = "[torch.randn(32, 300), (torch.rand(32, 300) < 0.3).index_fill(0, torch.arange(0, 32, 4), True)]"
# (name, forward, inputs, the kernels that read the logits: the one pass, plus the one writing each element)
CASES = [
    (
        "softmax_last_dim",
        "m = x.amax(dim=-1); e = torch.exp(x - m[:, None]); return e / e.sum(dim=-1)[:, None]",
        "[torch.randn(32, 300)]",
        2,
    ),
    ("softmax_float64", "return torch.softmax(x.double(), dim=-1)", "[torch.randn(32, 300)]", 2),
    ("log_softmax", "return torch.log_softmax(x.double(), dim=1)", "[torch.randn(32, 300)]", 2),
    (
        "logsumexp_of_masked_rows",
        "return torch.logsumexp(x.masked_fill(rest[0], float('-inf')).double(), dim=1)",
        MASK,
        1,
    ),
    (
        "cross_entropy_mean",
        "return F.cross_entropy(x, rest[0])",
        "[torch.randn(64, 10), torch.randint(0, 10, (64,))]",
        2,
    ),
    (
        "cross_entropy_ignore_index",
        "return F.cross_entropy(x, rest[0], ignore_index=3)",
        "[torch.randn(64, 10), torch.randint(0, 10, (64,))]",
        2,
    ),
    ("softmax_non_last_dim", "return torch.softmax(x.double(), dim=1)", "[torch.randn(4, 50, 6)]", 2),
    (
        "softmax_of_masked_rows",
        "x = x.masked_fill(rest[0], float('-inf')); e = torch.exp(x - x.amax(dim=1, keepdim=True)); "
        "return e / e.sum(dim=1, keepdim=True) * 2.0",
        MASK,
        2,
    ),
]
IDS = [case[0] for case in CASES]


def _plan(tmp_path, source):
    problem = tmp_path / "problem.py"
    problem.write_text(source)
    return make_plan(analyze(str(problem)))


@pytest.mark.parametrize("name,forward,inputs,readers", CASES, ids=IDS)
def test_softmax_reads_its_row_once(tmp_path, name, forward, inputs, readers):
    source = _module(forward, inputs)
    plan = _plan(tmp_path, source)
    assert plan.kind == "graph" and "maxsum" in [k.kind for k in plan.kernels], plan.describe
    assert not any(k.node.kind == "reduce" and k.node.attrs["op"] == "max" for k in plan.kernels)
    cpp = workspace_files(plan, "cpu", source)["kernels/fused.cpp"]
    logits = plan.buffers[next(n.name for n in plan.graph.nodes if n.kind == "input" and n.attrs["ref"] == 0)]
    assert sum(logits in reads for _, reads, _, _, _ in plan.writer.functions) == readers, cpp
    assert "a row of -inf so far" in cpp  # the C++ pass: each chunk's max rescales the running sum, then adds to it
    cuda = workspace_files(plan, "cuda", source)["kernels/fused.cu"]
    assert "= ks_online(" in cuda and "torch" not in cuda


@pytest.mark.parametrize("name,forward,inputs,readers", CASES, ids=IDS)
def test_the_online_softmax_matches_eager_on_the_cpu_target(heuristic_episode, name, forward, inputs, readers):
    traj = heuristic_episode(_module(forward, inputs), name)
    assert traj.stop_reason == "submitted", traj.stop_reason
    verdict = traj.verdict
    assert verdict["status"] == "ok" and verdict["correct"] and verdict["reward"] >= 1, verdict


def test_a_sum_of_exp_centered_on_another_rows_max_keeps_both_reductions(tmp_path):
    source = _module(
        "e = torch.exp(x - rest[0].amax(dim=1, keepdim=True)); return e / e.sum(dim=1, keepdim=True)",
        "[torch.randn(32, 300).double(), torch.randn(32, 300).double()]",
    )
    plan = _plan(tmp_path, source)
    assert "maxsum" not in [k.kind for k in plan.kernels]
    assert [k.node.attrs.get("op") for k in plan.kernels if k.node.kind == "reduce"] == ["max", "sum"]


def test_the_row_pass_over_a_flattened_view_indexes_without_divisions(tmp_path):
    # logits.view(-1, classes), as language models flatten them for the loss: element r of row i is at i * 300 + r,
    # which the pass knows only if its chunked r is known to lie in the row (an int64 division per element otherwise)
    forward = "return F.cross_entropy(x.view(-1, x.shape[-1]), rest[0].view(-1), label_smoothing=0.1)"
    source = _module(forward, "[torch.randn(4, 8, 300), torch.randint(0, 300, (4, 8))]")
    cpp = workspace_files(_plan(tmp_path, source), "cpu", source)["kernels/fused.cpp"]
    assert "a row of -inf so far" in cpp and "/ 300LL" not in cpp and "% 300LL" not in cpp, cpp
