"""Shape generality (issue 22): besides the trials at the problem's shapes, one trial at each other size of the
dimensions that may vary (the batch halved and doubled, or the problem's get_input_variants()); the verdict says
which shapes were checked and whether the solution was right at all of them, and the reward stays at the problem's."""

import pytest
import torch

from sandbox.problem import (
    batch_candidates,
    declared_variants,
    describe_shapes,
    make_inputs,
    spec_of,
    variant_inputs,
)

PROBLEM_SHAPES = "(128, 512), (128, 512)"
HALF, DOUBLE = "(64, 512), (64, 512)", "(256, 512), (256, 512)"


class _Module:
    """A problem module as the workers see one: get_inputs and, optionally, get_input_variants."""

    def __init__(self, get_inputs, get_input_variants=None):
        self.get_inputs = get_inputs
        if get_input_variants is not None:
            self.get_input_variants = get_input_variants


def test_the_batch_of_every_input_sharing_it_is_halved_and_doubled():
    module = _Module(lambda: [torch.randn(8, 4), torch.randn(8, 4), torch.randn(3, 4), 2.5])
    inputs = make_inputs(module, 7, "cpu")
    candidates = batch_candidates(inputs)
    assert [(c["scale"], c["inputs"]) for c in candidates] == [(0.5, [0, 1]), (0.5, [0]), (2, [0, 1]), (2, [0])]
    half = variant_inputs(module, candidates[0], 7, "cpu")
    double = variant_inputs(module, candidates[2], 7, "cpu")
    assert describe_shapes(spec_of(half)) == "(4, 4), (4, 4), (3, 4), 2.5"
    assert describe_shapes(spec_of(double)) == "(16, 4), (16, 4), (3, 4), 2.5"
    # The same draw as the problem's own inputs: the first rows are the problem's rows.
    assert torch.equal(half[0], inputs[0][:4]) and torch.equal(double[1][:8], inputs[1])
    assert not torch.equal(double[0][8:], inputs[0])
    # Deterministic under the seed: the reference and the candidate draw the same values.
    assert torch.equal(variant_inputs(module, candidates[2], 7, "cpu")[0], double[0])


def test_a_batch_of_one_is_only_doubled_and_scalars_have_no_batch():
    assert [c["scale"] for c in batch_candidates([torch.randn(1, 5)])] == [2]
    assert batch_candidates([torch.tensor(3.0), 4]) == []


def test_declared_variants_replace_batch_scaling_and_may_be_functions():
    module = _Module(lambda: [torch.randn(8, 4)], lambda: [[torch.randn(2, 4)], lambda: [torch.randn(5, 4)]])
    assert declared_variants(module) == 2
    assert describe_shapes(spec_of(variant_inputs(module, {"kind": "declared", "index": 1}, 3, "cpu"))) == "(5, 4)"
    assert declared_variants(_Module(list)) == 0
    with pytest.raises(TypeError, match="must return a list"):
        declared_variants(_Module(list, lambda: torch.randn(2)))


def test_a_larger_batch_the_device_cannot_hold_twice_is_skipped_with_its_reason(monkeypatch):
    from sandbox import settings
    from sandbox.workers.validation import shape_variants

    class Model(torch.nn.Module):
        def forward(self, x):
            return x * 2

    module = _Module(lambda: [torch.randn(64, 256)])
    monkeypatch.setattr(settings, "SHAPE_TRIAL_MEMORY_SHARE", 1e-6)  # a few kilobytes: the doubled batch is over
    variants = shape_variants(module, Model(), "cpu", 5)
    assert [(v["scale"], v["shapes"]) for v in variants] == [(0.5, "(32, 256)"), (2, "(128, 256)")]
    assert "skipped" not in variants[0]
    assert "the reference alone needs" in variants[1]["skipped"], variants[1]
    assert "KS_SHAPE_TRIAL_MEMORY_SHARE" in variants[1]["skipped"]
    monkeypatch.setattr(settings, "SHAPE_TRIAL_MEMORY_SHARE", 0.3)
    assert not any("skipped" in v for v in shape_variants(module, Model(), "cpu", 5))


def test_the_verdict_names_the_shapes_it_skipped_and_checks_the_others(
    run_eval, files, elementwise, sources, monkeypatch
):
    monkeypatch.setenv("KS_SHAPE_TRIAL_MEMORY_SHARE", "1e-6")  # read by the jailed reference worker
    v = run_eval(elementwise, files.workspace(sources["STABLE_WORKSPACE"]))
    assert v.status == "ok", (v.status, v.log[-2000:])
    assert v.shapes_checked == [PROBLEM_SHAPES, HALF] and v.shape_general is True
    assert len(v.shapes_skipped) == 1 and v.shapes_skipped[0].startswith(f"{DOUBLE}: the reference alone needs")


def test_a_solution_specialized_to_the_problems_shape_is_not_shape_general(run_eval, files, elementwise, sources):
    v = run_eval(elementwise, files.workspace(sources["SPECIALIZED_WORKSPACE"]))
    # Right at the problem's shapes, rewarded there as before...
    assert v.status == "ok" and v.correct and v.reward >= 1, (v.status, v.log[-2000:])
    # ...and named as specialized, with the shape it failed at and why.
    assert v.shape_general is False
    assert v.failing_shape == HALF
    assert "expected 65536 elements" in v.shape_failure, v.shape_failure
    assert v.shapes_checked == [PROBLEM_SHAPES, HALF]
    assert f"fails at inputs {HALF}" in v.summary()
    assert v.violations == []


def test_a_general_solution_passes_at_every_batch_size(run_eval, files, elementwise, sources):
    v = run_eval(elementwise, files.workspace(sources["STABLE_WORKSPACE"]))
    assert v.status == "ok", (v.status, v.log[-2000:])
    assert v.shape_general is True and v.failing_shape == "" and v.shape_failure == ""
    assert v.shapes_checked == [PROBLEM_SHAPES, HALF, DOUBLE]
    assert "shape trials" in v.timing["stages_s"]


def test_a_pytorch_fallback_at_other_shapes_only_is_specialized_not_a_violation(run_eval, files, elementwise, sources):
    solution = files.solution(
        sources["HONEST_ELEMENTWISE"].replace(
            "    def forward(self, x, y):\n",
            "    def forward(self, x, y):\n        if x.shape[0] != 128:\n            return torch.relu(x + y) * 2.0\n",
        )
    )
    v = run_eval(elementwise, solution)
    assert v.status == "ok" and v.violations == [], (v.status, v.violations, v.log[-2000:])
    assert v.shape_general is False and v.failing_shape == HALF
    assert "PyTorch compute operators" in v.shape_failure and "aten::" in v.shape_failure, v.shape_failure


FIXED_BATCH = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """Adds a parameter of the batch's own shape: no other batch size can run."""

    def __init__(self):
        super().__init__()
        self.offset = nn.Parameter(torch.randn(16, 32))

    def forward(self, x):
        return x + self.offset


def get_inputs():
    return [torch.randn(16, 32)]


def get_init_inputs():
    return []
'''

HONEST_FIXED_BATCH = """
import numpy as np
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.offset = nn.Parameter(torch.randn(16, 32))

    def forward(self, x):
        return torch.from_numpy(x.numpy() + self.offset.detach().numpy())
"""

DECLARED = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return torch.relu(x + y) * 2.0


def get_inputs():
    return [torch.randn(128, 512), torch.randn(128, 512)]


def get_input_variants():
    return [[torch.randn(3, 512), torch.randn(3, 512)], lambda: [torch.randn(7, 5), torch.randn(7, 5)]]


def get_init_inputs():
    return []
"""


def test_nothing_that_can_vary_leaves_shape_general_unknown(run_eval, files):
    v = run_eval(files.problem(FIXED_BATCH), files.solution(HONEST_FIXED_BATCH))
    assert v.status == "ok", (v.status, v.log[-2000:])
    assert v.shape_general is None and v.shapes_checked == ["(16, 32)"]


def test_declared_variants_are_the_shapes_checked(run_eval, files, sources):
    v = run_eval(files.problem(DECLARED), files.solution(sources["HONEST_ELEMENTWISE"]))
    assert v.status == "ok", (v.status, v.log[-2000:])
    assert v.shapes_checked == [PROBLEM_SHAPES, "(3, 512), (3, 512)", "(7, 5), (7, 5)"]
    assert v.shape_general is True


def test_the_shape_check_can_be_turned_off(run_eval, files, elementwise, sources):
    v = run_eval(elementwise, files.workspace(sources["SPECIALIZED_WORKSPACE"]), shape_check=False)
    assert v.status == "ok", (v.status, v.log[-2000:])
    assert v.shape_general is None and v.shapes_checked == [] and v.failing_shape == ""


def test_a_solution_whose_process_dies_at_another_size_is_specialized_not_a_crash(
    run_eval, files, elementwise, sources
):
    # A kernel that faults at another size takes its worker with it (a CUDA fault does): the verdict at the
    # problem's shapes stands, and the process that is gone is not told to exit.
    solution = files.solution(
        sources["HONEST_ELEMENTWISE"].replace(
            "    def forward(self, x, y):\n",
            "    def forward(self, x, y):\n        if x.shape[0] != 128:\n            import os\n            os._exit(3)\n",
        )
    )
    v = run_eval(elementwise, solution)
    assert v.status == "ok" and v.correct, (v.status, v.log[-2000:])
    assert v.shape_general is False and v.failing_shape == HALF
    assert "crashed" in v.shape_failure, v.shape_failure
