"""A user's lists: "my runs" and "my problems", each with status, best speedup, filters, run again and delete."""

from django import forms
from django.contrib.auth.decorators import login_required
from django.db.models import Count, FloatField, Max, OuterRef, Subquery
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from studio.deletion import delete_problem, delete_run
from studio.forms import RunForm
from studio.models import KernelVersion, Problem, Run
from studio.verdicts import best_speedup
from studio.views import start_run, visible


class RunFilterForm(forms.Form):
    status = forms.ChoiceField(choices=[("", "any status")] + list(Run.Status.choices), required=False)
    device = forms.ChoiceField(choices=[("", "any target"), ("cpu", "CPU"), ("cuda", "GPU")], required=False)
    problem = forms.CharField(
        required=False, label="problem name", widget=forms.TextInput(attrs={"placeholder": "problem name contains"})
    )


@login_required
def run_list(request):
    form = RunFilterForm(request.GET or None)
    runs = visible(Run.objects.select_related("problem", "best_version"), request.user)
    if form.is_valid():
        data = form.cleaned_data
        if data["status"]:
            runs = runs.filter(status=data["status"])
        if data["device"]:
            runs = runs.filter(device=data["device"])
        if data["problem"]:
            runs = runs.filter(problem__name__icontains=data["problem"])
    runs = list(runs[:200])
    for run in runs:
        run.best_speedup = best_speedup(run.best_version.verdict if run.best_version else None)
    return render(request, "studio/runs.html", {"runs": runs, "form": form})


@login_required
@require_POST
def run_retry(request, pk):
    """A new run with the same problem, policy, target, turns and starting version."""
    run = get_object_or_404(visible(Run.objects.select_related("problem"), request.user), pk=pk)
    again = start_run(
        request.user,
        run.problem,
        policy=run.policy,
        device=run.device,
        max_turns=run.max_turns,
        start_version=run.start_version,
    )
    return redirect("run", again.pk)


@login_required
@require_POST
def run_delete(request, pk):
    delete_run(get_object_or_404(visible(Run.objects.all(), request.user), pk=pk))
    return redirect(request.POST.get("next") or "runs")


class ProblemFilterForm(forms.Form):
    name = forms.CharField(
        required=False, label="name", widget=forms.TextInput(attrs={"placeholder": "problem name contains"})
    )
    device = RunFilterForm.base_fields["device"]
    status = forms.ChoiceField(
        choices=[("", "latest run: any"), ("none", "never run")]
        + [(value, f"latest run {label.lower()}") for value, label in Run.Status.choices],
        required=False,
    )


def best_speedups(problem_ids):
    """{problem id: the best speedup against eager (PyTorch default) of any correct version of it}, as for runs."""
    speedup = Cast(KT("verdict__speedup_vs_eager"), FloatField())
    rows = (
        KernelVersion.objects.filter(problem_id__in=problem_ids, verdict__correct=True)
        .values("problem_id")
        .annotate(best=Max(speedup))
    )
    return {row["problem_id"]: row["best"] for row in rows}


@login_required
def problem_list(request):
    form = ProblemFilterForm(request.GET or None)
    latest = Run.objects.filter(problem=OuterRef("pk")).order_by("-created_at")
    problems = visible(Problem.objects.all(), request.user).annotate(
        run_count=Count("runs"),
        latest_run=Subquery(latest.values("pk")[:1]),
        latest_status=Subquery(latest.values("status")[:1]),
    )
    if form.is_valid():
        data = form.cleaned_data
        if data["name"]:
            problems = problems.filter(name__icontains=data["name"])
        if data["device"]:
            problems = problems.filter(device=data["device"])
        if data["status"] == "none":
            problems = problems.filter(latest_run__isnull=True)
        elif data["status"]:
            problems = problems.filter(latest_status=data["status"])
    problems = list(problems[:200])
    best = best_speedups([p.pk for p in problems])
    for problem in problems:
        problem.best_speedup = best.get(problem.pk)
    return render(request, "studio/problems.html", {"problems": problems, "form": form})


@login_required
@require_POST
def problem_run_again(request, pk):
    """A new run of the problem with its latest run's policy, target and turns, or the run form's defaults."""
    problem = get_object_or_404(visible(Problem.objects.all(), request.user), pk=pk)
    last = problem.runs.order_by("-created_at").first()
    if last is not None:
        fields = {"policy": last.policy, "device": last.device, "max_turns": last.max_turns}
    else:
        fields = {"policy": RunForm.base_fields["policy"].initial, "device": problem.device}
        fields["max_turns"] = RunForm.base_fields["max_turns"].initial
    return redirect("run", start_run(request.user, problem, **fields).pk)


@login_required
@require_POST
def problem_delete(request, pk):
    delete_problem(get_object_or_404(visible(Problem.objects.all(), request.user), pk=pk))
    return redirect("problems")
