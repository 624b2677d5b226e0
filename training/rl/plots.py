"""PNG plots of a run's stability and learning curves from RUN/metrics.jsonl: importance ratios, entropy, KL and
clip fraction, rewards, correct rate and well-formed turns, value loss and explained variance, and the fine-tuning
stages' loss (`python -m training.rl.plots RUN`)."""

import argparse
import sys
from pathlib import Path

from training.rl.metrics import read

PANELS = {
    "stability": [
        ("ratio_max", "ratio max"),
        ("ratio_mean", "ratio mean"),
        ("ratio_min", "ratio min"),
        ("entropy", "entropy"),
        ("clip_frac", "clip fraction"),
        ("approx_kl", "approx. KL"),
        ("kl_ref", "KL to the reference"),
        ("explained_variance", "explained variance"),
    ],
    "rewards": [
        ("reward_mean", "mean reward"),
        ("correct_rate", "correct rate"),
        ("tool_call_rate", "well-formed turns"),
        ("value_loss", "value loss"),
        ("explained_variance", "explained variance"),
    ],
    # the fine-tuning stages' own curves (distillation, RFT, the single-turn warm-up): loss, gradient norm, data kept
    "training": [("loss", "loss"), ("grad_norm", "gradient norm"), ("kept", "trajectories kept")],
}
# Panels drawn for some stages only (PPO's and the critic's own losses are in the other panels).
PANEL_STAGES = {"training": ("distill", "rft", "single_turn")}
# The held-out learning curve: one point per evaluation, after RFT, value pre-training and every few PPO steps.
LEARNING = [
    ("correct_rate", "held-out correct rate"),
    ("reward_mean", "held-out mean reward"),
    ("tool_call_rate", "well-formed turns"),
]


def plot(run_dir, stages=("distill", "single_turn", "ppo", "value", "rft")):
    """Write RUN/plots/STAGE-PANEL.png for every stage with records; the paths written (none without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    out, written = Path(run_dir) / "plots", []
    for stage in stages:
        records = read(run_dir, stage)
        for panel, series in PANELS.items():
            if stage not in PANEL_STAGES.get(panel, (stage,)):
                continue
            present = [(key, label) for key, label in series if any(r.get(key) is not None for r in records)]
            if not present:
                continue
            fig, axes = plt.subplots(1, len(present), figsize=(3.2 * len(present), 2.8), squeeze=False)
            for ax, (key, label) in zip(axes[0], present):
                points = [(r["step"], r[key]) for r in records if r.get(key) is not None]
                ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", markersize=3)
                ax.set_title(label, fontsize=9)
                ax.set_xlabel("step", fontsize=8)
                ax.tick_params(labelsize=7)
            fig.suptitle(f"{Path(run_dir).name}: {stage}", fontsize=10)
            fig.tight_layout()
            out.mkdir(parents=True, exist_ok=True)
            path = out / f"{stage}-{panel}.png"
            fig.savefig(path, dpi=100)
            plt.close(fig)
            written.append(path)
    curve = learning_curve(run_dir, plt)
    return written + ([curve] if curve else [])


def learning_curve(run_dir, plt):
    """RUN/plots/eval-learning.png: the held-out figures of each evaluation, labelled by the stage it followed."""
    records = read(run_dir, "eval")
    present = [(key, label) for key, label in LEARNING if any(r.get(key) is not None for r in records)]
    if not present:
        return None
    names = [
        r.get("after", "") + (f" {r['ppo_steps']}" if r.get("after") == "ppo" and "ppo_steps" in r else "")
        for r in records
    ]
    fig, axes = plt.subplots(1, len(present), figsize=(3.6 * len(present), 3.0), squeeze=False)
    for ax, (key, label) in zip(axes[0], present):
        ax.plot(range(len(records)), [r.get(key) for r in records], marker="o", markersize=3)
        ax.set_xticks(range(len(records)), names, rotation=45, fontsize=7)
        ax.set_title(label, fontsize=9)
        ax.tick_params(labelsize=7)
    fig.suptitle(f"{Path(run_dir).name}: held-out learning curve", fontsize=10)
    fig.tight_layout()
    path = Path(run_dir) / "plots" / "eval-learning.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m training.rl.plots", description=__doc__)
    parser.add_argument("run", help="a run folder (the run_dir of `python -m training train`, holding metrics.jsonl)")
    args = parser.parse_args(argv)
    metrics = Path(args.run) / "metrics.jsonl"
    if not metrics.is_file():
        print(f"error: {metrics} does not exist: give the run_dir of a training run", file=sys.stderr)
        return 2
    written = plot(args.run)
    if not written:
        print(
            "error: nothing plotted: matplotlib is not installed, or the run has no records to plot yet",
            file=sys.stderr,
        )
        return 1
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
