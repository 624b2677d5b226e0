"""Served checkpoints: a training run's checkpoint exported as a model folder, and the policy a studio run gets
when it chooses one (the transformers policy on that folder, or the configured endpoint when one is set)."""

from pathlib import Path

from django.conf import settings

from studio.models import ServedCheckpoint

PREFIX = "checkpoint:"


class ServeError(ValueError):
    """The checkpoint cannot be served; the message says why and what to choose instead."""


def serve(training_run, stage, step, user):
    """Export the run's checkpoint STAGE/step-STEP (the training package writes the folder) and offer it as a
    policy: the ServedCheckpoint, the same one when it is served already."""
    from training.rl import checkpoints

    existing = ServedCheckpoint.objects.filter(training_run=training_run, stage=stage, step=step).first()
    if existing is not None and Path(existing.path).is_dir():
        return existing
    chosen = (
        next((c for c in checkpoints.listing(training_run.folder) if c["stage"] == stage and c["step"] == step), None)
        if training_run.folder
        else None
    )
    if chosen is None:
        raise ServeError(
            f"training run {training_run.pk} has no checkpoint {stage}/step-{step} (any more: only the "
            f"newest {checkpoints.KEEP} of each stage are kept)"
        )
    out = settings.KS_TRAINING_DIR / "served" / f"{training_run.pk}-{stage}-step-{step}"
    try:
        checkpoints.export(training_run.folder, chosen["path"], out)
    except checkpoints.ExportError as exc:
        raise ServeError(str(exc)) from None
    if existing is not None:
        return existing
    return ServedCheckpoint.objects.create(
        training_run=training_run, stage=stage, step=step, path=str(out), created_by=user
    )


def policy_for(name):
    """(back-end, options) for a Run's policy NAME: a served checkpoint's, or NAME with the configured options."""
    from agent.policies import PolicyUnavailable

    if not name.startswith(PREFIX):
        return name, settings.KS_POLICY_OPTIONS
    checkpoint = (
        ServedCheckpoint.objects.filter(pk=name[len(PREFIX) :]).first() if name[len(PREFIX) :].isdigit() else None
    )
    if checkpoint is None:
        raise PolicyUnavailable(f"the served checkpoint {name} was removed: start the run with another policy")
    if settings.KS_POLICY_ENDPOINT_SET:
        return "openai", settings.KS_POLICY_OPTIONS
    return "transformers", {"model": checkpoint.path}
