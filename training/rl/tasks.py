"""The run's tasks: KernelBench-format problems from a JSONL (problems.jsonl rows of {"name", "code"}, a
synthesized dataset's rows of {"task_id", "name", "source"}, or a data build's tasks.jsonl whose rows carry their
split) or a folder of .py files, written under RUN/tasks/ and split once into training and held-out sets."""

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

from sandbox.jsonl import JsonlError, iter_jsonl
from sandbox.problems_file import ProblemsError, checked


class TaskError(ValueError):
    """The task source is missing, malformed or empty; the message says what to fix."""


@dataclass
class Task:
    name: str
    path: str

    @property
    def source(self):
        return Path(self.path).read_text()


def read_rows(source):
    """The rows of SOURCE: a folder of .py files, or a JSONL whose rows are KernelBench problems (checked as the
    one problems.jsonl reader checks them), synthesized tasks or a data build's tasks."""
    path = Path(source)
    if path.is_dir():
        return [{"name": p.stem, "code": p.read_text()} for p in sorted(path.glob("*.py"))]
    if not path.is_file():
        raise TaskError(f"tasks.source {path} does not exist: give a JSONL of problems or a folder of .py files")
    rows = []
    try:
        for number, row in iter_jsonl(path, appending=False):
            if isinstance(row, dict) and "problem_id" in row:  # a problems.jsonl row (level, problem_id, name, code)
                checked(row, f"{path}:{number}")
            if isinstance(row, dict) and "code" not in row and isinstance(row.get("source"), str):
                row = {**row, "code": row["source"]}  # a synthesized task (training/synthesis/dataset.py: TaskRecord)
            if not isinstance(row, dict) or not isinstance(row.get("code"), str) or not row.get("name"):
                raise TaskError(
                    f'{path}:{number} needs a "name" and the problem\'s "code" (or a synthesized task\'s "source")'
                )
            rows.append(row)
    except (JsonlError, ProblemsError) as exc:
        raise TaskError(str(exc)) from None
    return rows


def _unique(name, row, taken):
    """NAME, or NAME with the row's task id (then a counter) where an earlier row took it: synthesized tasks
    are named for their operators, and two tasks of the same operators must not share a file."""
    if name in taken and row.get("task_id"):
        name = f"{name}_{re.sub(r'[^A-Za-z0-9]+', '_', str(row['task_id']))}"
    base, n = name, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


def load(config, folder, seed=0):
    """(train, held_out) lists of Task, written as FOLDER/NAME.py. The split is recorded in FOLDER/split.json
    and reused, so a resumed run never trains on a held-out task."""
    folder = Path(folder)
    split_file = folder / "split.json"
    if split_file.is_file():
        split = json.loads(split_file.read_text())
        return (
            [Task(n, str(folder / f"{n}.py")) for n in split["train"]],
            [Task(n, str(folder / f"{n}.py")) for n in split["held_out"]],
        )
    rows = read_rows(config.source)
    if config.levels:
        if rows and not any("level" in r for r in rows):
            raise TaskError(
                f"{config.source} has no levels (synthesized tasks): set tasks.levels to [] (--set tasks.levels=[])"
            )
        rows = [r for r in rows if r.get("level") in config.levels]
    if config.names:
        rows = [r for r in rows if r["name"] in config.names]
    if config.limit:
        rows = rows[: config.limit]
    if not rows:
        raise TaskError(f"no task left in {config.source} after the levels/names/limit filters")
    folder.mkdir(parents=True, exist_ok=True)
    names, taken, sides = [], set(), {}
    for row in rows:
        name = _unique(re.sub(r"[^A-Za-z0-9_]+", "_", str(row["name"])), row, taken)
        (folder / f"{name}.py").write_text(row["code"])
        names.append(name)
        sides[name] = row.get("split")
    if any(sides.values()):
        return _given_split(names, sides, config, split_file, folder)
    order = names[:]
    random.Random(seed).shuffle(order)
    n_held = (
        min(len(order) - 1, max(config.min_held_out, round(len(order) * config.held_out))) if config.held_out > 0 else 0
    )
    split = {"train": order[n_held:], "held_out": order[:n_held]}
    if not split["train"]:
        split["train"] = split["held_out"]  # a single task: train and evaluate on it (a toy run)
    split_file.write_text(json.dumps(split, indent=1))
    return (
        [Task(n, str(folder / f"{n}.py")) for n in split["train"]],
        [Task(n, str(folder / f"{n}.py")) for n in split["held_out"]],
    )


def _given_split(names, sides, config, split_file, folder):
    """The split a data build decided (training/rl/data.py: each row's "split"), recorded like a drawn one; the
    tasks the teacher did not solve train only with tasks.unreached."""
    unknown = sorted({side for side in sides.values()} - {"train", "held_out", "unreached"})
    if unknown:
        raise TaskError(f"{config.source}: unknown split(s) {unknown}: rows are train, held_out or unreached")
    train = [n for n in names if sides[n] == "train" or (config.unreached and sides[n] == "unreached")]
    split = {"train": train, "held_out": [n for n in names if sides[n] == "held_out"]}
    if not split["train"]:
        raise TaskError(
            f"{config.source} has no training task: build the data with more tasks or set tasks.unreached: true"
        )
    split_file.write_text(json.dumps(split, indent=1))
    return (
        [Task(n, str(folder / f"{n}.py")) for n in split["train"]],
        [Task(n, str(folder / f"{n}.py")) for n in split["held_out"]],
    )
