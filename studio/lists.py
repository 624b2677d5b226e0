"""A user's lists: "my runs" (status, best speedup, filters, retry, delete) and their problems (delete)."""

from django import forms
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from studio.deletion import delete_problem, delete_run
from studio.models import Problem, Run
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


@login_required
def problem_list(request):
    problems = visible(Problem.objects.annotate(run_count=Count("runs")), request.user)[:200]
    return render(request, "studio/problems.html", {"problems": problems})


@login_required
@require_POST
def problem_delete(request, pk):
    delete_problem(get_object_or_404(visible(Problem.objects.all(), request.user), pk=pk))
    return redirect("problems")
