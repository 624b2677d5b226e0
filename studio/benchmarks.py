"""Staff pages of KernelBench evaluations: launch, progress (or the place in its queue), stop, the leaderboard and the
per-problem drill-down."""

from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from studio import jobs, queues, staff
from studio.forms import BenchEvaluationForm
from studio.models import BenchEvaluation
from studio.staff import staff_only

# (column, label, how to read it from one level's metrics, kind): the headline metrics of the field.
COLUMNS = [
    ("correct_rate", "correct", lambda m: m.get("correct_rate"), "pct"),
    ("fast_1_eager", "fast_1 vs eager", lambda m: _fast_1(m, "eager"), "pct"),
    ("fast_1_compiled", "fast_1 vs compile", lambda m: _fast_1(m, "compiled"), "pct"),
    ("geomean_eager", "geomean vs eager (correct)", lambda m: (m.get("eager") or {}).get("geomean_correct"), "x"),
    (
        "geomean_compiled",
        "geomean vs compile (correct)",
        lambda m: (m.get("compiled") or {}).get("geomean_correct"),
        "x",
    ),
]


def _fast_1(level_metrics, baseline):
    return ((level_metrics.get(baseline) or {}).get("fast_p") or {}).get("1.0")


def _cell(value, kind):
    if value is None:
        return "—"
    return f"{100 * value:.1f}%" if kind == "pct" else f"{value:.2f}x"


def leaderboard(evaluations):
    """{level: [row]} with one row per (evaluation, sandbox setting), then the paper's reference row per level."""
    from training.evaluation.report import PAPER

    tables = {}
    for evaluation in evaluations:
        for arm, data in (evaluation.metrics or {}).get("arms", {}).items():
            scopes = {**{f"level {lv}": m for lv, m in data.get("levels", {}).items()}, "overall": data.get("overall")}
            for scope, m in scopes.items():
                if not m or not m.get("problems"):
                    continue
                tables.setdefault(scope, []).append(
                    {
                        "evaluation": evaluation,
                        "arm": arm,
                        "problems": m["problems"],
                        "reference": False,
                        "cells": [_cell(read(m), kind) for _, _, read, kind in COLUMNS],
                    }
                )
    paper = {**{f"level {lv}": m for lv, m in PAPER["levels"].items()}, "overall": PAPER["overall"]}
    for scope, m in paper.items():
        tables.setdefault(scope, []).append(
            {
                "label": PAPER["label"],
                "reference": True,
                "problems": None,
                "cells": [_cell(m.get(key), kind) for key, _, _, kind in COLUMNS],
            }
        )
    order = sorted((s for s in tables if s != "overall")) + ["overall"]
    return [(scope, tables[scope]) for scope in order]


@staff_only
@require_http_methods(["GET", "POST"])
def evaluation_list(request):
    form = BenchEvaluationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        evaluation = BenchEvaluation.objects.create(
            created_by=request.user,
            policy=data["policy"],
            model=data["model"].strip(),
            device=data["device"],
            levels=",".join(sorted(data["levels"])),
            limit=data["limit"],
            sandbox=data["settings"],
        )
        evaluation.job_id = queues.enqueue(
            "evaluation",
            evaluation.device,
            jobs.run_bench_evaluation,
            evaluation.pk,
            owner_id=request.user.pk,
            timeout=settings.KS_EVALUATION_TIMEOUT,
        )
        evaluation.save(update_fields=["job_id"])
        return redirect("bench_evaluation", evaluation.pk)
    status = 400 if request.method == "POST" else 200
    return render(
        request,
        "studio/staff/evaluations.html",
        {"form": form, "evaluations": BenchEvaluation.objects.select_related("created_by")[:100]},
        status=status,
    )


@staff_only
def evaluation_leaderboard(request):
    done = BenchEvaluation.objects.filter(status=BenchEvaluation.Status.DONE).exclude(metrics=None)
    return render(
        request,
        "studio/staff/leaderboard.html",
        {"tables": leaderboard(done.order_by("created_at")), "columns": [c[1] for c in COLUMNS]},
    )


@dataclass
class Progress:
    """Where a running evaluation stands: problems done of all, the one it is on, time spent and time left."""

    done: int
    total: int
    correct: int
    current: str
    elapsed_s: float | None
    eta_s: float | None

    @property
    def percent(self):
        return round(100 * self.done / self.total) if self.total else 0


def progress_of(evaluation, now=None):
    """The Progress of EVALUATION; the time left extrapolates the pace so far (None before the first result)."""
    stored = evaluation.progress or {}
    done, total = stored.get("done", 0), stored.get("total", 0)
    end = evaluation.finished_at or now or timezone.now()
    elapsed = (end - evaluation.started_at).total_seconds() if evaluation.started_at else None
    running = evaluation.status == BenchEvaluation.Status.RUNNING
    eta = elapsed / done * (total - done) if running and elapsed is not None and done and total > done else None
    return Progress(done, total, stored.get("correct", 0), stored.get("current", "") if running else "", elapsed, eta)


def _results(evaluation):
    from training.evaluation.results import ResultsFile

    if not evaluation.folder:
        return []
    results = ResultsFile(Path(evaluation.folder) / "results.jsonl")
    return (
        sorted(results.read().values(), key=lambda r: (r.arm, r.level, r.problem_id)) if results.path.exists() else []
    )


@staff_only
def evaluation_detail(request, pk):
    evaluation = get_object_or_404(BenchEvaluation, pk=pk)
    template = "studio/staff/_evaluation_progress.html" if request.htmx else "studio/staff/evaluation.html"
    waiting = queues.waiting(evaluation.job_id) if evaluation.status == BenchEvaluation.Status.QUEUED else None
    return render(
        request,
        template,
        {
            "evaluation": evaluation,
            "results": _results(evaluation),
            "waiting": waiting,
            "progress": progress_of(evaluation),
        },
    )


@staff_only
@require_POST
def evaluation_stop(request, pk):
    """Stop the evaluation: no process or scratch folder of it is left; the results it stored stay."""
    staff.stop(get_object_or_404(BenchEvaluation, pk=pk), request.user)
    return redirect("bench_evaluation", pk)


@staff_only
def evaluation_episode(request, pk):
    """One problem's episode: its stored trajectory.json, turn by turn, read-only."""
    import json

    from agent.trajectory import Trajectory

    evaluation = get_object_or_404(BenchEvaluation, pk=pk)
    arm, key = request.GET.get("arm", ""), request.GET.get("key", "")
    result = next((r for r in _results(evaluation) if r.arm == arm and r.key == key), None)
    if result is None or not result.trajectory:
        raise Http404(f"evaluation {pk} has no episode {arm}/{key}")
    folder = Path(evaluation.folder).resolve()
    path = (folder / result.trajectory).resolve()
    if not path.is_relative_to(folder) or not path.is_file():
        raise Http404(f"the trajectory of {arm}/{key} is not in the evaluation's folder")
    trajectory = Trajectory.from_json(json.loads(path.read_text(encoding="utf-8")))
    turns = [jobs.compact_turn(turn) for turn in trajectory.turns]
    return render(
        request,
        "studio/staff/episode.html",
        {
            "title": f"{result.key} · Evaluation {evaluation.pk}",
            "heading": result.key,
            "where": result.arm,
            "back_url": reverse("bench_evaluation", args=[evaluation.pk]),
            "back_label": f"Evaluation #{evaluation.pk} · {evaluation.label}",
            "turns": turns,
            "turn_count": result.turns,
            "stop_reason": result.stop_reason,
            "verdict": trajectory.verdict,
        },
    )
