"""Runs trained outside the studio (`python -m training train`, `python -m bench.rl_pipeline` on a GPU host) brought
into it: the run folder copied under KS_TRAINING_DIR and listed as a training run with its charts, plots,
checkpoints and episodes, resumable from the staff page where its last stage is unfinished."""

import shutil
from datetime import datetime, timezone as tz
from pathlib import Path

from django.conf import settings
from django.db import transaction

from sandbox.jsonl import read_jsonl
from studio.models import TrainingRun


class RunImportError(Exception):
    """The folder is not a training run folder; the message says what it lacks."""


def _config(folder):
    """(text, RunConfig) of FOLDER/config.yaml, validated as `python -m training train` validates it."""
    from training.rl.config import ConfigError, load

    path = folder / "config.yaml"
    if not path.is_file():
        raise RunImportError(
            f"{folder} has no config.yaml: give the run folder of `python -m training train` "
            f"(it writes config.yaml, metrics.jsonl and train.log there)"
        )
    try:
        return path.read_text(encoding="utf-8"), load(path)
    except ConfigError as exc:
        raise RunImportError(f"{path} is not a run config: {exc}") from None


def _when(record):
    value = record.get("time") if record else None
    return datetime.fromtimestamp(value, tz.utc) if isinstance(value, (int, float)) else None


def import_run(folder, user, name=""):
    """A TrainingRun of FOLDER's copy under KS_TRAINING_DIR/<pk>. Done where its config's last stage has logged,
    otherwise stopped (resume goes on from the copied checkpoints); the original folder is left as it is."""
    folder = Path(folder).resolve()
    if not folder.is_dir():
        raise RunImportError(f"{folder} is not a folder: give a training run folder")
    text, config = _config(folder)
    records = read_jsonl(folder / "metrics.jsonl", skip_bad=True)
    if not records:
        raise RunImportError(f"{folder} has no metrics.jsonl records: nothing was trained there yet")
    stages = config.stages
    finished = bool(stages) and any(r.get("stage") == stages[-1] for r in records)
    with transaction.atomic():
        run = TrainingRun.objects.create(
            created_by=user,
            name=name or folder.name,
            config=text,
            device=config.episode.device,
            status=TrainingRun.Status.DONE if finished else TrainingRun.Status.STOPPED,
            error=""
            if finished
            else f"imported before its last stage ({stages[-1] if stages else '?'}) logged: resume to go on",
            current_stage=records[-1].get("stage", ""),
            last_metrics=records[-1],
            started_at=_when(records[0]),
            finished_at=_when(records[-1]),
        )
        target = Path(settings.KS_TRAINING_DIR) / str(run.pk)
        if target.exists():
            raise RunImportError(f"{target} already exists: move it away, then import again")
        try:
            shutil.copytree(folder, target, symlinks=True)
        except OSError as exc:  # the row is rolled back; no half copy is left behind
            shutil.rmtree(target, ignore_errors=True)
            raise RunImportError(f"could not copy {folder} to {target}: {exc}") from None
        run.folder = str(target)
        run.save(update_fields=["folder"])
    return run
