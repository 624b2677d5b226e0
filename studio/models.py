"""The studio's records: problems, optimization runs, their event streams, kernel versions and evaluations of edits."""

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
    best_version = models.ForeignKey(
        "KernelVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    trajectory = models.JSONField(null=True, blank=True, help_text="the finished episode, for download")
    start_version = models.ForeignKey(
        "KernelVersion",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="handed_back_runs",
        help_text="the version whose files the episode starts from (handed back)",
    )
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
    author = models.CharField(max_length=150, default="agent", help_text="agent, or the username of an editor")
    human_edit = models.BooleanField(default=False, help_text="kept from the editor by a person")
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


class Evaluation(models.Model):
    """A person's edit of a version, evaluated by the sandbox on a worker; it may be kept as a new version."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="evaluations")
    base = models.ForeignKey(
        KernelVersion,
        on_delete=models.CASCADE,
        related_name="evaluations",
        help_text="the version the edit started from",
    )
    run = models.ForeignKey(
        Run, on_delete=models.CASCADE, related_name="evaluations", help_text="whose stream carries the verdict"
    )
    files = models.JSONField(default=dict, help_text="relative path -> text of the edited workspace")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED)
    verdict = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True, help_text="why no verdict was reached")
    job_id = models.CharField(max_length=64, blank=True)
    kept_version = models.OneToOneField(
        KernelVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="kept_from"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"evaluation {self.pk} of version {self.base_id}"


class StaffJob(models.Model):
    """What the admin area's jobs share: a status a worker moves along (or staff stop), the RQ job, the error and the
    times."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"
        STOPPED = "stopped"

    ACTIVE = (Status.QUEUED, Status.RUNNING)

    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED, db_index=True)
    job_id = models.CharField(max_length=64, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True
        ordering = ["-created_at"]


class BenchEvaluation(StaffJob):
    """A KernelBench evaluation of a policy or checkpoint, run by the training package into its own folder."""

    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="bench_evaluations")
    policy = models.CharField(max_length=40, default="heuristic")
    model = models.CharField(max_length=300, blank=True, help_text="model name or checkpoint path, if any")
    device = models.CharField(max_length=8, default="cpu")
    levels = models.CharField(max_length=20, default="1,2,3", help_text="comma-separated KernelBench levels")
    limit = models.PositiveIntegerField(null=True, blank=True, help_text="at most this many problems per level")
    sandbox = models.CharField(
        max_length=100,
        default="strict",
        help_text="the sandbox setting, or settings compared side by side (comma-separated)",
    )
    folder = models.CharField(max_length=500, blank=True, help_text="the evaluation's folder (results, episodes)")
    progress = models.JSONField(default=dict, help_text='{"done": n, "total": m, "correct": k}')
    metrics = models.JSONField(null=True, blank=True, help_text="the folder's metrics.json")

    def __str__(self):
        return f"KernelBench evaluation {self.pk} of {self.label}"

    @property
    def label(self):
        return f"{self.policy}{f' ({self.model})' if self.model else ''}"


class SynthesisRun(StaffJob):
    """A task-synthesis run of the training package into a dataset (JSONL) with its attempts and summary beside it."""

    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="synthesis_runs")
    count = models.PositiveIntegerField(help_text="tasks to keep")
    device = models.CharField(max_length=8, default="cuda")
    workers = models.PositiveIntegerField(default=1)
    dataset = models.CharField(max_length=500, blank=True, help_text="the dataset's JSONL path")
    summary = models.JSONField(null=True, blank=True, help_text="the dataset's summary.json when the run ended")

    def __str__(self):
        return f"synthesis run {self.pk} ({self.count} tasks on {self.device})"


class TrainingRun(StaffJob):
    """An RL training run of the training package (`python -m training train`) into its own run folder."""

    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="training_runs")
    name = models.CharField(max_length=200)
    config = models.TextField(help_text="the run's YAML config, as submitted")
    overrides = models.JSONField(default=list, blank=True, help_text="KEY=VALUE overrides (--set), in order")
    stage = models.CharField(max_length=20, blank=True, help_text="run only this stage (empty: the config's stages)")
    device = models.CharField(max_length=8, default="cpu", help_text="the config's episode.device")
    folder = models.CharField(max_length=500, blank=True, help_text="the run folder (checkpoints, metrics, logs)")
    current_stage = models.CharField(max_length=20, blank=True, help_text="the stage of the newest metrics record")
    last_metrics = models.JSONField(null=True, blank=True, help_text="the newest record of metrics.jsonl")

    def __str__(self):
        return f"training run {self.pk} ({self.name})"


class ServedCheckpoint(models.Model):
    """A training run's checkpoint exported as a servable model: a policy choice for studio runs."""

    training_run = models.ForeignKey(TrainingRun, on_delete=models.CASCADE, related_name="served")
    stage = models.CharField(max_length=20)
    step = models.PositiveIntegerField()
    path = models.CharField(max_length=500, help_text="the exported transformers folder (actor and tokenizer)")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["training_run", "stage", "step"], name="serve_once")]

    def __str__(self):
        return f"{self.training_run.name} {self.stage} step {self.step}"

    @property
    def policy(self):
        """The value a Run's policy field holds when it runs on this checkpoint."""
        return f"checkpoint:{self.pk}"
