"""The staff training page in Chromium under the studio's Content-Security-Policy: every panel chart is drawn by the
vendored uPlot over its server SVG, hovering reads a series' exact value at a step, a legend entry hides its series,
and a running run's charts take new steps from the htmx refresh without being drawn anew (a zoom kept, new panels
appear).
Screenshots: artifacts/e2e/training-charts*.png."""

import json
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import expect

from studio.testing import chromium_missing, in_studio
from studio.training_runs import metric_panels, panels_json

pytestmark = [pytest.mark.slow, pytest.mark.skipif(bool(chromium_missing()), reason=chromium_missing() or "ok")]

H100_RUN = Path(settings.BASE_DIR) / "bench" / "results" / "rl-pipeline-h100"
LINES = (H100_RUN / "metrics.jsonl").read_text().splitlines()
FIRST_RFT_STEPS = 30  # the live run starts with these; the rest of RFT, then value, PPO and eval, arrive while it runs
SEED = """
import json
from django.contrib.auth import get_user_model
from studio.models import TrainingRun
admin = get_user_model().objects.get(username={username!r})
done = TrainingRun.objects.create(created_by=admin, name="h100", config="", folder={done!r}, status="done")
live = TrainingRun.objects.create(created_by=admin, name="live", config="", folder={live!r}, status="running")
print(json.dumps({{"done": done.pk, "live": live.pk}}))
"""


def chart_count(lines):
    return sum(len(p["charts"]) for p in panels_json(metric_panels([json.loads(line) for line in lines])))


def step_at_left_edge(page, title):
    """The step the readout of chart TITLE shows with the pointer at the plot's left edge (then moved off it)."""
    box = page.locator(f'.live-chart[data-chart="{title}"] .u-over').bounding_box()
    page.mouse.move(box["x"] + 1, box["y"] + box["height"] / 2)
    step = int(legend_values(page, title)["step"])
    page.mouse.move(0, 0)
    return step


def legend_values(page, title):
    """The readout of chart TITLE: {label: value text}, the step first."""
    return page.eval_on_selector_all(
        f'.live-chart[data-chart="{title}"] .u-legend .u-series',
        "rows => Object.fromEntries(rows.map(r => [r.querySelector('.u-label').textContent, "
        "r.querySelector('.u-value').textContent]))",
    )


@pytest.fixture(scope="module")
def runs(studio, tmp_path_factory):
    live = tmp_path_factory.mktemp("live-training-run")
    (live / "metrics.jsonl").write_text("".join(line + "\n" for line in LINES[:FIRST_RFT_STEPS]))
    code = SEED.format(username=studio.username, done=str(H100_RUN), live=str(live))
    return {**json.loads(in_studio(studio, code).strip().splitlines()[-1]), "folder": live}


def test_every_panel_chart_is_drawn_by_uplot_and_reads_out_the_value_under_the_pointer(
    watched_page, studio, runs, violations, shot
):
    page = watched_page
    page.goto(f"{studio.url}/staff/training/{runs['done']}")
    charts = chart_count(LINES)
    expect(page.locator("#panels .live-chart > .uplot")).to_have_count(charts, timeout=20_000)
    assert page.locator("#panels .uplot").count() == page.locator("#panels .live-chart").count() == charts
    assert page.locator("#panels svg.chart").count() == 0  # each SVG replaced by its canvas

    # Off the plot the readout holds the latest step; over it, the step under the pointer with each series' value.
    ratios = next(
        c
        for p in panels_json(metric_panels([json.loads(x) for x in LINES]))
        for c in p["charts"]
        if c["title"] == "importance ratio"
    )
    assert legend_values(page, "importance ratio")["step"] == str(ratios["steps"][-1])
    over = page.locator('.live-chart[data-chart="importance ratio"] .u-over')
    box = over.bounding_box()
    page.mouse.move(box["x"] + 2, box["y"] + box["height"] / 2)
    readout = legend_values(page, "importance ratio")
    assert readout["step"] == str(ratios["steps"][0])
    for series in ratios["series"]:
        assert float(readout[series["name"]]) == pytest.approx(series["values"][0], rel=1e-3), series["name"]
    shot(page, "training-charts-hover")

    # A legend entry hides its series and shows it again.
    entry = page.locator('.live-chart[data-chart="importance ratio"] .u-legend .u-series').nth(3)
    entry.click()
    assert "u-off" in entry.get_attribute("class")
    entry.click()
    assert "u-off" not in entry.get_attribute("class")
    assert violations == []


def test_a_running_runs_charts_take_new_steps_from_the_refresh_and_new_panels_appear(
    watched_page, studio, runs, violations, shot
):
    page = watched_page
    page.goto(f"{studio.url}/staff/training/{runs['live']}")
    first = chart_count(LINES[:FIRST_RFT_STEPS])
    expect(page.locator("#panels .live-chart > .uplot")).to_have_count(first)
    assert legend_values(page, "reward")["step"] == str(FIRST_RFT_STEPS - 1)
    page.eval_on_selector('.live-chart[data-chart="reward"] .uplot', "u => { u.dataset.kept = 'yes'; }")
    page.eval_on_selector("#training-progress", "p => { p.dataset.old = 'yes'; }")
    # zoom in by dragging over the middle of the plot: its left edge no longer reads step 0
    box = page.locator('.live-chart[data-chart="reward"] .u-over').bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.3, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + box["height"] / 2, steps=5)
    page.mouse.up()
    zoomed_from = step_at_left_edge(page, "reward")
    assert 0 < zoomed_from < FIRST_RFT_STEPS - 1

    rft = [line for line in LINES if '"stage": "rft"' in line]
    with (runs["folder"] / "metrics.jsonl").open("a") as metrics:
        metrics.write("".join(line + "\n" for line in rft[FIRST_RFT_STEPS:]))
    expect(page.locator('.live-chart[data-chart="reward"] .u-legend .u-value').first).to_have_text(
        str(len(rft) - 1), timeout=20_000
    )
    assert page.locator("#training-progress[data-old]").count() == 0  # htmx swapped the markup in...
    assert page.locator('.live-chart[data-chart="reward"] .uplot[data-kept]').count() == 1  # ...the chart lived on
    assert step_at_left_edge(page, "reward") == zoomed_from  # with its zoom

    with (runs["folder"] / "metrics.jsonl").open("a") as metrics:
        metrics.write("".join(line + "\n" for line in LINES[len(rft) :]))
    charts = chart_count(LINES)
    expect(page.locator("#panels .live-chart > .uplot")).to_have_count(charts, timeout=20_000)
    assert page.locator("#panels .panel h3").all_text_contents() == [
        panel for panel, _ in metric_panels([json.loads(x) for x in LINES])
    ]
    assert page.locator("#panels svg.chart").count() == 0
    shot(page, "training-charts-live")
    assert violations == []
