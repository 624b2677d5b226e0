"""The discrete reward of a verdict: the CUDA Agent paper's Eq. 1 by default, the older milestone schedule on request.

Raw speedups are reported, never rewarded: discrete levels keep timing noise from being farmed for reward and push
a policy past each baseline rather than towards tiny gains (the paper measured that rewarding the raw ratio drops
the faster-than-compile rate from 96.8% to 60.4%).
"""

FAILURE = -1
SCHEDULES = ("paper", "milestone")
DEFAULT_SCHEDULE = "paper"
# Verdicts stored before verdicts named their schedule were all rewarded by the milestone schedule.
LEGACY_SCHEDULE = "milestone"
# Times and speedups are rounded decimals: a ratio this close to the boundary is the boundary itself.
_EPSILON = 1e-9

MEANINGS = {
    "paper": {
        -1: "failed",
        1: "correct",
        2: "more than 5% faster than eager",
        3: "more than 5% faster than eager and torch.compile",
    },
    "milestone": {
        -1: "failed",
        0: "correct",
        1: "faster than eager",
        2: "faster than eager and torch.compile",
        3: "faster than both by at least 5%",
    },
}


def _saves_more_than(speedup, margin):
    """Whether the time fell by more than MARGIN against a baseline: (t0 - t) / t0 > margin, i.e. t / t0 < 1 - margin."""
    return speedup is not None and speedup > 0 and 1.0 / speedup < 1.0 - margin - _EPSILON


def paper(correct, speedup_vs_eager, speedup_vs_compiled, margin=0.05):
    """Eq. 1: -1 failed; 3 more than MARGIN faster than both eager and torch.compile; 2 more than MARGIN faster than
    eager only; 1 otherwise (correct). A baseline that was not measured (None) is not beaten."""
    if not correct:
        return FAILURE
    if not _saves_more_than(speedup_vs_eager, margin):
        return 1
    return 3 if _saves_more_than(speedup_vs_compiled, margin) else 2


def milestone(correct, speedup_vs_eager, speedup_vs_compiled, margin=0.05):
    """-1 failure; 0 correct; 1 faster than eager; 2 faster than eager and compile; 3 both by a speedup of at least
    1 + MARGIN. The schedule of verdicts stored before 2026-11-26."""
    if not correct:
        return FAILURE
    if speedup_vs_eager is None or speedup_vs_eager <= 1.0:
        return 0
    if speedup_vs_compiled is None or speedup_vs_compiled <= 1.0:
        return 1
    if min(speedup_vs_eager, speedup_vs_compiled) >= 1.0 + margin:
        return 3
    return 2


def reward(schedule, correct, speedup_vs_eager, speedup_vs_compiled, margin=0.05):
    """The reward under SCHEDULE ('paper' or 'milestone')."""
    if schedule not in SCHEDULES:
        raise ValueError(f"reward schedule must be one of {SCHEDULES}, not {schedule!r}")
    rule = paper if schedule == "paper" else milestone
    return rule(correct, speedup_vs_eager, speedup_vs_compiled, margin)


def schedule_of(verdict):
    """The schedule a verdict (its JSON dict) was rewarded under; stored verdicts without the field used the
    milestone schedule."""
    return (verdict or {}).get("reward_schedule") or LEGACY_SCHEDULE


def meaning(schedule, value):
    """What reward VALUE says under SCHEDULE, in words ("more than 5% faster than eager")."""
    return MEANINGS.get(schedule, {}).get(value, f"reward {value}")


def next_goal(schedule, value, margin=0.05):
    """What a correct solution with reward VALUE must do to earn the next level, in words; None at the top."""
    pct = f"{100 * margin:g}%"
    goals = {
        "paper": {
            1: f"reward 2: take more than {pct} off eager's time",
            2: f"reward 3: take more than {pct} off torch.compile's time too",
        },
        "milestone": {
            0: "reward 1: be faster than eager",
            1: "reward 2: be faster than torch.compile too",
            2: f"reward 3: beat both baselines by at least {pct}",
        },
    }
    return goals.get(schedule, {}).get(value)
