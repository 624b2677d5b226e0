"""The reward schedules: the paper's Eq. 1 (the default: -1 failed; 1 correct; 2 more than 5% faster than eager;
3 more than 5% faster than eager and torch.compile) and the older milestone schedule (-1; 0 correct; 1 faster than
eager; 2 than both; 3 than both by a 5% speedup). Unit tests at their boundaries, then evaluations that earn each."""

import itertools

import pytest

from sandbox.config import EvalConfig
from sandbox.reward import FAILURE, SCHEDULES, milestone, paper, reward, schedule_of


def ratio(t0, t):
    """The speedup of a solution taking T against a baseline taking T0 (as the harness computes it)."""
    return t0 / t


# -- the paper's schedule ------------------------------------------------------------------------------------
@pytest.mark.parametrize("eager, compiled", [(None, None), (0.5, 0.5), (10.0, 10.0), (1.0, 1.0)])
def test_paper_any_failure_is_minus_one_whatever_the_speed(eager, compiled):
    assert paper(False, eager, compiled) == FAILURE


@pytest.mark.parametrize(
    "eager, compiled", [(None, None), (0.3, None), (1.0, 5.0), (ratio(1.0, 0.95), 5.0), (1.04, 1.04)]
)
def test_paper_correct_but_not_5_percent_faster_than_eager_is_one(eager, compiled):
    # Exactly 5% faster ((t0 - t) / t0 == 0.05) is not "more than 5%"; faster than compile alone earns nothing.
    assert paper(True, eager, compiled) == 1


def test_paper_exactly_five_percent_is_the_boundary_in_times_as_in_rounded_speedups():
    assert paper(True, ratio(2.0, 1.9), None) == 1
    assert paper(True, ratio(0.2, 0.19), None) == 1
    assert paper(True, round(1 / 0.95, 4), None) == 1  # the verdict's speedups carry 4 decimals: 1.0526
    assert paper(True, 1.0527, None) == 2


@pytest.mark.parametrize(
    "eager, compiled", [(ratio(1.0, 0.9499), None), (1.06, 1.0), (3.0, ratio(1.0, 0.95)), (20.0, 0.5), (1.5, 1.04)]
)
def test_paper_more_than_5_percent_faster_than_eager_only_is_two(eager, compiled):
    # Slower than torch.compile (or not 5% faster than it) but more than 5% faster than eager.
    assert paper(True, eager, compiled) == 2


@pytest.mark.parametrize(
    "eager, compiled", [(1.06, 1.06), (ratio(1.0, 0.9499), ratio(1.0, 0.9499)), (7.0, 1.06), (100.0, 100.0)]
)
def test_paper_more_than_5_percent_faster_than_both_is_three(eager, compiled):
    assert paper(True, eager, compiled) == 3


def test_paper_margin_is_the_share_of_the_baselines_time_saved():
    assert paper(True, 1.2, 1.2, margin=0.2) == 1  # saves 16.7% of the time, not 20%
    assert paper(True, 1.3, 1.3, margin=0.2) == 3  # saves 23%
    assert paper(True, 1.001, 1.001, margin=0.0) == 3


# -- the milestone schedule (verdicts stored before 2026-11-26, and `--reward milestone`) ---------------------
@pytest.mark.parametrize("eager, compiled", [(None, None), (0.5, 0.5), (10.0, 10.0), (1.0, 1.0)])
def test_milestone_any_failure_is_minus_one_whatever_the_speed(eager, compiled):
    assert milestone(False, eager, compiled) == FAILURE


@pytest.mark.parametrize("eager, compiled", [(None, None), (0.3, None), (0.99, 5.0), (1.0, 5.0), (1.0, None)])
def test_milestone_correct_but_not_faster_than_eager_is_zero(eager, compiled):
    # A tie (speedup exactly 1.0) is not faster.
    assert milestone(True, eager, compiled) == 0


@pytest.mark.parametrize("eager, compiled", [(1.0001, None), (1.5, 0.5), (1.5, 1.0), (20.0, 0.99)])
def test_milestone_faster_than_eager_only_is_one(eager, compiled):
    assert milestone(True, eager, compiled) == 1


@pytest.mark.parametrize("eager, compiled", [(1.01, 1.01), (1.049, 3.0), (3.0, 1.049), (1.0001, 1.0001)])
def test_milestone_faster_than_both_within_the_margin_is_two(eager, compiled):
    assert milestone(True, eager, compiled) == 2


@pytest.mark.parametrize("eager, compiled", [(1.05, 1.05), (1.05, 7.0), (2.0, 1.06), (100.0, 100.0)])
def test_milestone_faster_than_both_by_the_margin_is_three(eager, compiled):
    # The margin is inclusive: exactly 1 + margin earns the top milestone.
    assert milestone(True, eager, compiled) == 3


def test_milestone_margin_is_a_speedup():
    assert milestone(True, 1.2, 1.2, margin=0.25) == 2
    assert milestone(True, 1.3, 1.3, margin=0.25) == 3
    assert milestone(True, 1.001, 1.001, margin=0.0) == 3
    assert milestone(True, 1.2, 1.2, margin=10.0) == 2


# -- both ------------------------------------------------------------------------------------------------------
def test_the_schedules_differ_where_the_issue_says():
    # Correct but slow: 1 in the paper, 0 in the milestones; faster than eager by 3%: 1 against 1; by 10% and
    # slower than compile: 2 against 1.
    assert (reward("paper", True, 0.8, 0.8), reward("milestone", True, 0.8, 0.8)) == (1, 0)
    assert (reward("paper", True, 1.03, 0.9), reward("milestone", True, 1.03, 0.9)) == (1, 1)
    assert (reward("paper", True, 1.1, 0.9), reward("milestone", True, 1.1, 0.9)) == (2, 1)
    with pytest.raises(ValueError, match="paper"):
        reward("ratio", True, 2.0, 2.0)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_the_reward_never_grows_with_the_raw_ratio_beyond_its_levels(schedule):
    speeds = [None, 0.5, 1.0, 1.02, 1.05, 1.06, 2.0, 1000.0]
    levels = {"paper": (-1, 1, 2, 3), "milestone": (-1, 0, 1, 2, 3)}[schedule]
    for correct, eager, compiled in itertools.product([True, False], speeds, speeds):
        value = reward(schedule, correct, eager, compiled)
        assert value in levels and isinstance(value, int)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_the_reward_is_monotonic_in_each_speedup(schedule):
    speeds = [0.5, 1.0, 1.02, 1.05, 1.06, 2.0]
    for eager, compiled in itertools.product(speeds, speeds):
        for faster in speeds:
            if faster >= eager:
                assert reward(schedule, True, faster, compiled) >= reward(schedule, True, eager, compiled)
            if faster >= compiled:
                assert reward(schedule, True, eager, faster) >= reward(schedule, True, eager, compiled)


def test_the_config_defaults_to_the_paper_and_rejects_unknown_schedules():
    assert EvalConfig().reward == "paper"
    assert EvalConfig(reward="milestone").reward == "milestone"
    with pytest.raises(ValueError, match="reward must be one of"):
        EvalConfig(reward="speedup")
    with pytest.raises(ValueError, match="margin"):
        EvalConfig(margin=1.0)  # no solution saves 100% of a baseline's time
    assert EvalConfig(reward="milestone", margin=1.0).margin == 1.0
    assert EvalConfig.from_json(EvalConfig(reward="milestone").to_json()).reward == "milestone"


def test_a_stored_verdict_without_a_schedule_used_the_milestones():
    assert schedule_of({"reward": 1}) == "milestone"
    assert schedule_of({"reward": 1, "reward_schedule": "paper"}) == "paper"
    assert schedule_of(None) == "milestone"


# -- evaluations that earn each milestone ------------------------------------------------------------------
# A problem whose reference sleeps 3 ms per call (torch.compile cannot remove that): an honest solution is
# clearly faster than both baselines, one that sleeps longer is slower than both.
SLEEPY = """
import time

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        time.sleep(0.003)
        return torch.relu(x + y) * 2.0


def get_inputs():
    return [torch.randn(128, 512), torch.randn(128, 512)]


def get_init_inputs():
    return []
"""


@pytest.fixture
def sleepy(files):
    return files.problem(SLEEPY, "sleepy.py")


def test_an_honest_faster_solution_earns_two_without_the_compiled_baseline(run_eval, sleepy, honest):
    v = run_eval(sleepy, honest)
    assert v.status == "ok", v.log
    assert v.speedup_vs_eager > 2 and v.speedup_vs_compiled is None
    assert (v.reward, v.reward_schedule) == (2, "paper")
    again = run_eval(sleepy, honest, reward="milestone")
    assert (again.reward, again.reward_schedule) == (1, "milestone")


def test_a_slower_correct_solution_earns_one(run_eval, files, sleepy, sources):
    slow = sources["HONEST_ELEMENTWISE"].replace(
        "    def forward(self, x, y):\n", "    def forward(self, x, y):\n        __import__('time').sleep(0.01)\n"
    )
    v = run_eval(sleepy, files.solution(slow))
    assert v.status == "ok", v.log
    assert v.speedup_vs_eager < 1
    assert v.reward == 1


@pytest.mark.slow
def test_rewards_against_the_compiled_baseline_under_both_schedules(run_eval, sleepy, honest):
    v = run_eval(sleepy, honest, compiled_baseline=True)
    assert v.status == "ok", v.log
    assert "compiled" in v.timing, v.timing  # torch.compile did build and was timed, in the reference's jail
    assert v.compiled_ms > 2.5 and v.speedup_vs_compiled > 2
    assert v.reward == 3
    # Under the milestones the same speedups are not "clear" with a margin of 10000%: faster than both, by less
    # than the margin. (Neither schedule nor margin is part of the baselines' cache key: the baselines are reused.)
    again = run_eval(sleepy, honest, compiled_baseline=True, reward="milestone", margin=100.0)
    assert again.compiled_ms == v.compiled_ms
    assert (again.reward, again.reward_schedule) == (2, "milestone")
