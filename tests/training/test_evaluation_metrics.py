"""Metric arithmetic on known verdicts: failures in every denominator, ties at 1.0, missing baselines, errors."""
import math

import pytest

from training.evaluation.metrics import P_VALUES, compute, group_metrics
from training.evaluation.results import EpisodeResult


def result(level=1, correct=True, eager=None, compiled=None, reward=None, status=None, turns=4, wall_s=10.0,
           eager_ms=1.0, compiled_ms=1.0, verdict=True):
    """An EpisodeResult with a verdict of the given speedups (None: that baseline was not measured)."""
    if not verdict:
        return EpisodeResult(arm="strict", key=f"level{level}/x", level=level, problem_id=0, name="x",
                             problem_sha256="0", error="InvalidProblem: boom", turns=turns, wall_s=wall_s)
    if reward is None:
        reward = -1 if not correct else 0 if not eager or eager <= 1 else 1 if not compiled or compiled <= 1 else 2
    v = {"status": status or ("ok" if correct else "incorrect"), "correct": correct, "reward": reward,
         "eager_ms": eager_ms, "compiled_ms": compiled_ms,
         "speedup_vs_eager": eager if correct else None, "speedup_vs_compiled": compiled if correct else None}
    return EpisodeResult(arm="strict", key=f"level{level}/x", level=level, problem_id=0, name="x",
                         problem_sha256="0", verdict=v, turns=turns, wall_s=wall_s)


def test_failures_count_in_the_correct_rate_and_every_fast_p_denominator():
    m = group_metrics([result(eager=2.0, compiled=1.6), result(eager=0.5, compiled=0.4), result(correct=False),
                       result(correct=False, status="compile_error")])
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
    assert m["reward"]["counts"]["-1"] == 1 and m["statuses"]["error"] == 1
    assert m["eager"]["fast_p"]["1.0"] == 0.5


def test_reward_distribution_mean_turns_and_wall_time():
    m = group_metrics([result(reward=3, eager=2.0, compiled=2.0, turns=10, wall_s=30.0),
                       result(reward=0, eager=0.9, turns=4, wall_s=10.0), result(correct=False, turns=1, wall_s=2.0)])
    assert m["reward"]["counts"] == {"-1": 1, "0": 1, "1": 0, "2": 0, "3": 1}
    assert m["reward"]["mean"] == pytest.approx(2 / 3)
    assert m["mean_turns"] == pytest.approx(5.0) and m["mean_wall_s"] == pytest.approx(14.0)
    assert m["total_wall_s"] == pytest.approx(42.0)


def test_metrics_split_per_level_and_overall():
    data = compute([result(level=1, eager=2.0), result(level=1, correct=False), result(level=3, eager=0.5)])
    assert list(data["levels"]) == ["1", "3"]
    assert data["levels"]["1"]["correct_rate"] == 0.5 and data["levels"]["3"]["correct_rate"] == 1.0
    assert data["levels"]["3"]["eager"]["fast_p"]["1.0"] == 0.0
    assert data["overall"]["problems"] == 3 and data["overall"]["eager"]["fast_p"]["1.0"] == pytest.approx(1 / 3)
    assert compute([]) == {"levels": {}, "overall": {"problems": 0}}
