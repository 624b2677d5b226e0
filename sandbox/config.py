"""EvalConfig: the knobs of one evaluation (trials, tolerances, timing protocol, strictness)."""

from dataclasses import asdict, dataclass, field, fields

from sandbox import settings
from sandbox.reward import DEFAULT_SCHEDULE, SCHEDULES

TIMING_MODES = ("auto", "events", "graph")


@dataclass
class EvalConfig:
    device: str = "cuda"
    trials: int = 5
    atol: float = 1e-2
    rtol: float = 1e-2
    timeout_s: float = field(default_factory=lambda: settings.TIMEOUT_S)
    # Strict: any PyTorch compute operator reached from ModelNew.forward is a violation.
    strict: bool = True
    # auto: CUDA-graph replay for a launch-bound problem (eager under sandbox.timing.LAUNCH_BOUND_MS), events otherwise,
    # one protocol for baselines and candidate alike; events or graph force one (sandbox/timing.py).
    timing: str = "auto"
    # The reward schedule (sandbox/reward.py): "paper" (CUDA Agent's Eq. 1: -1 failed, 1 correct, 2 more than
    # `margin` faster than eager, 3 than both) or "milestone" (-1, 0 correct, 1 faster than eager, 2 than both,
    # 3 than both by a speedup of at least 1 + margin).
    reward: str = DEFAULT_SCHEDULE
    # paper: the share of a baseline's time a solution must save ((t0 - t) / t0 > margin); milestone: the speedup
    # over both baselines the top level needs (1 + margin).
    margin: float = 0.05
    time_budget_s: float = 1.5
    min_samples: int = 10
    max_samples: int = 200
    warmup_s: float = 0.15
    # Input sets rotated while timing, capped so their bytes stay under input_budget_mb.
    input_sets: int = 4
    input_budget_mb: int = 8192
    # Outputs above this size are compared on a secret random sample of elements.
    full_compare_mb: int = 64
    sample_elements: int = 4_000_000
    compiled_baseline: bool = True
    # The solution's error against the problem run in float64, on the first trial (issue 17).
    precision_check: bool = True
    # Shape generality (issue 22): one trial per other size of the dimensions that may vary (the batch halved and
    # doubled, or the problem's get_input_variants()), after timing; reported, never rewarded.
    shape_check: bool = True
    profile: bool = False
    ncu: bool = False

    def __post_init__(self):
        if self.device not in ("cuda", "cpu"):
            raise ValueError(f"device must be 'cuda' or 'cpu', not {self.device!r}")
        if self.timing not in TIMING_MODES:
            raise ValueError(f"timing must be one of {TIMING_MODES}, not {self.timing!r}")
        if self.trials < 1:
            raise ValueError("trials must be at least 1")
        if self.reward not in SCHEDULES:
            raise ValueError(f"reward must be one of {SCHEDULES}, not {self.reward!r}")
        if self.margin < 0 or (self.reward == "paper" and self.margin >= 1):
            raise ValueError(
                f"margin must be at least 0 (and below 1 for the paper's schedule, a share of the "
                f"baseline's time), not {self.margin}"
            )

    def replace(self, **changes):
        unknown = set(changes) - {f.name for f in fields(self)}
        if unknown:
            raise TypeError(f"unknown EvalConfig fields: {sorted(unknown)}")
        return EvalConfig(**{**asdict(self), **changes})

    def to_json(self):
        return asdict(self)

    @classmethod
    def from_json(cls, data):
        return cls(**data)

    def timing_key(self):
        """What a baseline's cache entry depends on besides problem, GPU and torch."""
        return {
            k: getattr(self, k)
            for k in (
                "device",
                "timing",
                "time_budget_s",
                "min_samples",
                "max_samples",
                "warmup_s",
                "input_sets",
                "input_budget_mb",
                "compiled_baseline",
            )
        }
