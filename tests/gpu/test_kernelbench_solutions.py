"""Ten KernelBench problems validate on the GPU, and their handwritten solutions evaluate end to end: built,
correct on fresh inputs, timed against eager PyTorch, rewarded.

Nine solutions are native workspaces (stable-ABI binding, kernels with CUDA headers only); 86_Matmul_Divide_GELU
is KernelBench style (load_inline, about a minute to build). The shapes are KernelBench's own: 19_ReLU and
23_Softmax move 6 GB each way, past 2^31 elements, so their kernels index in 64 bits.
"""
import pytest

pytestmark = pytest.mark.gpu

# `case` is parametrized over conftest.CASES by conftest.pytest_generate_tests.


def test_problem_validates(case, validated_specs):
    status, spec = validated_specs[case.key]
    assert status == "ok", spec
    assert spec["outputs"] == {"shape": list(case.output_shape), "dtype": "float32"}


def test_solution_is_correct_fast_and_rewarded(case, kernelbench, run_eval):
    trials = 2
    # 300 s covers load_inline's build (about a minute) inside the solution's time limit.
    verdict = run_eval(kernelbench.problem(case.level, case.name), case.solution, label=case.key, trials=trials,
                       timeout_s=300)
    assert verdict.status == "ok", f"{verdict.status}: {verdict.log}"
    assert verdict.correct and not verdict.violations
    assert verdict.reward >= 0
    assert [t["trial"] for t in verdict.trials] == [f"trial {i + 1}" for i in range(trials)] + ["post-timing"]
    assert all(t["ok"] for t in verdict.trials)
    assert verdict.runtime_ms > 0 and verdict.eager_ms > 0
    assert verdict.speedup_vs_eager == pytest.approx(verdict.eager_ms / verdict.runtime_ms, rel=1e-3, abs=1e-4)
    assert verdict.timing["candidate"]["mode"] == "events"
    assert verdict.compile_s is not None and verdict.compile_s >= 0
