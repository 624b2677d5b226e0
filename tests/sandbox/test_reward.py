"""The milestone reward: -1 failure; 0 correct; 1 faster than eager; 2 faster than eager and torch.compile;
3 faster than both by the margin (5% by default). Unit tests of the schedule, then evaluations that earn each."""
import itertools

import pytest

from sandbox.reward import (
    BEATS_BOTH,
    BEATS_EAGER,
    CLEARLY_BEATS_BOTH,
    CORRECT,
    FAILURE,
    milestone,
)


def test_the_milestones_are_minus_one_to_three():
    assert (FAILURE, CORRECT, BEATS_EAGER, BEATS_BOTH, CLEARLY_BEATS_BOTH) == (-1, 0, 1, 2, 3)


@pytest.mark.parametrize("eager, compiled", [(None, None), (0.5, 0.5), (10.0, 10.0), (1.0, 1.0)])
def test_any_failure_is_minus_one_whatever_the_speed(eager, compiled):
    assert milestone(False, eager, compiled) == FAILURE


@pytest.mark.parametrize("eager, compiled", [(None, None), (0.3, None), (0.99, 5.0), (1.0, 5.0), (1.0, None)])
def test_correct_but_not_faster_than_eager_is_zero(eager, compiled):
    # A tie (speedup exactly 1.0) is not faster.
    assert milestone(True, eager, compiled) == CORRECT


@pytest.mark.parametrize("eager, compiled", [(1.0001, None), (1.5, 0.5), (1.5, 1.0), (20.0, 0.99)])
def test_faster_than_eager_only_is_one(eager, compiled):
    assert milestone(True, eager, compiled) == BEATS_EAGER


@pytest.mark.parametrize("eager, compiled", [(1.01, 1.01), (1.049, 3.0), (3.0, 1.049), (1.0001, 1.0001)])
def test_faster_than_both_within_the_margin_is_two(eager, compiled):
    assert milestone(True, eager, compiled) == BEATS_BOTH


@pytest.mark.parametrize("eager, compiled", [(1.05, 1.05), (1.05, 7.0), (2.0, 1.06), (100.0, 100.0)])
def test_faster_than_both_by_the_margin_is_three(eager, compiled):
    # The margin is inclusive: exactly 1 + margin earns the top milestone.
    assert milestone(True, eager, compiled) == CLEARLY_BEATS_BOTH


def test_the_margin_is_a_parameter():
    assert milestone(True, 1.2, 1.2, margin=0.25) == BEATS_BOTH
    assert milestone(True, 1.3, 1.3, margin=0.25) == CLEARLY_BEATS_BOTH
    assert milestone(True, 1.001, 1.001, margin=0.0) == CLEARLY_BEATS_BOTH
    assert milestone(True, 1.2, 1.2, margin=10.0) == BEATS_BOTH


def test_the_reward_never_grows_with_the_raw_ratio_beyond_the_milestones():
    speeds = [None, 0.5, 1.0, 1.02, 1.05, 2.0, 1000.0]
    for correct, eager, compiled in itertools.product([True, False], speeds, speeds):
        reward = milestone(correct, eager, compiled)
        assert reward in (-1, 0, 1, 2, 3)
        assert isinstance(reward, int)


def test_the_reward_is_monotonic_in_each_speedup():
    speeds = [0.5, 1.0, 1.02, 1.05, 2.0]
    for eager, compiled in itertools.product(speeds, speeds):
        for faster in speeds:
            if faster >= eager:
                assert milestone(True, faster, compiled) >= milestone(True, eager, compiled)
            if faster >= compiled:
                assert milestone(True, eager, faster) >= milestone(True, eager, compiled)


# -- evaluations that earn each milestone ------------------------------------------------------------------
# A problem whose reference sleeps 3 ms per call (torch.compile cannot remove that): an honest solution is
# clearly faster than both baselines, one that sleeps longer is slower than both.
SLEEPY = '''
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
'''


@pytest.fixture
def sleepy(files):
    return files.problem(SLEEPY, "sleepy.py")


def test_an_honest_faster_solution_earns_one_without_the_compiled_baseline(run_eval, sleepy, honest):
    v = run_eval(sleepy, honest)
    assert v.status == "ok", v.log
    assert v.speedup_vs_eager > 2 and v.speedup_vs_compiled is None
    assert v.reward == 1


def test_a_slower_correct_solution_earns_zero(run_eval, files, sleepy, sources):
    slow = sources["HONEST_ELEMENTWISE"].replace("    def forward(self, x, y):\n",
                                                   "    def forward(self, x, y):\n        __import__('time').sleep(0.01)\n")
    v = run_eval(sleepy, files.solution(slow))
    assert v.status == "ok", v.log
    assert v.speedup_vs_eager < 1
    assert v.reward == 0


@pytest.mark.slow
def test_rewards_two_and_three_against_the_compiled_baseline(run_eval, sleepy, honest):
    v = run_eval(sleepy, honest, compiled_baseline=True)
    assert v.status == "ok", v.log
    assert "compiled" in v.timing, v.timing  # torch.compile did build and was timed, in the reference's jail
    assert v.compiled_ms > 2.5 and v.speedup_vs_compiled > 2
    assert v.reward == 3
    # The same speedups are not "clear" under a margin of 10000%: faster than both, by less than the margin.
    # (margin is not part of the baselines' cache key: the baselines are reused.)
    again = run_eval(sleepy, honest, compiled_baseline=True, margin=100.0)
    assert again.compiled_ms == v.compiled_ms
    assert again.reward == 2
