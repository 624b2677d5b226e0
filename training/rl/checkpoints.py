"""Checkpoints of every stage under RUN/checkpoints/STAGE/step-N/ (actor/, critic/ as transformers folders,
optimizer states, state.json), so each stage resumes from its last one and each later stage starts from the
models an earlier one left; listed and exported (a servable actor with the run's tokenizer) without torch, for the
studio's web process."""

import json
import random
import shutil
from pathlib import Path

KEEP = 2  # checkpoints kept per stage


def stage_dir(run_dir, stage):
    return Path(run_dir) / "checkpoints" / stage


def latest(run_dir, stage):
    """The newest complete checkpoint folder of STAGE, or None."""
    folders = sorted(
        (p for p in stage_dir(run_dir, stage).glob("step-*") if (p / "state.json").is_file()),
        key=lambda p: int(p.name.split("-")[1]),
    )
    return folders[-1] if folders else None


def state(folder):
    return json.loads((Path(folder) / "state.json").read_text())


def model_from(run_dir, kind, stages):
    """The newest KIND ('actor' or 'critic') folder left by STAGES, the later stages first, or None."""
    for stage in reversed(stages):
        folder = latest(run_dir, stage)
        if folder is not None and (folder / kind).is_dir():
            return folder / kind
    return None


def save(run_dir, stage, step, accelerator, models, optimizers, extra):
    """Write a checkpoint of MODELS ({'actor': m, 'critic': m}) and OPTIMIZERS after STEP; EXTRA goes into
    state.json. Written to a temporary folder then renamed: a crash never leaves a half checkpoint as latest."""
    folder = stage_dir(run_dir, stage) / f"step-{step}"
    tmp = folder.with_name(folder.name + ".tmp")
    states = {name: accelerator.get_state_dict(model) for name, model in models.items()}
    if accelerator.is_main_process:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for name, model in models.items():
            accelerator.unwrap_model(model).save_pretrained(tmp / name, state_dict=states[name])
        import torch

        torch.save({name: opt.state_dict() for name, opt in optimizers.items()}, tmp / "optimizer.pt")
        rng = {"python": random.getstate(), "torch": torch.get_rng_state().tolist()}
        (tmp / "state.json").write_text(json.dumps({"stage": stage, "step": step, **extra, "rng": _jsonable(rng)}))
        shutil.rmtree(folder, ignore_errors=True)
        tmp.rename(folder)
        for old in sorted(stage_dir(run_dir, stage).glob("step-*"), key=lambda p: int(p.name.split("-")[1]))[:-KEEP]:
            shutil.rmtree(old, ignore_errors=True)
    accelerator.wait_for_everyone()
    return folder


def restore_optimizers(folder, optimizers):
    import torch

    path = Path(folder) / "optimizer.pt"
    if path.is_file():
        saved = torch.load(path, weights_only=False)
        for name, opt in optimizers.items():
            if name in saved:
                opt.load_state_dict(saved[name])


def restore_rng(folder):
    import torch

    rng = state(folder).get("rng")
    if rng:
        python = rng["python"]
        random.setstate((python[0], tuple(python[1]), python[2]))
        torch.set_rng_state(torch.tensor(rng["torch"], dtype=torch.uint8))


def listing(run_dir):
    """Every complete checkpoint of the run, stage by stage in pipeline order then by step:
    [{"stage", "step", "path", "models": ["actor", "critic"], "state": {...} without the random states}]."""
    from training.rl.config import STAGES

    out = []
    for stage in STAGES:
        folders = [p for p in stage_dir(run_dir, stage).glob("step-*") if (p / "state.json").is_file()]
        for folder in sorted(folders, key=lambda p: int(p.name.split("-")[1])):
            info = {k: v for k, v in state(folder).items() if k != "rng"}
            out.append(
                {
                    "stage": stage,
                    "step": info.get("step"),
                    "path": str(folder),
                    "state": info,
                    "models": [kind for kind in ("actor", "critic") if (folder / kind).is_dir()],
                }
            )
    return out


TOKENIZER_FILES = (
    "tokenizer*",
    "special_tokens_map.json",
    "added_tokens.json",
    "chat_template*",
    "vocab*",
    "merges.txt",
)


class ExportError(ValueError):
    """The checkpoint cannot be exported; the message says what is missing."""


def export(run_dir, folder, out):
    """A servable transformers folder OUT (what the transformers policy, vLLM or agent.serve loads) from the actor
    of checkpoint FOLDER and the run's tokenizer. Files are hard-linked where the file system allows: checkpoints
    rotate (KEEP), an export stays."""
    import os
    import yaml

    run_dir, folder, out = Path(run_dir), Path(folder), Path(out)
    actor = folder / "actor"
    if not (actor / "config.json").is_file():
        raise ExportError(
            f"{folder} holds no actor (a value pre-training checkpoint has only a critic): "
            f"serve a checkpoint of single_turn, rft or ppo"
        )
    recorded = run_dir / "config.yaml"
    model_path = (
        ((yaml.safe_load(recorded.read_text()) or {}).get("model") or {}).get("path") if recorded.is_file() else None
    )
    base = Path(model_path) if model_path else run_dir / "base"
    tokenizer = [p for pattern in TOKENIZER_FILES for p in base.glob(pattern) if p.is_file()]
    if not tokenizer:
        raise ExportError(f"no tokenizer in {base}: the run's base model folder is gone")
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for source in [p for p in actor.iterdir() if p.is_file()] + tokenizer:
        try:
            os.link(source, tmp / source.name)
        except OSError:
            shutil.copy2(source, tmp / source.name)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


def _jsonable(value):
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    return value
