"""Metric arithmetic on known verdicts: failures in every denominator, ties at 1.0, missing baselines, errors."""

import math

import pytest

from sandbox.reward import reward as reward_of
from training.evaluation.metrics import P_VALUES, compute, group_metrics
from training.evaluation.report import markdown
from training.evaluation.results import EpisodeResult


def result(
    level=1,
    correct=True,
    eager=None,
    compiled=None,
    reward=None,
    status=None,
    turns=4,
    wall_s=10.0,
    eager_ms=1.0,
    compiled_ms=1.0,
    verdict=True,
    schedule="paper",
    eager_tf32=None,
    compiled_tf32=None,
):
    """An EpisodeResult with a verdict of the given speedups (None: that baseline was not measured; the TF32-matched
    ones, as in verdicts from before they existed), rewarded under SCHEDULE (None: a verdict stored before verdicts
    named their schedule, which used the milestones)."""
    if not verdict:
        return EpisodeResult(
            arm="strict",
            key=f"level{level}/x",
            level=level,
            problem_id=0,
            name="x",
            problem_sha256="0",
            error="InvalidProblem: boom",
            turns=turns,
            wall_s=wall_s,
        )
    if reward is None:
        reward = reward_of(schedule or "milestone", correct, eager, compiled)
    v = {
        "status": status or ("ok" if correct else "incorrect"),
        "correct": correct,
        "reward": reward,
        "eager_ms": eager_ms,
        "compiled_ms": compiled_ms,
        "speedup_vs_eager": eager if correct else None,
        "speedup_vs_compiled": compiled if correct else None,
    }
    for baseline, speedup in (("eager_tf32", eager_tf32), ("compiled_tf32", compiled_tf32)):
        if speedup is not None:
            v[f"{baseline}_ms"] = speedup * 0.1
            v[f"speedup_vs_{baseline}"] = speedup if correct else None
    if schedule:
        v["reward_schedule"] = schedule
    return EpisodeResult(
        arm="strict",
        key=f"level{level}/x",
        level=level,
        problem_id=0,
        name="x",
        problem_sha256="0",
        verdict=v,
        turns=turns,
        wall_s=wall_s,
    )


def test_failures_count_in_the_correct_rate_and_every_fast_p_denominator():
    m = group_metrics(
        [
            result(eager=2.0, compiled=1.6),
            result(eager=0.5, compiled=0.4),
            result(correct=False),
            result(correct=False, status="compile_error"),
        ]
    )
    assert m["problems"] == 4 and m["correct"] == 2 and m["correct_rate"] == 0.5
    assert m["eager"]["fast_p"] == {"1.0": 0.25, "1.25": 0.25, "1.5": 0.25, "2.0": 0.0, "3.0": 0.0}
    assert m["compiled"]["fast_p"]["1.5"] == 0.25 and m["compiled"]["fast_p"]["2.0"] == 0.0
    assert m["statuses"] == {"compile_error": 1, "incorrect": 1, "ok": 2}
    assert list(m["eager"]["fast_p"]) == [str(p) for p in P_VALUES]


def test_a_tie_at_exactly_one_is_not_faster_but_counts_in_the_geomean():
    m = group_metrics([result(eager=1.0, compiled=1.0), result(eager=1.25, compiled=3.0)])
    assert m["eager"]["fast_p"]["1.0"] == 0.5  # the tie is not faster
    assert m["eager"]["fast_p"]["1.25"] == 0.0  # nor is 1.25 at p = 1.25
    assert m["compiled"]["fast_p"]["3.0"] == 0.0 and m["compiled"]["fast_p"]["2.0"] == 0.5
    assert m["eager"]["geomean_correct"] == pytest.approx(math.sqrt(1.25))


def test_the_geomean_over_all_counts_failures_as_one():
    m = group_metrics([result(eager=4.0, compiled=2.0), result(eager=0.25, compiled=0.5), result(correct=False)])
    assert m["eager"]["geomean_correct"] == pytest.approx(1.0)  # sqrt(4 * 0.25)
    assert m["eager"]["geomean_all"] == pytest.approx(1.0)  # cbrt(4 * 0.25 * 1)
    assert m["compiled"]["geomean_correct"] == pytest.approx(1.0)
    m = group_metrics([result(eager=8.0), result(correct=False), result(correct=False)])
    assert m["eager"]["geomean_correct"] == pytest.approx(8.0)
    assert m["eager"]["geomean_all"] == pytest.approx(2.0)  # cbrt(8 * 1 * 1)


def test_a_correct_result_without_a_compile_baseline_is_neither_faster_nor_averaged():
    m = group_metrics([result(eager=2.0, compiled=3.0), result(eager=2.0, compiled=None, compiled_ms=None)])
    assert m["compiled"]["measured"] and m["compiled"]["missing"] == 1
    assert m["compiled"]["fast_p"]["1.0"] == 0.5
    assert m["compiled"]["geomean_correct"] == pytest.approx(3.0)
    assert m["compiled"]["geomean_all"] == pytest.approx(math.sqrt(3.0))  # the missing one counts as 1.0
    assert m["eager"]["missing"] == 0 and m["eager"]["geomean_correct"] == pytest.approx(2.0)


def test_a_baseline_measured_nowhere_is_not_measured_rather_than_zero():
    m = group_metrics([result(eager=2.0, compiled=None, compiled_ms=None), result(correct=False, compiled_ms=None)])
    assert m["compiled"]["measured"] is False
    assert set(m["compiled"]["fast_p"].values()) == {None}
    assert m["compiled"]["geomean_correct"] is None and m["compiled"]["geomean_all"] is None
    assert m["eager"]["fast_p"]["1.0"] == 0.5


def test_nothing_correct_gives_zero_shares_and_no_geomean_over_correct():
    m = group_metrics([result(correct=False), result(correct=False)])
    assert m["correct_rate"] == 0.0 and m["eager"]["fast_p"]["1.0"] == 0.0
    assert m["eager"]["geomean_correct"] is None and m["eager"]["geomean_all"] == pytest.approx(1.0)


def test_an_episode_that_never_reached_a_verdict_is_a_failure_and_an_error():
    m = group_metrics([result(eager=2.0), result(verdict=False)])
    assert m["problems"] == 2 and m["correct"] == 1 and m["errors"] == 1
    assert m["rewards"]["paper"]["counts"]["-1"] == 1 and m["statuses"]["error"] == 1
    assert m["eager"]["fast_p"]["1.0"] == 0.5


def test_reward_distribution_mean_turns_and_wall_time():
    m = group_metrics(
        [
            result(eager=2.0, compiled=2.0, turns=10, wall_s=30.0),
            result(eager=0.9, turns=4, wall_s=10.0),
            result(correct=False, turns=1, wall_s=2.0),
        ]
    )
    assert m["rewards"] == {
        "paper": {"problems": 3, "mean": pytest.approx(1.0), "counts": {"-1": 1, "1": 1, "2": 0, "3": 1}}
    }
    assert m["mean_turns"] == pytest.approx(5.0) and m["mean_wall_s"] == pytest.approx(14.0)
    assert m["total_wall_s"] == pytest.approx(42.0)


def test_metrics_split_per_level_and_overall():
    data = compute([result(level=1, eager=2.0), result(level=1, correct=False), result(level=3, eager=0.5)])
    assert list(data["levels"]) == ["1", "3"]
    assert data["levels"]["1"]["correct_rate"] == 0.5 and data["levels"]["3"]["correct_rate"] == 1.0
    assert data["levels"]["3"]["eager"]["fast_p"]["1.0"] == 0.0
    assert data["overall"]["problems"] == 3 and data["overall"]["eager"]["fast_p"]["1.0"] == pytest.approx(1 / 3)
    assert compute([]) == {"levels": {}, "overall": {"problems": 0}}


def test_rewards_of_stored_milestone_verdicts_are_counted_apart_never_added_to_the_papers():
    # The same speedups: 1.03x eager is reward 1 under both schedules, but means "correct" in the paper and
    # "faster than eager" in the milestones; a correct slow one is 1 against 0.
    m = group_metrics(
        [
            result(eager=1.03, schedule="paper"),
            result(eager=0.5, schedule="paper"),
            result(eager=1.03, schedule=None),
            result(eager=0.5, schedule=None),
            result(verdict=False),
        ]
    )
    assert m["rewards"]["paper"] == {"problems": 2, "mean": 1.0, "counts": {"-1": 0, "1": 2, "2": 0, "3": 0}}
    # The episode without a verdict counts under the most common schedule (of a tie, the first by name).
    assert m["rewards"]["milestone"]["counts"] == {"-1": 1, "0": 1, "1": 1, "2": 0, "3": 0}
    # Faster-than shares come from the speedups, whatever the schedule: two of five are faster than eager.
    assert m["eager"]["fast_p"]["1.0"] == pytest.approx(2 / 5)


def _report(*arms):
    """metrics.md of ARMS ({arm: [EpisodeResult]}) as the report writer makes it."""
    return markdown(
        {
            "evaluation": {"policy": "heuristic", "device": "cuda"},
            "generated_at": "now",
            "conventions": "c",
            "reference": {"label": "paper", "levels": {}, "overall": {}},
            "arms": {arm: compute(results) for arm, results in arms},
        }
    )


def test_the_report_names_each_schedule_and_what_its_levels_mean():
    text = _report(("strict", [result(eager=2.0, compiled=2.0), result(eager=2.0, compiled=2.0, schedule=None)]))
    assert "3.00 (milestone) / 3.00 (paper)" in text
    assert "Rewards under the `paper` schedule:" in text and "Rewards under the `milestone` schedule:" in text
    assert "3 (more than 5% faster than eager and torch.compile)" in text
    assert "3 (faster than both by at least 5%)" in text and "0 (correct)" in text


def test_the_report_shows_speedups_against_pytorchs_defaults_and_precision_matched_baselines_labelled():
    # A TF32 GEMM: 6x against PyTorch's full-FP32 default, barely faster once the baselines may use TF32 too.
    text = _report(
        (
            "strict",
            [
                result(eager=6.0, compiled=5.0, eager_tf32=1.2, compiled_tf32=1.1),
                result(eager=6.0, compiled=5.0, eager_tf32=0.8, compiled_tf32=0.9),
            ],
        )
    )
    assert (
        "| fast_1 vs eager (default) | fast_1 vs compile (default) | geomean vs eager, default (correct / all) | "
        "geomean vs compile, default (correct / all) | geomean vs eager, TF32-matched (correct / all) | "
        "geomean vs compile, TF32-matched (correct / all) |"
    ) in text
    assert "| level 1 | 2 | 2 (100.0%) | 100.0% | 100.0% | 6.00x / 6.00x | 5.00x / 5.00x | 0.98x / 0.98x |" in text
    assert "| level 1 | eager (TF32-matched) | 50.0% | 0.0% |" in text
    assert "| level 1 | torch.compile (default) | 100.0% | 100.0% | 100.0% | 100.0% | 100.0% |" in text
    assert "*TF32-matched*: TF32 allowed for matmuls and convolutions alike" in text


def test_results_without_precision_matched_baselines_say_not_measured_rather_than_dropping_the_column():
    text = _report(("strict", [result(eager=2.0, compiled=1.5)]), ("relaxed", [result(eager=2.0, compiled=1.5)]))
    assert (
        "| level 1 | 1 | 1 (100.0%) | 100.0% | 100.0% | 2.00x / 2.00x | 1.50x / 1.50x | not measured | not measured |"
        in text
    )
    assert "| level 1 | eager (TF32-matched) | not measured | not measured |" in text
    assert "| level 1 | geomean vs torch.compile, TF32-matched (correct) | not measured | not measured |" in text
    assert "| level 1 | geomean vs eager, default (correct) | 2.00x | 2.00x |" in text
