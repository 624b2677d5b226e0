"""The admin site of the studio, where research engineers manage runs and data."""

from django.contrib import admin

admin.site.site_header = "Kernel Studio admin"
admin.site.site_title = "Kernel Studio"

from studio.models import BenchEvaluation, ServedCheckpoint, TrainingRun  # noqa: E402 (after the site's titles)


@admin.register(BenchEvaluation)
class BenchEvaluationAdmin(admin.ModelAdmin):
    list_display = ("pk", "policy", "model", "device", "levels", "status", "created_by", "created_at")
    list_filter = ("status", "device", "policy")


@admin.register(TrainingRun)
class TrainingRunAdmin(admin.ModelAdmin):
    list_display = ("pk", "name", "stage", "device", "status", "current_stage", "created_by", "created_at")
    list_filter = ("status", "device")


@admin.register(ServedCheckpoint)
class ServedCheckpointAdmin(admin.ModelAdmin):
    list_display = ("pk", "training_run", "stage", "step", "path", "created_by", "created_at")
