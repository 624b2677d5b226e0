"""The admin site of the studio, where research engineers manage runs and data."""

from django.contrib import admin

admin.site.site_header = "Kernel Studio admin"
admin.site.site_title = "Kernel Studio"

from studio.models import (  # noqa: E402 (after the site's titles)
    BenchEvaluation,
    Evaluation,
    KernelVersion,
    Problem,
    Run,
    RunEvent,
    ServedCheckpoint,
    SynthesisRun,
    TrainingRun,
)


class StaffViewable(admin.ModelAdmin):
    """Every staff user may look (the staff area sends them here); changing and deleting still take Django's
    permissions, which superusers have."""

    def has_module_permission(self, request):
        return request.user.is_active and request.user.is_staff

    def has_view_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_staff


@admin.register(Problem)
class ProblemAdmin(StaffViewable):
    list_display = ("pk", "name", "device", "owner", "eager_ms", "compiled_ms", "created_at")
    list_filter = ("device",)
    search_fields = ("name", "owner__username", "sha256")


@admin.register(Run)
class RunAdmin(StaffViewable):
    list_display = ("pk", "problem", "owner", "policy", "device", "status", "last_seq", "created_at", "finished_at")
    list_filter = ("status", "device", "policy")
    search_fields = ("problem__name", "owner__username", "job_id")
    raw_id_fields = ("problem", "best_version", "start_version")


@admin.register(RunEvent)
class RunEventAdmin(StaffViewable):
    list_display = ("pk", "run", "seq", "kind", "created_at")
    list_filter = ("kind",)
    raw_id_fields = ("run",)


@admin.register(KernelVersion)
class KernelVersionAdmin(StaffViewable):
    list_display = ("pk", "problem", "run", "author", "human_edit", "reward", "runtime_ms", "created_at")
    list_filter = ("human_edit",)
    search_fields = ("problem__name", "author")
    raw_id_fields = ("problem", "run", "parent")


@admin.register(Evaluation)
class EvaluationAdmin(StaffViewable):
    list_display = ("pk", "base", "run", "owner", "status", "created_at")
    list_filter = ("status",)
    raw_id_fields = ("base", "run", "kept_version")


@admin.register(SynthesisRun)
class SynthesisRunAdmin(StaffViewable):
    list_display = ("pk", "count", "device", "workers", "status", "created_by", "created_at")
    list_filter = ("status", "device")


@admin.register(BenchEvaluation)
class BenchEvaluationAdmin(StaffViewable):
    list_display = ("pk", "policy", "model", "device", "levels", "status", "created_by", "created_at")
    list_filter = ("status", "device", "policy")


@admin.register(TrainingRun)
class TrainingRunAdmin(StaffViewable):
    list_display = ("pk", "name", "stage", "device", "status", "current_stage", "created_by", "created_at")
    list_filter = ("status", "device")


@admin.register(ServedCheckpoint)
class ServedCheckpointAdmin(StaffViewable):
    list_display = ("pk", "training_run", "stage", "step", "path", "created_by", "created_at")
