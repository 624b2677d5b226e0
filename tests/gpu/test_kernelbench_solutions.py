"""Ten KernelBench problems validate on the GPU, and their handwritten solutions evaluate end to end: built,
correct on fresh inputs, timed against eager PyTorch, rewarded.

Nine solutions are native workspaces (stable-ABI binding, kernels with CUDA headers only); 86_Matmul_Divide_GELU
is KernelBench style (load_inline, about a minute to build). The shapes are KernelBench's own: 19_ReLU and
23_Softmax move 6 GB each way, past 2^31 elements, so their kernels index in 64 bits.
"""

from pathlib import Path

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
    verdict = run_eval(
        kernelbench.problem(case.level, case.name), case.solution, label=case.key, trials=trials, timeout_s=300
    )
    assert verdict.status == "ok", f"{verdict.status}: {verdict.log}"
    assert verdict.correct and not verdict.violations
    assert verdict.reward >= 1
    assert [t["trial"] for t in verdict.trials] == [f"trial {i + 1}" for i in range(trials)] + ["post-timing"]
    assert all(t["ok"] for t in verdict.trials)
    assert verdict.runtime_ms > 0 and verdict.eager_ms > 0
    assert verdict.speedup_vs_eager == pytest.approx(verdict.eager_ms / verdict.runtime_ms, rel=1e-3, abs=1e-4)
    assert verdict.timing["candidate"]["mode"] == "events"
    assert verdict.compile_s is not None and verdict.compile_s >= 0


def test_a_tf32_gemm_solution_is_reported_against_precision_matched_baselines(kernelbench, run_eval):
    # Issue 17: the handwritten 63_Gemm_ReLU_Divide uses TF32 tensor cores; most of its speedup over PyTorch's
    # default (full-FP32) eager is precision, which the TF32-matched baselines and the float64 errors make plain.
    solution = Path(__file__).parent / "solutions" / "level2" / "63_Gemm_ReLU_Divide"
    verdict = run_eval(
        kernelbench.problem(2, "63_Gemm_ReLU_Divide"),
        solution,
        label="2/63_Gemm_ReLU_Divide TF32 pair",
        trials=2,
        timeout_s=300,
    )
    assert verdict.status == "ok", f"{verdict.status}: {verdict.log}"
    assert verdict.eager_tf32_ms  # (the fast protocol of these tests times no torch.compile baseline)
    assert verdict.eager_tf32_ms < verdict.eager_ms  # TF32 matmuls are faster than full FP32 on a Hopper GPU
    assert verdict.speedup_vs_eager_tf32 < verdict.speedup_vs_eager
    assert verdict.speedup_vs_eager_tf32 == pytest.approx(verdict.eager_tf32_ms / verdict.runtime_ms, rel=1e-3)
    # The TF32 GEMM gives up precision the FP32 reference keeps: both measured against float64.
    assert verdict.max_abs_error_fp64 > 10 * verdict.reference_abs_error_fp64
    print(
        f"\n63_Gemm_ReLU_Divide: {verdict.speedup_vs_eager:.2f}x eager ({verdict.eager_ms:.3f} ms), "
        f"{verdict.speedup_vs_eager_tf32:.2f}x TF32-matched eager ({verdict.eager_tf32_ms:.3f} ms), "
        f"error vs float64 {verdict.max_abs_error_fp64:.2e} (FP32 reference {verdict.reference_abs_error_fp64:.2e})"
    )
