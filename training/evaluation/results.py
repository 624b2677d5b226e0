"""One episode's result record, and DIR/results.jsonl: appended as each episode finishes, read back on resume."""

import logging
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from sandbox.jsonl import append_jsonl, read_jsonl

log = logging.getLogger(__name__)


@dataclass
class EpisodeResult:
    arm: str  # the sandbox setting the episode ran under (several in comparison mode)
    key: str  # BenchProblem.key, e.g. level1/19_ReLU
    level: int
    problem_id: int
    name: str
    problem_sha256: str
    verdict: dict | None = None  # the episode's best verdict (sandbox Verdict JSON); None when it did not run
    error: str = ""  # why the episode did not run to a verdict (invalid problem, a job that kept dying, ...)
    stop_reason: str = ""
    turns: int = 0
    wall_s: float = 0.0
    trajectory: str = ""  # relative to the evaluation folder
    attempt: int = 1
    worker: str = ""
    finished_at: str = ""
    policy: str = ""
    model: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def correct(self):
        return bool(self.verdict and self.verdict.get("correct"))

    @property
    def reward(self):
        return self.verdict.get("reward", -1) if self.verdict else -1

    def speedup(self, baseline):
        """Speedup of a correct result over BASELINE ('eager', 'compiled', or either with '_tf32' for the
        precision-matched one); None if failed or not measured."""
        return self.verdict.get(f"speedup_vs_{baseline}") if self.correct else None

    def to_json(self):
        return asdict(self)

    @classmethod
    def from_json(cls, data):
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


class ResultsFile:
    """DIR/results.jsonl: one JSON line per finished episode, written whole and synced before it counts.

    The latest line of a (arm, key) wins, so a re-run problem replaces its earlier result without rewriting
    the file; a line cut short by a crash mid-write is skipped with a warning, never fatal."""

    def __init__(self, path):
        self.path = Path(path)

    def append(self, result):
        append_jsonl(self.path, result.to_json())

    def read(self):
        """{(arm, key): EpisodeResult}, the latest of each."""
        latest = {}
        for number, data in enumerate(read_jsonl(self.path, skip_bad=True), 1):
            try:
                result = EpisodeResult.from_json(data)
            except TypeError as exc:
                log.warning("%s: skipped record %d (%s); that problem runs again on --resume", self.path, number, exc)
                continue
            latest[(result.arm, result.key)] = result
        return latest
