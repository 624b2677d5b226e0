"""Verdict: the one JSON record an evaluation produces (DESIGN.md's contract), with its round-trip."""

import json
from dataclasses import asdict, dataclass, field, fields

from sandbox.reward import DEFAULT_SCHEDULE, LEGACY_SCHEDULE

STATUSES = ("ok", "compile_error", "load_error", "runtime_error", "incorrect", "timeout", "crashed", "violation")


@dataclass
class Verdict:
    status: str
    correct: bool = False
    violations: list = field(default_factory=list)
    runtime_ms: float | None = None
    eager_ms: float | None = None
    compiled_ms: float | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_compiled: float | None = None
    reward: int = -1
    # Which schedule `reward` follows (sandbox/reward.py): "paper" or "milestone".
    reward_schedule: str = DEFAULT_SCHEDULE
    compile_s: float | None = None
    log: str = ""
    # Beyond the contract: what a user or a trainer needs to act on the verdict.
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    trials: list = field(default_factory=list)
    timing: dict = field(default_factory=dict)
    profile: dict = field(default_factory=dict)
    device: str = ""
    problem_hash: str = ""
    solution_hash: str = ""
    isolation: str = ""
    wall_s: float | None = None
    # Precision (issue 17): baselines with TF32 allowed (CUDA), and errors against a float64 reference, so that
    # a speedup made of a precision change is seen as one. The reward keeps PyTorch's defaults (the paper's basis).
    eager_tf32_ms: float | None = None
    compiled_tf32_ms: float | None = None
    speedup_vs_eager_tf32: float | None = None
    speedup_vs_compiled_tf32: float | None = None
    max_abs_error_fp64: float | None = None
    max_rel_error_fp64: float | None = None
    reference_abs_error_fp64: float | None = None
    # Shape generality (issue 22): the input shapes the solution was run at (the problem's first, then each variant),
    # whether it was correct at all of them (None where no dimension could vary), and where and why it was not.
    shapes_checked: list = field(default_factory=list)
    shape_general: bool | None = None
    failing_shape: str = ""
    shape_failure: str = ""
    # Variants not tried, each "SHAPES: why" (a larger batch the device cannot hold twice over).
    shapes_skipped: list = field(default_factory=list)

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"unknown verdict status {self.status!r}")

    def to_json(self):
        return asdict(self)

    def dumps(self, **kw):
        return json.dumps(self.to_json(), **kw)

    @classmethod
    def from_json(cls, data):
        known = {f.name for f in fields(cls)}
        # Verdicts stored before the field existed were rewarded by the milestone schedule.
        data = {"reward_schedule": LEGACY_SCHEDULE, **data}
        return cls(**{k: v for k, v in data.items() if k in known})

    @classmethod
    def loads(cls, text):
        return cls.from_json(json.loads(text))

    def summary(self):
        """One line for people: status, reward and the headline numbers."""
        parts = [f"{self.status}", f"reward {self.reward} ({self.reward_schedule})"]
        if self.runtime_ms is not None:
            parts.append(f"{self.runtime_ms:.4f} ms")
        if self.speedup_vs_eager is not None:
            parts.append(f"{self.speedup_vs_eager:.2f}x eager")
        if self.speedup_vs_compiled is not None:
            parts.append(f"{self.speedup_vs_compiled:.2f}x compiled")
        if self.speedup_vs_eager_tf32 is not None:
            matched = f"{self.speedup_vs_eager_tf32:.2f}x eager"
            if self.speedup_vs_compiled_tf32 is not None:
                matched += f", {self.speedup_vs_compiled_tf32:.2f}x compiled"
            parts.append(f"TF32-matched: {matched}")
        if self.shape_general is False:
            parts.append(f"specialized: fails at inputs {self.failing_shape}")
        if self.violations:
            parts.append("violations: " + "; ".join(self.violations))
        return ", ".join(parts)


def specialization(verdict):
    """'specialised to the problem's shapes (fails at SHAPE)' for a verdict (a Verdict or its JSON dict) whose solution
    was wrong at another input size (issue 22), the sentence the studio and packages show; '' for one that was right at
    every size checked, or was not checked."""
    data = verdict.to_json() if isinstance(verdict, Verdict) else (verdict or {})
    if data.get("shape_general") is not False:
        return ""
    return f"specialised to the problem's shapes (fails at {data.get('failing_shape') or 'another input size'})"
