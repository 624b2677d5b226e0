"""Forms of the studio pages."""

from django import forms
from django.conf import settings


class DeviceDefault:
    """A form whose `device` starts at what this deployment can run (studio.devices): no GPU, the CPU."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not self.is_bound and "device" not in self.initial:
            from studio.devices import default_device

            self.fields["device"].initial = default_device()


class ProblemUploadForm(DeviceDefault, forms.Form):
    name = forms.CharField(max_length=200, required=False, help_text="defaults to the file's name")
    file = forms.FileField(required=False)
    code = forms.CharField(widget=forms.Textarea(attrs={"rows": 16, "spellcheck": "false"}), required=False)
    device = forms.ChoiceField(choices=[("cpu", "CPU (C++ kernels)"), ("cuda", "GPU (CUDA kernels)")])

    def clean(self):
        """Each error lands on the field it is about, so the page shows it right there."""
        data = super().clean()
        upload, code = data.get("file"), (data.get("code") or "").strip()
        if bool(upload) == bool(code):
            raise forms.ValidationError("Upload a .py file or paste the module's code (one of the two).")
        limit = _size(settings.KS_UPLOAD_LIMIT_BYTES)
        if upload:
            if upload.size > settings.KS_UPLOAD_LIMIT_BYTES:
                self.add_error("file", f"The file is {_size(upload.size)}; the limit is {limit}.")
                return data
            raw = upload.read()
            try:
                code = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                self.add_error("file", f"The file is not UTF-8 text ({exc.reason} at byte {exc.start}).")
                return data
            data["name"] = data.get("name") or upload.name.rsplit(".", 1)[0]
        elif len(code.encode()) > settings.KS_UPLOAD_LIMIT_BYTES:
            self.add_error("code", f"The code is {_size(len(code.encode()))}; the limit is {limit}.")
            return data
        data["source"] = code
        data["name"] = data.get("name") or "problem"
        return data


def _size(count):
    """A byte count for people: 52.0 MB, 1.0 MB, 900 bytes."""
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"


class RunForm(forms.Form):
    policy = forms.ChoiceField(
        choices=[
            ("heuristic", "Heuristic (built in, no model)"),
            ("openai", "Served checkpoint (OpenAI-compatible endpoint)"),
        ],
        initial="heuristic",
    )
    device = forms.ChoiceField(choices=[("cpu", "CPU"), ("cuda", "GPU")])
    max_turns = forms.IntegerField(min_value=1, max_value=500, initial=60)

    def __init__(self, *args, **kwargs):
        """The policies plus every checkpoint staff chose to serve from a training run."""
        from studio.models import ServedCheckpoint

        super().__init__(*args, **kwargs)
        served = [(c.policy, f"Checkpoint: {c}") for c in ServedCheckpoint.objects.select_related("training_run")]
        self.fields["policy"].choices = list(self.base_fields["policy"].choices) + served


class HandBackForm(forms.Form):
    """A new run of the agent that starts from a version's files (the device is the version's)."""

    policy = RunForm.base_fields["policy"]
    max_turns = forms.IntegerField(min_value=1, max_value=500, initial=20)


# Sandbox settings of `python -m training evaluate --sandbox/--compare` (training.evaluation.cli.SETTINGS, joined by +).
SANDBOX_SETTINGS = [
    ("strict", "strict (no PyTorch compute in the solution)"),
    ("relaxed", "relaxed (PyTorch compute allowed)"),
    ("strict+graph", "strict, timed by CUDA-graph replay"),
    ("relaxed+graph", "relaxed, timed by CUDA-graph replay"),
    ("strict+events", "strict, timed per call with events"),
]


class BenchEvaluationForm(DeviceDefault, forms.Form):
    """A KernelBench evaluation to launch from the staff area."""

    levels = forms.MultipleChoiceField(
        choices=[("1", "Level 1"), ("2", "Level 2"), ("3", "Level 3")],
        initial=["1", "2", "3"],
        widget=forms.CheckboxSelectMultiple,
    )
    policy = RunForm.base_fields["policy"]
    model = forms.CharField(
        max_length=300, required=False, help_text="model name or checkpoint path (for a served checkpoint)"
    )
    device = forms.ChoiceField(choices=[("cuda", "GPU"), ("cpu", "CPU")])
    limit = forms.IntegerField(min_value=1, required=False, help_text="at most this many problems per level")
    sandbox = forms.ChoiceField(
        choices=SANDBOX_SETTINGS,
        initial="strict",
        required=False,
        label="sandbox setting",
        help_text="strict when not given",
    )
    compare_with = forms.ChoiceField(
        choices=[("", "(no comparison)")] + SANDBOX_SETTINGS,
        required=False,
        help_text="run every problem under a second setting too, side by side",
    )

    def clean(self):
        data = super().clean()
        first, second = data.get("sandbox") or "strict", data.get("compare_with")
        if first and second == first:
            raise forms.ValidationError("Compare two different sandbox settings (say strict with relaxed).")
        data["settings"] = ",".join(s for s in (first, second) if s)
        return data


class SynthesisForm(DeviceDefault, forms.Form):
    """A task-synthesis run to launch from the staff area."""

    count = forms.IntegerField(min_value=1, max_value=100000, initial=100, help_text="tasks to keep")
    device = forms.ChoiceField(choices=[("cuda", "GPU"), ("cpu", "CPU")])
    workers = forms.IntegerField(min_value=1, max_value=256, initial=1, help_text="candidates probed at once")


class TaskFilterForm(forms.Form):
    """Filters of the dataset browser."""

    op_class = forms.CharField(required=False, label="operator class")
    depth = forms.IntegerField(required=False, min_value=1, max_value=5, label="fused operators")
    min_ms = forms.FloatField(required=False, min_value=0, label="eager ms from")
    max_ms = forms.FloatField(required=False, min_value=0, label="eager ms to")


class TrainingRunForm(forms.Form):
    """An RL training run to launch: a config (one of training/configs or pasted YAML), overrides and a stage."""

    name = forms.CharField(max_length=200, required=False, help_text="defaults to the config's name")
    preset = forms.ChoiceField(required=False, label="config", help_text="one of the project's configs ...")
    config = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 14, "spellcheck": "false"}),
        required=False,
        label="or YAML",
        help_text="... or a config pasted here",
    )
    overrides = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
        required=False,
        help_text="KEY=VALUE per line (--set), e.g. ppo.steps=10",
    )
    stage = forms.ChoiceField(required=False, help_text="run only this stage")

    def __init__(self, *args, **kwargs):
        from training.rl.config import STAGES

        super().__init__(*args, **kwargs)
        self.fields["preset"].choices = [("", "(pasted below)")] + [(p.name, p.name) for p in presets()]
        self.fields["stage"].choices = [("", "the config's stages")] + [(s, s) for s in STAGES]

    def clean(self):
        import yaml

        from training.rl.config import ConfigError, RunConfig, override

        data = super().clean()
        preset, text = data.get("preset"), (data.get("config") or "").strip()
        if bool(preset) == bool(text):
            raise forms.ValidationError("Choose one of the configs or paste a YAML config (one of the two).")
        if preset:
            text = (settings.KS_TRAINING_CONFIGS / preset).read_text(encoding="utf-8")
        sets = [line.strip() for line in (data.get("overrides") or "").splitlines() if line.strip()]
        try:
            config = override(RunConfig.from_json(yaml.safe_load(text)), sets)
        except yaml.YAMLError as exc:
            raise forms.ValidationError(f"The config is not valid YAML: {exc}") from None
        except ConfigError as exc:
            raise forms.ValidationError(f"The config is invalid: {exc}") from None
        data.update(
            config=text,
            overrides=sets,
            device=config.episode.device,
            name=data.get("name") or (preset.rsplit(".", 1)[0] if preset else "run"),
        )
        return data


def presets():
    """The YAML configs offered to launch from (training/configs by default)."""
    folder = settings.KS_TRAINING_CONFIGS
    return sorted(folder.glob("*.yaml")) if folder.is_dir() else []
