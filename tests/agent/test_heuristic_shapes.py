"""The heuristic's kernels read the batch size at run time (issue 22) on the CPU target: episodes whose verdicts are
shape-general at the sandbox's other batch sizes, solutions that match Model when called at yet other sizes (odd
ones: tails), and an honest specialization, with its reason, where the batch cannot be a run-time size."""

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

from agent.heuristic.batch import Specialized, merge
from sandbox.problem import import_file


def sibling(name):
    """A test module beside this one, for its problems and helpers (pytest imports tests by path, not by name)."""
    spec = importlib.util.spec_from_file_location(f"ks_{name}", Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


policy_tests, dag_tests = sibling("test_heuristic_policy"), sibling("test_heuristic_dag")
LINEAR_EPILOGUE = policy_tests.LINEAR_EPILOGUE

GRAM_MATRIX = """import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x @ x.t(), dim=0)

def get_inputs():
    return [torch.randn(8, 16)]

def get_init_inputs():
    return []
"""


def load_solution(workspace, problem_path):
    """(Model, ModelNew) of a problem and its workspace, with the same weights."""
    problem = import_file(str(problem_path), "ks_test_shapes_problem")
    spec = importlib.util.spec_from_file_location("ks_test_shapes_model_new", workspace / "model_new.py")
    solution = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = solution
    spec.loader.exec_module(solution)
    torch.manual_seed(0)
    model = problem.Model(*problem.get_init_inputs()).eval()
    new = solution.ModelNew(*problem.get_init_inputs()).eval()
    new.load_state_dict(model.state_dict())
    return problem, model, new


def at_batch(inputs, size):
    """INPUTS with dim 0 of every tensor that shares the first one's set to SIZE (repeated rows: ids stay valid)."""
    batch = inputs[0].shape[0]
    out = []
    for x in inputs:
        if isinstance(x, torch.Tensor) and x.dim() and x.shape[0] == batch:
            x = x.repeat(-(-size // batch), *[1] * (x.dim() - 1))[:size].contiguous()
            if x.is_floating_point():
                x = x + 0.01 * torch.randn_like(x)  # rows that differ from the ones they repeat
        out.append(x)
    return out


CASES = [
    ("gemm_epilogue", LINEAR_EPILOGUE),
    ("softmax_rows", policy_tests.ROW_REDUCTION),
    ("grouped_conv_transpose", policy_tests.CONV_EPILOGUE),
    ("embedding_int64_ids", dag_tests.EMBEDDING_MEAN_POOL),
    ("residual_layer_norm_mlp", dag_tests.RESIDUAL_LAYER_NORM_MLP),
    ("gated_mlp", dag_tests.GATED_MLP),
]


@pytest.mark.parametrize("name,source", CASES, ids=[case[0] for case in CASES])
def test_a_solution_is_correct_at_batch_sizes_other_than_the_problems(heuristic_episode, tmp_path, name, source):
    traj = heuristic_episode(source, name)
    verdict = traj.verdict
    assert traj.stop_reason == "submitted", traj.stop_reason
    assert verdict["correct"] and verdict["shape_general"] is True, verdict
    assert len(verdict["shapes_checked"]) > 1, verdict["shapes_checked"]
    workspace = tmp_path / "workspace"
    assert "ks_set_batch(ks_batch)" in (workspace / "binding.cpp").read_text()
    problem, model, new = load_solution(workspace, tmp_path / f"{name}.py")
    torch.manual_seed(1)
    inputs = problem.get_inputs()
    for size in (3, 2 * inputs[0].shape[0] + 1):  # odd: no multiple of a vector width, a tile or the problem's
        scaled = at_batch(inputs, size)
        with torch.no_grad():
            expected, got = model(*scaled), new(*scaled)
        assert got.shape == expected.shape
        torch.testing.assert_close(got, expected, atol=1e-3, rtol=1e-3)


def test_an_input_whose_fixed_dims_differ_is_refused_by_name(heuristic_episode, tmp_path):
    traj = heuristic_episode(LINEAR_EPILOGUE, "linear")
    assert traj.verdict["shape_general"] is True, traj.verdict
    _, _, new = load_solution(tmp_path / "workspace", tmp_path / "linear.py")
    with pytest.raises(RuntimeError, match=r"input 0: expected shape \[5, 32\], got \[5, 31\].*dim 0 .* any size"):
        new(torch.randn(5, 31))


def test_kernels_that_cannot_read_the_batch_keep_the_problems_shapes_and_say_why(heuristic_episode, tmp_path):
    # softmax(x @ x.T) is [batch, batch]: its element count is the batch squared, not an affine function of it.
    traj = heuristic_episode(GRAM_MATRIX, "gram")
    verdict = traj.verdict
    assert verdict["correct"] and verdict["shape_general"] is False, verdict
    assert verdict["failing_shape"] in verdict["shapes_checked"][1:]
    _, _, new = load_solution(tmp_path / "workspace", tmp_path / "gram.py")
    with pytest.raises(RuntimeError, match="written for the problem's shapes only: .*not affine in the batch size"):
        new(torch.randn(4, 16))


def test_numbers_that_follow_the_batch_become_expressions_of_it():
    texts = [f"for (i = 0; i < {16 * b}LL; ++i) y[i] = x[i] / {b}.0f; // {b} rows" for b in (8, 16, 24)]
    merged = merge(texts, [8, 16, 24])
    assert merged == "for (i = 0; i < (ks_batch * 16LL); ++i) y[i] = x[i] / ((float)(ks_batch)); // 8 rows"


@pytest.mark.parametrize(
    "texts,reason",
    [
        (["n = 64LL;", "n = 256LL;", "n = 576LL;"], "not affine"),  # the batch squared
        (["f(true);", "f(false);", "f(false);"], "differ at another batch size"),  # a decision that depends on it
        (["a;\nb;", "a;", "a;"], "another structure"),
    ],
)
def test_sources_that_change_otherwise_with_the_batch_are_refused_with_the_reason(texts, reason):
    with pytest.raises(Specialized, match=reason):
        merge(texts, [8, 16, 24])
