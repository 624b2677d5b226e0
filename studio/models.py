"""The studio's records: problems, optimization runs, their event streams, kernel versions and evaluations."""
from django.conf import settings
from django.db import models


class Problem(models.Model):
    """A validated KernelBench-format module. Only problems that passed validation are ever stored."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="problems")
    name = models.CharField(max_length=200)
    source = models.TextField()
    sha256 = models.CharField(max_length=64, db_index=True)
    spec = models.JSONField(default=dict, help_text="input and output shapes and dtypes")
    device = models.CharField(max_length=8, default="cpu")
    eager_ms = models.FloatField(null=True, blank=True)
    compiled_ms = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return self.name


class Run(models.Model):
    """One optimization episode of the agent on a problem; its turns are RunEvents."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"

    FINISHED = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="runs")
    problem = models.ForeignKey(Problem, on_delete=models.CASCADE, related_name="runs")
    policy = models.CharField(max_length=40, default="heuristic")
    device = models.CharField(max_length=8, default="cpu")
    max_turns = models.PositiveIntegerField(default=60)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED, db_index=True)
    job_id = models.CharField(max_length=64, blank=True)
    error = models.TextField(blank=True)
    last_seq = models.PositiveIntegerField(default=0, help_text="sequence number of the newest event")
    best_version = models.ForeignKey("KernelVersion", null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="+")
    trajectory = models.JSONField(null=True, blank=True, help_text="the finished episode, for download")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"run {self.pk} of {self.problem}"

    @property
    def group(self):
        return f"run-{self.pk}"


class RunEvent(models.Model):
    """One event of a run (a turn, a status change, a verdict), numbered so a browser can resume after seq."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    kind = models.CharField(max_length=20)
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="one_event_per_seq")]

    def to_message(self):
        return {"seq": self.seq, "kind": self.kind, "payload": self.payload}


class KernelVersion(models.Model):
    """A solution (workspace files) at one point: written by the agent or by a person in the editor."""

    problem = models.ForeignKey(Problem, on_delete=models.CASCADE, related_name="versions")
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="versions")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children")
    author = models.CharField(max_length=20, default="agent", help_text="agent, or the username of an editor")
    files = models.JSONField(default=dict, help_text="relative path -> text of the workspace")
    verdict = models.JSONField(null=True, blank=True)
    # The pip-installable package of this version, built on a worker: {"sdist", "wheel", "notes"} (file names).
    package = models.JSONField(null=True, blank=True)
    package_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]

    @property
    def reward(self):
        return (self.verdict or {}).get("reward")

    @property
    def runtime_ms(self):
        return (self.verdict or {}).get("runtime_ms")
