"""A training run's page leads with a few panels (reward and correct rate, PPO stability, value, throughput), each a
handful of charts whose lines share an axis, drawn from the run's metrics.jsonl: as SVG by the server (the page
without JavaScript) and with the vendored uPlot from the same data, carried as JSON in the page."""

import json
import math
import re
from html import unescape
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from studio.models import TrainingRun
from studio.training_runs import metric_panels, panels_json
from studio.vendor import static_path

H100_RUN = Path(__file__).resolve().parents[2] / "bench" / "results" / "rl-pipeline-h100"


def records():
    return [json.loads(line) for line in (H100_RUN / "metrics.jsonl").read_text().splitlines() if line.strip()]


def test_the_h100_run_fills_four_panels_of_grouped_charts():
    panels = dict(metric_panels(records()))
    assert list(panels) == ["Reward and correct rate", "PPO stability", "Value", "Throughput"]
    ratio = next(str(chart.svg()) for chart in panels["PPO stability"] if chart.title == "importance ratio")
    assert 'data-series="3"' in ratio and ">ratio_max<" in ratio and ">ratio_min<" in ratio
    assert sum(len(charts) for charts in panels.values()) <= 12  # against about 70 one-metric charts


def test_a_metric_logged_by_several_stages_is_one_line_per_stage():
    rows = [{"stage": "value", "step": s, "explained_variance": 0.1 * s} for s in range(3)] + [
        {"stage": "ppo", "step": s, "explained_variance": 0.5} for s in range(2)
    ]
    [(panel, [chart])] = metric_panels(rows)
    svg = str(chart.svg())
    assert panel == "Value" and ">value: explained_variance<" in svg and ">ppo: explained_variance<" in svg


def test_no_metrics_no_panels():
    assert metric_panels([{"stage": "rft", "step": 0, "time": 1.0}]) == []


def test_the_json_aligns_every_series_on_the_steps_with_gaps_where_it_logged_nothing():
    rows = [
        {"stage": "ppo", "step": 0, "ratio_min": 0.9, "ratio_max": 1.1},
        {"stage": "ppo", "step": 2, "ratio_max": 1.3, "ratio_mean": float("nan")},
        {"stage": "ppo", "step": 1, "ratio_min": 0.8, "ratio_mean": 1.0},
    ]
    [chart] = panels_json(metric_panels(rows))[0]["charts"]
    assert chart["title"] == "importance ratio" and chart["steps"] == [0, 1, 2]
    assert [(s["name"], s["values"]) for s in chart["series"]] == [
        ("ratio_min", [0.9, 0.8, None]),
        ("ratio_mean", [None, 1.0, None]),  # NaN is no JSON number: a gap
        ("ratio_max", [1.1, None, 1.3]),
    ]
    assert len({s["color"] for s in chart["series"]}) == 3


def test_the_h100_json_holds_every_point_the_svg_draws():
    panels = metric_panels(records())
    for chart, drawn in zip(
        (c for _, charts in panels for c in charts), (c for p in panels_json(panels) for c in p["charts"])
    ):
        assert drawn["title"] == chart.title and len(drawn["series"]) == int(
            re.search(r'data-series="(\d+)"', str(chart.svg())).group(1)
        )
        for (name, points), series in zip(chart.series, drawn["series"]):
            assert series["name"] == name and all(v is None or math.isfinite(v) for v in series["values"])
            assert sum(v is not None for v in series["values"]) == len({step for step, _ in points})


@pytest.mark.django_db
def test_the_page_carries_the_panels_data_and_the_vendored_uplot(client, tmp_path):
    admin = get_user_model().objects.create_user("root", password="pw", is_staff=True)
    client.force_login(admin)
    run = TrainingRun.objects.create(created_by=admin, name="h100", config="", folder=str(H100_RUN), status="done")
    page = client.get(f"/staff/training/{run.pk}").content.decode()
    assert f'<script src="/static/{static_path("uplot")}" defer></script>' in page
    assert f'<link rel="stylesheet" href="/static/{static_path("uplot", "uPlot.min.css")}">' in page
    assert '<script src="/static/js/training_charts.js" defer></script>' in page
    data = json.loads(
        unescape(re.search(r'<script id="training-panels" type="application/json">(.*?)</script>', page, re.S)[1])
    )
    assert data == panels_json(metric_panels(records()))
    titles = re.findall(r'<div class="live-chart" data-chart="([^"]+)"><svg class="chart multi"', page)
    assert titles == [c["title"] for p in data for c in p["charts"]]  # each chart's SVG until uPlot draws it

    # the htmx refresh brings the data again, without the scripts (they live on in the page)
    partial = client.get(f"/staff/training/{run.pk}", headers={"HX-Request": "true"}).content.decode()
    assert 'id="training-panels"' in partial and "uPlot" not in partial and "<script src" not in partial
