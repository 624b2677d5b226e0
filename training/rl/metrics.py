"""What a run logs every step, to RUN/metrics.jsonl and TensorBoard event files under RUN/tensorboard/, and the
guards that stop (or warn) on the signs of collapse PPO shows on this task: an entropy surge, exploding ratios."""

import logging
import math
import time
from pathlib import Path

from sandbox.jsonl import append_jsonl, read_jsonl

log = logging.getLogger(__name__)


class TrainingCollapsed(RuntimeError):
    """A collapse guard fired with action=stop; the run was checkpointed first. The message says which signal
    and what to try (a lower learning rate, a tighter clip, more RFT or value pre-training)."""


def distribution(name, values):
    """{name_mean, name_min, name_max, name_p50} of VALUES (empty: nothing)."""
    values = sorted(float(v) for v in values if v is not None)
    if not values:
        return {}
    return {
        f"{name}_mean": sum(values) / len(values),
        f"{name}_min": values[0],
        f"{name}_max": values[-1],
        f"{name}_p50": values[len(values) // 2],
    }


def episode_summary(trajectory):
    """What the step's statistics need of one trajectory (small: it crosses processes)."""
    verdict = trajectory.verdict or {}
    return {
        "verdict": {k: verdict.get(k) for k in ("reward", "correct", "speedup_vs_eager") if k in verdict},
        "turns": len(trajectory.turns),
        # turns whose reply parsed into tool calls that all ran: whether the policy has learned the format
        "well_formed_turns": sum(
            bool(turn.tool_calls) and not any(c.error for c in turn.tool_calls) for turn in trajectory.turns
        ),
        "response_tokens": sum(len(turn.response_token_ids or []) for turn in trajectory.turns),
    }


def episode_stats(trajectories):
    """Rewards (mean and distribution), correct rate, speedups, trajectory lengths of a list of trajectories."""
    return summary_stats([episode_summary(t) for t in trajectories])


def summary_stats(summaries):
    """episode_stats of episode summaries ({"verdict": ...} alone for single-turn replies: no lengths then)."""
    out = verdict_stats([s["verdict"] for s in summaries])
    out.update(distribution("turns", [s.get("turns") for s in summaries]))
    out.update(distribution("response_tokens", [s.get("response_tokens") for s in summaries]))
    turns = sum(s.get("turns") or 0 for s in summaries if "well_formed_turns" in s)
    if turns:
        out["tool_call_rate"] = sum(s["well_formed_turns"] for s in summaries if "well_formed_turns" in s) / turns
    return out


# Update statistics that add up over processes; of the others, *_min and *_max take the extreme, the rest the mean.
SUMMED = {"policy_tokens", "sequence_tokens", "rollout_failures"}


def merge_process_stats(per_process, summed=SUMMED, episodes=True):
    """One step's statistics from every process's [(update stats, [episode summaries])]: the episodes pooled (the
    rewards, correct rate and lengths of the whole step, not of one rank; not when EPISODES is false), the update
    statistics reduced (those in SUMMED added up)."""
    merged = {}
    for key in dict.fromkeys(k for stats, _ in per_process for k in stats):
        values = [stats[key] for stats, _ in per_process if isinstance(stats.get(key), (int, float))]
        if not values:
            continue
        merged[key] = (
            sum(values)
            if key in summed
            else min(values)
            if key.endswith("_min")
            else max(values)
            if key.endswith("_max")
            else sum(values) / len(values)
        )
    if episodes:
        merged.update(summary_stats([s for _, summaries in per_process for s in summaries]))
    return merged


def step_stats(accelerator, stats, summaries):
    """STATS (this process's update) and SUMMARIES (episode_summary of each of its rollouts) as the whole step's
    statistics, the same on every process (a collective), so that the logged numbers cover all ranks and the
    guards decide alike everywhere."""
    from training.rl.distributed import gather

    return merge_process_stats(gather(accelerator, (stats, summaries)))


def verdict_stats(verdicts):
    """Rewards (mean, distribution and the share of each reward level), correct rate and speedups of VERDICTS."""
    rewards = [float(v.get("reward", -1.0)) for v in verdicts]
    out = {
        "episodes": len(verdicts),
        "correct_rate": sum(bool(v.get("correct")) for v in verdicts) / max(1, len(verdicts)),
    }
    out.update(distribution("reward", rewards))
    for value in sorted(set(rewards)):
        out[f"reward_frac_{value:g}"] = rewards.count(value) / len(rewards)
    out.update(distribution("speedup", [v.get("speedup_vs_eager") for v in verdicts if v.get("correct")]))
    return out


class Metrics:
    """Appends one JSON line per step (stage, step, wall time and the values) and mirrors scalars to TensorBoard."""

    def __init__(self, run_dir, stage):
        self.stage = stage
        self.path = Path(run_dir) / "metrics.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:  # TensorBoard is in the train extra; a bare GPU host may lack it
            log.warning("tensorboard is not installed: metrics go to %s only", self.path)
            self.writer = None
        else:
            self.writer = SummaryWriter(str(Path(run_dir) / "tensorboard" / stage))

    def log(self, step, values):
        record = {"stage": self.stage, "step": step, "time": round(time.time(), 3)}
        record.update({k: _plain(v) for k, v in values.items()})
        append_jsonl(self.path, record)
        if self.writer is not None:
            for key, value in record.items():
                if (
                    isinstance(value, (int, float))
                    and not isinstance(value, bool)
                    and key not in ("step", "time")
                    and math.isfinite(value)
                ):
                    self.writer.add_scalar(f"{self.stage}/{key}", value, step)
            self.writer.flush()
        return record

    def close(self):
        if self.writer is not None:
            self.writer.close()


def _plain(value):
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def read(run_dir, stage=None):
    """The records of RUN_DIR/metrics.jsonl (of STAGE only, when given)."""
    records = read_jsonl(Path(run_dir) / "metrics.jsonl")
    return [r for r in records if stage is None or r["stage"] == stage]


class Guards:
    """Collapse guards over PPO's statistics: the entropy against its first value, the importance ratio's extremes."""

    def __init__(self, config, first_entropy=None):
        self.config = config
        self.first_entropy = first_entropy

    def check(self, stats):
        """The guard messages STATS trip (empty: healthy). With action=stop the caller checkpoints and raises."""
        c, messages = self.config, []
        entropy = stats.get("entropy")
        if entropy is not None and self.first_entropy is None:
            self.first_entropy = entropy
        elif entropy is not None and self.first_entropy > 0 and entropy > c.entropy_surge * self.first_entropy:
            messages.append(
                f"entropy surge: {entropy:.4g} is over {c.entropy_surge}x its first value {self.first_entropy:.4g}"
            )
        ratio_max, ratio_min = stats.get("ratio_max"), stats.get("ratio_min")
        if ratio_max is not None and (ratio_max > c.ratio_max or ratio_min < 1 / c.ratio_max):
            messages.append(
                f"ratio explosion: importance ratios in [{ratio_min:.4g}, {ratio_max:.4g}], outside "
                f"[1/{c.ratio_max:g}, {c.ratio_max:g}]"
            )
        return messages

    def state(self):
        return {"first_entropy": self.first_entropy}
