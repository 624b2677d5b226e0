"""The discrete milestone reward of CUDA Agent: raw speedups are reported, never rewarded."""

FAILURE = -1
CORRECT = 0
BEATS_EAGER = 1
BEATS_BOTH = 2
CLEARLY_BEATS_BOTH = 3


def milestone(correct, speedup_vs_eager, speedup_vs_compiled, margin=0.05):
    """-1 failure; 0 correct; 1 faster than eager; 2 faster than eager and compile; 3 both by `margin`.

    Discrete milestones, not the ratio itself, so that noise in timing cannot be farmed for reward and
    a policy is pushed past each baseline rather than towards tiny gains.
    """
    if not correct:
        return FAILURE
    if speedup_vs_eager is None or speedup_vs_eager <= 1.0:
        return CORRECT
    if speedup_vs_compiled is None or speedup_vs_compiled <= 1.0:
        return BEATS_EAGER
    if min(speedup_vs_eager, speedup_vs_compiled) >= 1.0 + margin:
        return CLEARLY_BEATS_BOTH
    return BEATS_BOTH
