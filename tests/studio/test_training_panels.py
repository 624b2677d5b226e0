"""A training run's page leads with a few panels (reward and correct rate, PPO stability, value, throughput), each a
handful of charts whose lines share an axis, drawn from the run's metrics.jsonl."""

import json
from pathlib import Path

from studio.training_runs import metric_panels

H100_RUN = Path(__file__).resolve().parents[2] / "bench" / "results" / "rl-pipeline-h100" / "metrics.jsonl"


def records():
    return [json.loads(line) for line in H100_RUN.read_text().splitlines() if line.strip()]


def test_the_h100_run_fills_four_panels_of_grouped_charts():
    panels = dict(metric_panels(records()))
    assert list(panels) == ["Reward and correct rate", "PPO stability", "Value", "Throughput"]
    ratio = next(str(svg) for svg in panels["PPO stability"] if 'aria-label="importance ratio"' in str(svg))
    assert 'data-series="3"' in ratio and ">ratio_max<" in ratio and ">ratio_min<" in ratio
    assert sum(len(charts) for charts in panels.values()) <= 12  # against about 70 one-metric charts


def test_a_metric_logged_by_several_stages_is_one_line_per_stage():
    rows = [{"stage": "value", "step": s, "explained_variance": 0.1 * s} for s in range(3)] + [
        {"stage": "ppo", "step": s, "explained_variance": 0.5} for s in range(2)
    ]
    [(panel, [svg])] = metric_panels(rows)
    assert panel == "Value" and ">value: explained_variance<" in str(svg) and ">ppo: explained_variance<" in str(svg)


def test_no_metrics_no_panels():
    assert metric_panels([{"stage": "rft", "step": 0, "time": 1.0}]) == []
