"""The synthesized dataset on disk: versioned JSONL task records, the attempt log, the run's settings and the
summary (what each filter removed, the kept set's distribution).

Files of one run, beside each other: OUT (kept tasks, one KernelBench-format problem per line), OUT.attempts.jsonl
(every candidate's verdicts), OUT.run.json (the settings, so a resumed run continues the same run) and
OUT.summary.json. Lines are appended and flushed one at a time; a line cut by a crash is dropped on resume.
"""

import math
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from sandbox.jsonl import read_jsonl

SCHEMA_VERSION = 1
# Eager-time bins of the summary's histogram (ms, log-spaced): 0.01 ms .. 10 s.
TIME_BINS = [round(10 ** (e / 4), 4) for e in range(-8, 17)]


class DatasetError(Exception):
    """A dataset file cannot be used as asked; the message says what to do."""


@dataclass
class RunConfig:
    """The settings of one synthesis run; a resumed run must match the stored ones."""

    device: str = "cpu"
    profile: str = "cpu"
    seed: int = 0
    window_ms: tuple = (10.0, 1000.0)
    max_share: float = 0.9
    fullgraph: bool = True
    dtype: str = "float32"
    composer: str = "program"
    max_depth: int = 5
    classes: tuple = ()
    max_resizes: int = 2
    time_budget_s: float = 0.3
    timeout_s: float = 600.0
    kernelbench: str = ""
    llm: dict = field(default_factory=dict)
    compose_only: bool = False  # keep composed, de-duplicated candidates unrun: the execution filters are left to
    #                             whoever runs them (`python -m training data`'s teacher episodes)
    version: int = SCHEMA_VERSION

    def to_json(self):
        data = asdict(self)
        data["window_ms"], data["classes"] = list(self.window_ms), list(self.classes)
        return data

    @classmethod
    def from_json(cls, data):
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise DatasetError(f"run settings hold unknown fields {sorted(unknown)}: written by a newer version?")
        data = dict(data)
        data["window_ms"] = tuple(data.get("window_ms", (10.0, 1000.0)))
        data["classes"] = tuple(data.get("classes", ()))
        return cls(**data)

    def identity(self):
        """What must not change between a run and its resumption (the count and workers may)."""
        return {k: v for k, v in self.to_json().items() if k not in ("timeout_s",)}


@dataclass
class TaskRecord:
    """One kept task: the problem and everything the filters learned about it."""

    task_id: str
    name: str
    source: str
    seeds: list
    op_classes: list
    fusion_depth: int
    inputs: list
    outputs: object
    dtype: str
    device: str
    eager_ms: float
    compiled_ms: float
    compile_s: float
    fingerprint: str
    verdicts: list
    composer: str = "program"
    device_name: str = ""
    torch_version: str = ""
    eager_spread_pct: float = 0.0
    created: float = field(default_factory=time.time)
    version: int = SCHEMA_VERSION

    def to_json(self):
        return asdict(self)

    @classmethod
    def from_json(cls, data):
        if data.get("version", 0) > SCHEMA_VERSION:
            raise DatasetError(f"task record version {data['version']} is newer than this code's {SCHEMA_VERSION}")
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class Attempt:
    """One candidate's journey through the filters (kept or not), with where its time went."""

    index: int
    name: str
    seeds: list
    op_classes: list
    depth: int
    composer: str
    kept: bool
    verdicts: list
    removed_by: str = ""
    exec_s: float = 0.0  # in jailed probes (execution)
    pipeline_s: float = 0.0  # everything else: composing, fingerprinting, claims, bookkeeping
    resizes: int = 0
    eager_ms: float = None
    task: dict = None

    def to_json(self):
        return asdict(self)

    @classmethod
    def from_json(cls, data):
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def paths(out):
    out = Path(out)
    return {
        "tasks": out,
        "attempts": out.with_name(out.name + ".attempts.jsonl"),
        "run": out.with_name(out.name + ".run.json"),
        "summary": out.with_name(out.name + ".summary.json"),
    }


def read_tasks(path):
    return [TaskRecord.from_json(row) for row in read_jsonl(path)]


def _histogram(values, bins):
    """Counts of VALUES per bin; unmeasured values (None: composed-only tasks) are left out."""
    counts = [0] * (len(bins) + 1)
    for v in (v for v in values if v is not None):
        counts[sum(1 for b in bins if v >= b)] += 1
    edges = [0.0] + list(bins) + [math.inf]
    return [
        {"lo": edges[i], "hi": edges[i + 1] if edges[i + 1] != math.inf else None, "count": c}
        for i, c in enumerate(counts)
        if c
    ]


def summarize(attempts, tasks, wall_s=None, config=None):
    """Counts per removing filter, the kept set's distribution (the data of the --plot figure) and time shares."""
    attempts = [a if isinstance(a, Attempt) else Attempt.from_json(a) for a in attempts]
    tasks = [t if isinstance(t, TaskRecord) else TaskRecord.from_json(t) for t in tasks]
    removed = Counter(a.removed_by for a in attempts if not a.kept)
    exec_s = sum(a.exec_s for a in attempts)
    pipeline_s = sum(a.pipeline_s for a in attempts)
    busy = exec_s + pipeline_s
    return {
        "version": SCHEMA_VERSION,
        "config": config.to_json() if config else None,
        "attempts": len(attempts),
        "kept": len(tasks),
        "removed_by": dict(sorted(removed.items())),
        "kept_share": round(len(tasks) / len(attempts), 4) if attempts else 0.0,
        "distribution": {
            "op_classes": dict(Counter(c for t in tasks for c in sorted(set(t.op_classes))).most_common()),
            "fusion_depth": {str(d): n for d, n in sorted(Counter(t.fusion_depth for t in tasks).items())},
            "eager_ms": _histogram([t.eager_ms for t in tasks], TIME_BINS),
            "eager_ms_values": sorted(round(t.eager_ms, 4) for t in tasks if t.eager_ms is not None),
            "speedup_compiled_over_eager": sorted(
                round(t.eager_ms / t.compiled_ms, 3) for t in tasks if t.compiled_ms and t.eager_ms
            ),
        },
        "time": {
            "exec_s": round(exec_s, 2),
            "pipeline_s": round(pipeline_s, 2),
            "wall_s": wall_s,
            "exec_share": round(exec_s / busy, 4) if busy else None,
        },
    }
