"""A verdict shown answer first: speedup bars with their spread against both baselines, at PyTorch's default and at
matched precision, the reward badge and its meaning, correctness, and the profile (studio.verdicts, charts)."""

import pytest

from sandbox import Verdict
from studio.charts import speedup_bars
from studio.verdicts import kernel_base_name, quartile_factor, speedup, view


def timing(ms, spread):
    return {"median_ms": ms, "samples": 50, "spread_pct": spread, "min_ms": ms, "max_ms": ms, "mode": "events"}


def gemm_verdict(**overrides):
    """A GEMM whose speed comes from TF32: 6x against PyTorch's default, 1.2x at matched precision."""
    fields = {
        "status": "ok",
        "correct": True,
        "runtime_ms": 0.5,
        "eager_ms": 3.0,
        "compiled_ms": 2.5,
        "speedup_vs_eager": 6.0,
        "speedup_vs_compiled": 5.0,
        "reward": 3,
        "reward_schedule": "paper",
        "eager_tf32_ms": 0.6,
        "compiled_tf32_ms": 0.55,
        "speedup_vs_eager_tf32": 1.2,
        "speedup_vs_compiled_tf32": 1.1,
        "max_abs_error": 2e-3,
        "max_abs_error_fp64": 2.1e-3,
        "reference_abs_error_fp64": 1e-6,
        "trials": [{"trial": f"trial {i}", "ok": True, "max_abs_error": 1e-3} for i in range(5)],
        "timing": {
            "candidate": timing(0.5, 10.0),
            "eager": timing(3.0, 4.0),
            "compiled": timing(2.5, 6.0),
            "eager_tf32": timing(0.6, 2.0),
            "compiled_tf32": timing(0.55, 2.0),
        },
    }
    fields.update(overrides)
    return Verdict(**fields).to_json()


def test_it_reports_both_precisions_side_by_side_with_error_bars_from_the_spreads():
    shown = view(gemm_verdict())
    bars = {(s.baseline, s.precision): s for s in shown.speedups}
    assert set(bars) == {
        ("eager", "default"),
        ("torch.compile", "default"),
        ("eager", "tf32"),
        ("torch.compile", "tf32"),
    }
    assert bars["eager", "default"].speedup == pytest.approx(6.0)
    assert bars["eager", "tf32"].speedup == pytest.approx(1.2)
    eager = bars["eager", "default"]
    # 4% baseline spread and 10% candidate spread: quartiles about 2% and 5% from each median.
    assert eager.low == pytest.approx(3.0 * 0.98 / (0.5 * 1.05), rel=2e-3)
    assert eager.high == pytest.approx(3.0 * 1.02 / (0.5 * 0.95), rel=3e-3)
    assert eager.low < eager.speedup < eager.high


def test_a_spread_past_200_percent_still_gives_a_positive_error_bar_around_the_speedup():
    # As measured on a loaded 2-core machine: the eager baseline's quartiles 2.5 medians apart.
    bar = speedup("eager", "default", 18.502, 9.8423, 250.0, 47.0)
    assert 0 < bar.low < bar.speedup < bar.high
    k = quartile_factor(250.0)
    assert k - 1 / k == pytest.approx(2.5) and quartile_factor(0) == 1.0


def test_it_leads_with_correctness_trials_and_the_fp64_error():
    shown = view(gemm_verdict())
    assert shown.headline == "Correct: 6.00x faster than eager, 5.00x faster than torch.compile."
    assert (shown.trials_passed, shown.trials_total) == (5, 5)
    assert shown.max_abs_error_fp64 == pytest.approx(2.1e-3) and shown.reference_abs_error_fp64 == pytest.approx(1e-6)
    assert shown.reward_level == "faster"
    assert shown.reward_meaning == "more than 5% faster than eager and torch.compile"


def test_a_slower_kernel_says_slower_in_words():
    verdict = gemm_verdict(
        runtime_ms=6.0,
        speedup_vs_eager=0.5,
        speedup_vs_compiled=0.42,
        reward=1,
        eager_tf32_ms=None,
        compiled_tf32_ms=None,
    )
    shown = view(verdict)
    assert shown.headline == "Correct: 2.00x slower than eager, 2.40x slower than torch.compile."
    assert shown.reward_level == "correct" and shown.reward_meaning == "correct"
    assert not shown.matched_speedups


def test_a_failed_verdict_has_no_bars_and_names_the_failure():
    shown = view(Verdict(status="compile_error", reward=-1, log="error: x").to_json())
    assert shown.headline == "Not correct: the kernel did not compile."
    assert shown.speedups == [] and shown.reward_level == "failed"


def test_a_verdict_stored_before_the_reward_schedule_reads_as_the_milestones():
    verdict = gemm_verdict()
    del verdict["reward_schedule"]
    verdict["reward"] = 0
    assert view(verdict).reward_meaning == "correct" and view(verdict).reward_schedule == "milestone"


def test_the_profile_joins_nsight_throughput_to_the_kernel_table():
    verdict = gemm_verdict(
        profile={
            "candidate": [{"name": "gemm_kernel", "calls": 1, "total_ms": 0.4, "mean_us": 400.0, "share_pct": 80.0}],
            "ncu_candidate": [{"name": "gemm_kernel", "duration_us": 390.0, "dram_pct": 41.5, "sm_pct": 88.0}],
        }
    )
    [row] = view(verdict).kernels
    assert (row.name, row.share_pct, row.dram_pct, row.sm_pct) == ("gemm_kernel", 80.0, 41.5, 88.0)


def test_the_profile_joins_kernels_that_the_two_tools_name_differently():
    verdict = gemm_verdict(
        profile={
            "candidate": [
                {"name": "void ks::gemm_tf32<64, 4>(float const*, float const*, float*, int)", "share_pct": 70.0},
                {"name": "void (anonymous namespace)::relu_epilogue<float>(float*, int)", "share_pct": 20.0},
                {"name": "void pack<float>(float const*)", "share_pct": 10.0},
            ],
            "ncu_candidate": [
                {"name": "gemm_tf32", "duration_us": 390.0, "dram_pct": 41.5, "sm_pct": 88.0},
                {
                    "name": "void relu_epilogue<float>(float *, int)",
                    "duration_us": 9.0,
                    "dram_pct": 91.0,
                    "sm_pct": 7.0,
                },
                # Two instantiations of one template: which is which cannot be told, so neither is claimed.
                {"name": "pack<float>", "duration_us": 2.0, "dram_pct": 50.0, "sm_pct": 5.0},
                {"name": "pack<half>", "duration_us": 1.0, "dram_pct": 30.0, "sm_pct": 5.0},
            ],
        }
    )
    assert [(k.dram_pct, k.sm_pct) for k in view(verdict).kernels] == [(41.5, 88.0), (91.0, 7.0), (None, None)]
    assert kernel_base_name("void at::native::vectorized_elementwise_kernel<4, X<float>>(int, F)") == (
        "vectorized_elementwise_kernel"
    )


def test_the_bars_are_drawn_from_the_one_line_faster_right_slower_left():
    svg = str(
        speedup_bars([speedup("eager", "default", 2.0, 1.0, 0, 0), speedup("torch.compile", "default", 1.0, 2.0, 0, 0)])
    )
    assert svg.count("<rect") == 2 and 'data-speedup="2.0000"' in svg and 'data-speedup="0.5000"' in svg
    faster_x = float(svg.split('class="bar faster')[1].split('<rect x="')[1].split('"')[0])
    slower_rect = svg.split('class="bar slower')[1].split("<rect ")[1]
    one_x = float(svg.split('class="one" x1="')[1].split('"')[0])
    slower_x = float(slower_rect.split('x="')[1].split('"')[0])
    slower_w = float(slower_rect.split('width="')[1].split('"')[0])
    assert faster_x == pytest.approx(one_x, abs=0.2) and slower_x + slower_w == pytest.approx(one_x, abs=0.2)
    assert speedup_bars([]) == ""
