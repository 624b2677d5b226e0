"""Staff pages of RL training runs: launch from a config, stop, resume, the live run page (panels of grouped charts,
drawn with uPlot from the page's JSON over their server-side SVG, a chart per logged metric, the stage, the log's
tail, checkpoints, plots, recent trajectories) and "serve this checkpoint"."""

import json
import math
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.contrib import messages
from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.templatetags.static import static
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from studio import charts, jobs, queues, staff
from sandbox.jsonl import read_jsonl
from studio.forms import TrainingRunForm
from studio.models import TrainingRun
from studio.serving import ServeError, serve
from studio.staff import staff_only
from studio.vendor import static_path

LOG_LINES = 60
NOT_CHARTED = {"stage", "step", "time"}
RECENT_EPISODES = 12
NEWEST_FOLDERS = 3  # of each stage's step folders, the newest only are searched (a long run holds thousands)


def _enqueue(run, user):
    """Queue RUN's job (on `train`, or `staff-cpu` when its episodes run on the CPU); the job id saved after."""
    run.job_id = queues.enqueue(
        "training", run.device, jobs.run_training, run.pk, owner_id=user.pk, timeout=settings.KS_TRAINING_TIMEOUT
    )
    run.save(update_fields=["job_id"])


@staff_only
@require_http_methods(["GET", "POST"])
def training_list(request):
    form = TrainingRunForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        run = TrainingRun.objects.create(
            created_by=request.user,
            name=data["name"],
            config=data["config"],
            overrides=data["overrides"],
            stage=data["stage"],
            device=data["device"],
        )
        _enqueue(run, request.user)
        return redirect("training_run", run.pk)
    return render(
        request,
        "studio/staff/training_runs.html",
        {"form": form, "runs": TrainingRun.objects.select_related("created_by")[:100]},
        status=400 if request.method == "POST" else 200,
    )


# The panels a training run's page leads with: (panel, [(chart, [metric, ...])]); each chart shares one y axis, its
# series are the metrics (per stage where several stages log one). Every metric still has its own chart below.
PANELS = [
    (
        "Reward and correct rate",
        [
            ("reward", ["reward_mean", "reward_p50", "kept_reward_mean"]),
            ("rates", ["correct_rate", "kept_fraction", "tool_call_rate"]),
        ],
    ),
    (
        "PPO stability",
        [
            ("importance ratio", ["ratio_min", "ratio_mean", "ratio_max"]),
            ("clip fraction", ["clip_frac"]),
            ("KL", ["approx_kl", "kl_ref"]),
            ("entropy", ["entropy"]),
        ],
    ),
    ("Value", [("loss", ["value_loss", "train_loss"]), ("explained variance", ["explained_variance"])]),
    ("Throughput", [("tokens per second", ["tokens_per_s"]), ("seconds per step", ["rollout_s", "update_s"])]),
]


@dataclass
class PanelChart:
    """One chart of a panel: SERIES [(name, [(step, value)])] of finite values sharing one y axis; drawn on the server
    as SVG (the page without JavaScript) and in the browser with uPlot from to_json()."""

    title: str
    series: list

    def svg(self):
        return charts.multi_line_chart(self.title, self.series)

    def to_json(self):
        """{"title", "steps", "series": [{"name", "color", "values"}]}: uPlot's aligned columns, every series one
        value per step (None where it logged none; the last value where it logged a step twice)."""
        steps = sorted({step for _, points in self.series for step, _ in points})
        column = {step: i for i, step in enumerate(steps)}
        series = []
        for i, (name, points) in enumerate(self.series):
            values = [None] * len(steps)
            for step, value in points:
                values[column[step]] = value
            series.append({"name": name, "color": charts.PALETTE[i % len(charts.PALETTE)], "values": values})
        return {"title": self.title, "steps": steps, "series": series}


def _finite(points):
    return [
        (step, float(value))
        for step, value in points
        if isinstance(step, (int, float))
        and isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
    ]


def metric_panels(records):
    """[(panel, [PanelChart])]: PANELS filled from the records; a series, chart or panel nothing feeds is left out."""
    by_metric = {}
    for record in records:
        for key, value in record.items():
            if key not in NOT_CHARTED:
                by_metric.setdefault(key, {}).setdefault(record.get("stage", "?"), []).append(
                    (record.get("step", 0), value)
                )
    panels = []
    for panel, chart_specs in PANELS:
        drawn = []
        for title, metrics in chart_specs:
            series = [
                (metric if len(by_metric[metric]) == 1 else f"{stage}: {metric}", finite)
                for metric in metrics
                if metric in by_metric
                for stage, points in by_metric[metric].items()
                if (finite := _finite(points))
            ]
            if series:
                drawn.append(PanelChart(title, series))
        if drawn:
            panels.append((panel, drawn))
    return panels


def panels_json(panels):
    """The panels' charts as the page's JSON for static/js/training_charts.js: [{"panel", "charts": [...]}]."""
    return [{"panel": panel, "charts": [chart.to_json() for chart in panel_charts]} for panel, panel_charts in panels]


def metric_charts(records):
    """[(stage, [svg])]: one line chart per numeric metric of each stage, in the order they were first logged."""
    series = {}
    for record in records:
        stage = record.get("stage", "?")
        for key, value in record.items():
            if key not in NOT_CHARTED and isinstance(value, (int, float)) and not isinstance(value, bool):
                series.setdefault(stage, {}).setdefault(key, []).append((record.get("step", 0), value))
    return [
        (stage, [chart for key, points in keys.items() if (chart := charts.line_chart(key, points))])
        for stage, keys in series.items()
    ]


def _tail(path, lines=LOG_LINES):
    path = Path(path)
    if not path.is_file():
        return ""
    with path.open("rb") as f:
        f.seek(max(0, path.stat().st_size - 200 * lines))
        return "\n".join(f.read().decode("utf-8", "replace").splitlines()[-lines:])


def _plots(run):
    folder = Path(run.folder) / "plots" if run.folder else None
    return sorted(p.name for p in folder.glob("*.png")) if folder and folder.is_dir() else []


def _newest(folders, count):
    return sorted(folders, key=lambda p: p.stat().st_mtime, reverse=True)[:count]


def recent_episodes(run, limit=RECENT_EPISODES):
    """The newest episodes of the run folder's episodes/STAGE/STEP/.../trajectory.json, newest first: each
    {"path" (relative to episodes/), "stage", "step", "task", "status", "reward", "correct"} from its verdict.json."""
    root = Path(run.folder) / "episodes" if run.folder else None
    if not root or not root.is_dir():
        return []
    found = []
    for stage in (p for p in root.iterdir() if p.is_dir()):
        for step in _newest([p for p in stage.iterdir() if p.is_dir()], NEWEST_FOLDERS):
            found += step.rglob("trajectory.json")
    rows = []
    for path in _newest(found, limit):
        try:
            verdict = json.loads((path.parent / "verdict.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            verdict = {}
        relative = path.relative_to(root)
        rows.append(
            {
                "path": relative.as_posix(),
                "stage": relative.parts[0],
                "step": relative.parts[1],
                "task": path.parent.name,
                "status": verdict.get("status", "?"),
                "reward": verdict.get("reward"),
                "correct": verdict.get("correct"),
            }
        )
    return rows


def page_state(run):
    """What the run page shows, read from the run folder (the job writes it; the page only reads)."""
    from training.rl import checkpoints

    if not run.folder:
        return {
            "panels": [],
            "panels_json": [],
            "charts": [],
            "log": "",
            "checkpoints": [],
            "plots": [],
            "stage": run.stage or "all",
        }
    records = read_jsonl(Path(run.folder) / "metrics.jsonl", skip_bad=True)
    served = {(c.stage, c.step): c for c in run.served.all()}
    listing = [{**c, "served": served.get((c["stage"], c["step"]))} for c in checkpoints.listing(run.folder)]
    panels = metric_panels(records)
    return {
        "panels": panels,
        "panels_json": panels_json(panels),
        "charts": metric_charts(records),
        "log": _tail(Path(run.folder) / "train.log"),
        "checkpoints": listing,
        "plots": _plots(run),
        "records": len(records),
        "episodes": recent_episodes(run),
        "stage": records[-1].get("stage") if records else run.current_stage,
    }


@staff_only
def training_detail(request, pk):
    run = get_object_or_404(TrainingRun, pk=pk)
    if request.htmx:
        return render(request, "studio/staff/_training_progress.html", {"run": run, **page_state(run)})
    uplot = {"uplot_js": static(static_path("uplot")), "uplot_css": static(static_path("uplot", "uPlot.min.css"))}
    return render(request, "studio/staff/training_run.html", {"run": run, **uplot, **page_state(run)})


@staff_only
@require_POST
def training_stop(request, pk):
    """Cancel the queued job or stop its work horse; checkpoints are written whole, so a resume loses at most the
    steps since the last one."""
    staff.stop(get_object_or_404(TrainingRun, pk=pk), request.user)
    return redirect("training_run", pk)


@staff_only
@require_POST
def training_resume(request, pk):
    """Queue the run again on its folder: every stage goes on from its last checkpoint."""
    run = get_object_or_404(TrainingRun, pk=pk)
    if run.status in (TrainingRun.Status.STOPPED, TrainingRun.Status.FAILED):
        # The job id is cleared first: the reconciler never judges a queued run by its previous, stopped job.
        TrainingRun.objects.filter(pk=pk).update(
            status=TrainingRun.Status.QUEUED, job_id="", error="", finished_at=None
        )
        run.refresh_from_db()
        _enqueue(run, request.user)
    return redirect("training_run", pk)


@staff_only
@require_POST
def training_serve(request, pk):
    run = get_object_or_404(TrainingRun, pk=pk)
    stage, step = request.POST.get("stage", ""), request.POST.get("step", "")
    if not step.isdigit():
        messages.error(request, f"step must be a whole number, not {step!r}")
        return redirect("training_run", pk)
    try:
        served = serve(run, stage, int(step), request.user)
    except ServeError as exc:
        messages.error(request, str(exc))
        return redirect("training_run", pk)
    messages.success(request, f"{served} is now a policy choice of new runs ({served.policy})")
    return redirect("training_run", pk)


@staff_only
def training_plot(request, pk, name):
    run = get_object_or_404(TrainingRun, pk=pk)
    if name not in _plots(run):
        raise Http404(f"training run {pk} has no plot {name}")
    return FileResponse(open(Path(run.folder) / "plots" / name, "rb"), content_type="image/png")


@staff_only
def training_episode(request, pk):
    """One rollout episode of the run, read-only from its trajectory.json under the run folder's episodes/."""
    from agent.trajectory import Trajectory

    run = get_object_or_404(TrainingRun, pk=pk)
    relative = request.GET.get("path", "")
    root = (Path(run.folder) / "episodes").resolve() if run.folder else None
    path = (root / relative).resolve() if root and relative else None
    if path is None or path.name != "trajectory.json" or not path.is_relative_to(root) or not path.is_file():
        raise Http404(f"training run {pk} has no episode {relative!r}")
    try:
        trajectory = Trajectory.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, TypeError, KeyError) as exc:
        raise Http404(f"the trajectory {relative} could not be read: {exc}") from None
    return render(
        request,
        "studio/staff/episode.html",
        {
            "title": f"{path.parent.name} · Training run {run.pk}",
            "heading": path.parent.name,
            "where": relative.rsplit("/", 2)[0],
            "back_url": reverse("training_run", args=[run.pk]),
            "back_label": f"Training run #{run.pk}: {run.name}",
            "turns": [jobs.compact_turn(t) for t in trajectory.turns],
            "turn_count": len(trajectory.turns),
            "stop_reason": trajectory.stop_reason,
            "verdict": trajectory.verdict,
        },
    )
