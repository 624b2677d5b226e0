"""URL routes of the studio."""

from django.contrib import admin
from django.urls import include, path

from studio import benchmarks, datasets, edits, liveness, staff, training_runs, views

urlpatterns = [
    path("", views.home, name="home"),
    path("problems/new", views.problem_new, name="problem_new"),
    path("problems/validation/<str:job_id>", views.validation_status, name="validation_status"),
    path("problems/<int:pk>", views.problem_detail, name="problem"),
    path("problems/<int:pk>/runs", views.run_new, name="run_new"),
    path("runs/<int:pk>", views.run_detail, name="run"),
    path("runs/<int:pk>/cancel", views.run_cancel, name="run_cancel"),
    path("runs/<int:pk>/waiting", views.run_waiting, name="run_waiting"),
    path("runs/<int:pk>/versions.json", views.run_versions, name="run_versions"),
    path("runs/<int:pk>/trajectory.json", views.run_trajectory, name="run_trajectory"),
    path("versions/<int:pk>/edit", edits.version_edit, name="version_edit"),
    path("versions/<int:pk>/evaluations", edits.version_evaluate, name="version_evaluate"),
    path("versions/<int:pk>/handback", edits.version_handback, name="version_handback"),
    path("evaluations/<int:pk>", edits.evaluation_detail, name="evaluation"),
    path("evaluations/<int:pk>/keep", edits.evaluation_keep, name="evaluation_keep"),
    path("versions/<int:pk>/package", views.version_package, name="version_package"),
    path("versions/<int:pk>/package/<str:filename>", views.version_package_file, name="version_package_file"),
    path("jobs/<str:job_id>/worker", liveness.job_worker, name="job_worker"),
    path("healthz", views.healthz, name="healthz"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("staff/", staff.landing, name="staff"),
    path("staff/evaluations/", benchmarks.evaluation_list, name="bench_evaluations"),
    path("staff/evaluations/leaderboard", benchmarks.evaluation_leaderboard, name="bench_leaderboard"),
    path("staff/evaluations/<int:pk>", benchmarks.evaluation_detail, name="bench_evaluation"),
    path("staff/evaluations/<int:pk>/episode", benchmarks.evaluation_episode, name="bench_episode"),
    path("staff/evaluations/<int:pk>/stop", benchmarks.evaluation_stop, name="bench_stop"),
    path("staff/synthesis/", datasets.synthesis_list, name="synthesis_runs"),
    path("staff/synthesis/<int:pk>", datasets.synthesis_detail, name="synthesis_run"),
    path("staff/synthesis/<int:pk>/stop", datasets.synthesis_stop, name="synthesis_stop"),
    path("staff/synthesis/<int:pk>/tasks", datasets.synthesis_tasks, name="synthesis_tasks"),
    path("staff/synthesis/<int:pk>/tasks/<str:task_id>", datasets.synthesis_task, name="synthesis_task"),
    path("staff/synthesis/<int:pk>/tasks/<str:task_id>/use", datasets.synthesis_task_use, name="synthesis_task_use"),
    path("staff/training/", training_runs.training_list, name="training_runs"),
    path("staff/training/<int:pk>", training_runs.training_detail, name="training_run"),
    path("staff/training/<int:pk>/stop", training_runs.training_stop, name="training_stop"),
    path("staff/training/<int:pk>/resume", training_runs.training_resume, name="training_resume"),
    path("staff/training/<int:pk>/serve", training_runs.training_serve, name="training_serve"),
    path("staff/training/<int:pk>/plots/<str:name>", training_runs.training_plot, name="training_plot"),
    path("staff/training/<int:pk>/episode", training_runs.training_episode, name="training_episode"),
    # Before admin/: the admin's catch-all would otherwise swallow admin/rq/.
    path("admin/rq/", include("django_rq.urls")),
    path("admin/", admin.site.urls),
]
