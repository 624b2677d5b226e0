"""The field's metrics over episode results: correct rate, fast_p against eager and torch.compile, geometric-mean
speedups, the reward distribution, mean turns and wall time; per level and overall. Speedups are counted against the
baselines at PyTorch's defaults (eager, compiled: the reward's basis, as in the paper) and against the precision-matched
ones with TF32 allowed (eager_tf32, compiled_tf32: issue 17), which verdicts carry on CUDA since 2026-11-25.

Conventions (KernelBench's fast_p): a problem counts as faster than a baseline at p only when it is correct and
its speedup is strictly greater than p, so a tie at exactly 1.0 is not faster. Shares are over every evaluated
problem, failures included. A correct result whose baseline was not measured (torch.compile skipped or failed)
counts as not faster, is left out of the geometric mean over correct problems, and counts as 1.0 in the mean
over all; a metric with no measured baseline in its group at all is None ("not measured"), not 0: so are the
precision-matched (TF32) metrics of results from before verdicts carried those baselines, and of the CPU target.

Rewards are counted per schedule, never added across them: the paper's (-1 failed, 1 correct, 2 more than 5% faster
than eager, 3 than both; the default since 2026-11-26) and the milestones of older verdicts (-1 failed, 0 correct,
1 faster than eager, 2 than both, 3 than both by 5%; a stored verdict that names no schedule used them). An episode
without a verdict counts -1 under its group's most common schedule (of a tie, the first by name). Faster-than shares
come from the speedups (fast_p), never from reward values.
"""

import math
from collections import Counter

from sandbox.reward import DEFAULT_SCHEDULE, MEANINGS, schedule_of

BASELINES = ("eager", "compiled", "eager_tf32", "compiled_tf32")
P_VALUES = (1.0, 1.25, 1.5, 2.0, 3.0)


def geomean(values):
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def _measured(results, baseline):
    """Whether any result of the group carries BASELINE's time (failures often do: baselines come first)."""
    return any(r.verdict and r.verdict.get(f"{baseline}_ms") is not None for r in results)


def baseline_metrics(results, baseline):
    n = len(results)
    speedups = [r.speedup(baseline) for r in results]
    measured = _measured(results, baseline)
    correct_speedups = [s for s in speedups if s is not None and s > 0]
    return {
        "measured": measured,
        "fast_p": {
            str(p): (sum(s is not None and s > p for s in speedups) / n if measured else None) for p in P_VALUES
        },
        "geomean_correct": geomean(correct_speedups) if measured else None,
        "geomean_all": geomean(s if s is not None and s > 0 else 1.0 for s in speedups) if measured else None,
        "missing": sum(r.correct and s is None for r, s in zip(results, speedups)),
    }


def reward_metrics(results):
    """{schedule: {"problems", "mean", "counts"}} of the group's rewards, one entry per schedule its verdicts used."""
    used = Counter(schedule_of(r.verdict) for r in results if r.verdict)
    common = min(used, key=lambda name: (-used[name], name)) if used else DEFAULT_SCHEDULE
    groups = {}
    for r in results:
        groups.setdefault(schedule_of(r.verdict) if r.verdict else common, []).append(r.reward)
    out = {}
    for schedule, rewards in sorted(groups.items()):
        counts = Counter(rewards)
        levels = sorted(set(MEANINGS.get(schedule, {})) | set(counts))
        out[schedule] = {
            "problems": len(rewards),
            "mean": sum(rewards) / len(rewards),
            "counts": {str(k): counts.get(k, 0) for k in levels},
        }
    return out


def group_metrics(results):
    """Metrics of one group (a level, or everything) of EpisodeResults."""
    n = len(results)
    if not n:
        return {"problems": 0}
    statuses = Counter(r.verdict["status"] if r.verdict else "error" for r in results)
    out = {
        "problems": n,
        "correct": sum(r.correct for r in results),
        "correct_rate": sum(r.correct for r in results) / n,
        "errors": sum(r.verdict is None for r in results),
        "statuses": dict(sorted(statuses.items())),
        "rewards": reward_metrics(results),
        "mean_turns": sum(r.turns for r in results) / n,
        "mean_wall_s": sum(r.wall_s for r in results) / n,
        "total_wall_s": sum(r.wall_s for r in results),
    }
    for baseline in BASELINES:
        out[baseline] = baseline_metrics(results, baseline)
    return out


def compute(results):
    """{"levels": {"1": metrics, ...}, "overall": metrics} over EpisodeResults (of one arm)."""
    results = list(results)
    levels = sorted({r.level for r in results})
    return {
        "levels": {str(level): group_metrics([r for r in results if r.level == level]) for level in levels},
        "overall": group_metrics(results),
    }
