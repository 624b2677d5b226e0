"""Each execution filter rejects a task built to violate it, run for real in the sandbox's jail on the CPU,
and a task that violates none passes them all (torch.compile included)."""

import multiprocessing
import textwrap

import pytest

from sandbox.jsonl import write_jsonl
from sandbox.problems_file import find, read_problems
from training.synthesis.dataset import RunConfig
from training.synthesis.dedup import LocalClaims, fingerprint, kernelbench_index
from training.synthesis.filters import FILTERS, eager_window, not_dominated
from training.synthesis.pipeline import probe_source, synthesize_one

# A window that any tiny CPU problem is inside: only the filter under test can reject.
WIDE = RunConfig(
    device="cpu", profile="tiny", window_ms=(0.0, 10_000.0), max_share=0.9, time_budget_s=0.05, timeout_s=300.0
)


def problem(forward, inputs="torch.randn(batch_size, 64)", init=""):
    init_lines = textwrap.indent(textwrap.dedent(init).strip(), " " * 8) if init.strip() else ""
    return textwrap.dedent("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
        {init}

            def forward(self, x):
        {forward}


        batch_size = 8


        def get_inputs():
            return [{inputs}]


        def get_init_inputs():
            return []
        """).format(init=init_lines, forward=textwrap.indent(textwrap.dedent(forward).strip(), " " * 8), inputs=inputs)


@pytest.fixture(scope="module")
def manager():
    with multiprocessing.Manager() as m:
        yield m


def failed(verdicts):
    """(filter, reason) of the first failing verdict; the filters after it never ran."""
    bad = [v for v in verdicts if not v.passed]
    assert len(bad) == 1 and verdicts[-1] is bad[0], [v.to_json() for v in verdicts]
    return bad[0].filter, bad[0].reason


def test_it_rejects_a_task_that_does_not_run():
    verdicts, _ = probe_source(problem("return x @ x"), WIDE)  # (8, 64) @ (8, 64): shapes do not fit
    name, reason = failed(verdicts)
    assert name == "runs" and "Model.forward failed" in reason and "mat1 and mat2" in reason


def test_it_rejects_a_task_whose_output_is_not_finite():
    verdicts, _ = probe_source(problem("return torch.log(-x.abs() - 1.0)"), WIDE)
    assert failed(verdicts) == ("runs", "the output holds NaN or Inf")


def test_it_rejects_dropout_in_training_mode_as_nondeterministic():
    verdicts, _ = probe_source(problem("return self.drop(torch.relu(x))", init="self.drop = nn.Dropout(p=0.5)"), WIDE)
    name, reason = failed(verdicts)
    assert name == "deterministic" and "not deterministic" in reason


def test_it_rejects_a_task_whose_float32_output_is_its_own_rounding():
    # 1 recovered from a cancellation of 1e8-sized terms: float32 rounds them to multiples of 8 (float64 gives 1)
    verdicts, _ = probe_source(problem("return (x * 1e8 + 1.0) - x * 1e8"), WIDE)
    name, reason = failed(verdicts)
    assert name == "well_conditioned" and "float32 and float64 disagree" in reason


@pytest.mark.parametrize(
    "forward, reason",
    [
        ("return torch.zeros_like(x) + 3.0", "the output is constant"),
        ("return torch.ones(x.shape[0], 4) * torch.arange(4.0)", "the output does not depend on the inputs"),
        ("return torch.relu(x) - torch.relu(-x)", "the output equals input 0"),
    ],
)
def test_it_rejects_a_trivial_task(forward, reason):
    verdicts, _ = probe_source(problem(forward), WIDE)
    assert failed(verdicts) == ("not_trivial", reason)


def test_it_rejects_a_kernelbench_problem_spelled_another_way(tmp_path, manager):
    relu = find(read_problems(kernelbench_path()), 1, "19_ReLU")
    subset = tmp_path / "problems.jsonl"
    write_jsonl(subset, [relu.to_json()])
    index = kernelbench_index(subset)
    # Another size, another spelling (F.relu on a 3-D input instead of torch.relu): the same graph.
    verdicts, _ = probe_source(
        problem("return F.relu(x)", inputs="torch.randn(batch_size, 16, 32)"),
        WIDE,
        LocalClaims(manager, index),
        owner="mine",
    )
    assert failed(verdicts) == ("not_duplicate", "same graph as KernelBench level 1/19_ReLU")


def test_it_rejects_a_duplicate_of_a_kept_task(manager):
    source = problem("return torch.tanh(x) * torch.sigmoid(x)")
    claims = LocalClaims(manager, {fingerprint(source): "run-000007"})
    verdicts, _ = probe_source(source.replace("randn(batch_size, 64)", "randn(batch_size, 3, 7)"), WIDE, claims, "mine")
    assert failed(verdicts) == ("not_duplicate", "same graph as run-000007")


def test_it_rejects_a_task_outside_the_eager_window():
    narrow = RunConfig(**{**WIDE.to_json(), "window_ms": (500.0, 1000.0), "classes": ()})
    verdicts, facts = probe_source(problem("return torch.tanh(x) * 2.0"), narrow)
    name, reason = failed(verdicts)
    assert name == "eager_window" and "under the window's 500 ms" in reason
    assert facts["eager"]["median_ms"] < 500.0


def test_it_rejects_a_task_dominated_by_one_library_call():
    # A GEMM of 0.5 GFLOP with an add on its 128 K outputs: the GEMM is ~99% of the time.
    source = problem(
        "return torch.matmul(x, self.w) + 1.0",
        inputs="torch.randn(batch_size * 8, 2048)",
        init="self.w = nn.Parameter(torch.randn(2048, 2048))",
    )
    verdicts, _ = probe_source(source, WIDE)
    name, reason = failed(verdicts)
    assert name == "not_dominated" and reason.startswith("aten::matmul takes") and "(limit 90%)" in reason


def test_it_rejects_a_task_torch_compile_cannot_trace_in_one_graph():
    source = problem("""
        if x.sum().item() > 0:
            return torch.relu(x) * 2.0
        return torch.tanh(x) * 3.0
        """)
    verdicts, _ = probe_source(source, WIDE)
    name, reason = failed(verdicts)
    assert name == "compiles" and reason.startswith("torch.compile failed")


def test_it_rejects_a_candidate_the_composer_cannot_build(manager):
    run = RunConfig(**{**WIDE.to_json(), "classes": ("no_such_class",)})
    attempt = synthesize_one(0, run, LocalClaims(manager), "t")
    assert not attempt.kept and attempt.removed_by == "composes"
    assert "no seed in the catalogue fits classes" in attempt.verdicts[0]["reason"]


def test_a_task_that_breaks_no_rule_passes_every_filter_with_its_times():
    source = problem("return F.layer_norm(torch.tanh(x) * 2.0, (64,))")
    verdicts, facts = probe_source(source, WIDE)
    # An untrusted source: fingerprinted in the jail, so not_duplicate follows not_trivial.
    assert [v.filter for v in verdicts] == [
        "runs",
        "deterministic",
        "well_conditioned",
        "not_trivial",
        "not_duplicate",
        "eager_window",
        "not_dominated",
        "compiles",
    ]
    assert set(FILTERS) - {v.filter for v in verdicts} == {"composes"}
    assert all(v.passed for v in verdicts), [v.to_json() for v in verdicts]
    assert facts["eager"]["median_ms"] > 0 and facts["compiled"]["median_ms"] > 0 and facts["compile_s"] > 0
    assert facts["fingerprint"].startswith("graph:")


def test_window_and_dominance_filters_name_their_limits():
    assert eager_window(0.5, (1.0, 100.0)).reason == "eager time 0.500 ms is under the window's 1 ms"
    assert eager_window(150.0, (1.0, 100.0)).reason == "eager time 150.000 ms is over the window's 100 ms"
    assert eager_window(50.0, (1.0, 100.0)).passed
    rows = [
        {"name": "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n", "share_pct": 95.0},
        {"name": "triton_poi_fused_add_0", "share_pct": 5.0},
    ]
    assert not not_dominated(rows, 0.9).passed
    # A fusion-friendly kernel may take all the time: only vendor-library calls count as unbeatable.
    assert not_dominated([{"name": "aten::softmax", "share_pct": 99.0}], 0.9).passed


def kernelbench_path():
    from sandbox.problems_file import locate

    path = locate()
    if path is None or not path.is_file():
        pytest.skip(f"KernelBench problems are not at {path}")
    return path
