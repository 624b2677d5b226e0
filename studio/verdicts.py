"""What a page shows of a sandbox verdict, answer first: correct or not, speedups with their spread against both
baselines at PyTorch's default and at matched precision, the reward and what it means, and the CUDA profile."""

import math
from dataclasses import asdict, dataclass, field

from sandbox.reward import meaning, schedule_of
from sandbox.verdict import specialization

FAILURES = {
    "compile_error": "did not compile",
    "load_error": "did not load",
    "runtime_error": "crashed while running",
    "incorrect": "gave wrong outputs",
    "timeout": "ran out of time",
    "crashed": "crashed the sandbox's process",
    "violation": "broke the sandbox's rules",
}


@dataclass
class Speedup:
    """One bar: the candidate against one baseline measured one way."""

    baseline: str  # "eager" or "torch.compile"
    precision: str  # "default" (PyTorch's defaults, the reward's basis) or "tf32" (precision-matched)
    baseline_ms: float
    speedup: float
    low: float
    high: float
    spread_pct: float | None  # the baseline's own spread

    @property
    def label(self):
        return f"{self.baseline} ({'PyTorch default' if self.precision == 'default' else 'TF32, matched'})"


@dataclass
class KernelRow:
    name: str
    share_pct: float | None = None
    mean_us: float | None = None
    dram_pct: float | None = None
    sm_pct: float | None = None


@dataclass
class VerdictView:
    status: str
    correct: bool
    headline: str
    reward: int | None
    reward_schedule: str
    reward_meaning: str
    runtime_ms: float | None = None
    runtime_spread_pct: float | None = None
    trials_passed: int = 0
    trials_total: int = 0
    max_abs_error: float | None = None
    max_abs_error_fp64: float | None = None
    reference_abs_error_fp64: float | None = None
    speedups: list = field(default_factory=list)
    kernels: list = field(default_factory=list)
    profile_note: str = ""
    violations: list = field(default_factory=list)
    # "specialised to the problem's shapes (fails at SHAPE)" where the solution was wrong at another size (issue 22)
    specialised: str = ""

    @property
    def default_speedups(self):
        return [s for s in self.speedups if s.precision == "default"]

    @property
    def matched_speedups(self):
        return [s for s in self.speedups if s.precision == "tf32"]

    @property
    def reward_level(self):
        """The badge's colour class: failed, correct (no reward for speed), faster."""
        if self.reward is None or self.reward < 0:
            return "failed"
        return "faster" if self.reward >= 2 else "correct"

    def to_json(self):
        data = asdict(self)
        data["speedups"] = [{**asdict(s), "label": s.label} for s in self.speedups]
        return data


def _number(value):
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _spread(timing, key):
    return _number((timing.get(key) or {}).get("spread_pct"))


def quartile_factor(spread_pct):
    """K such that the quartiles lie at median / K and median * K for a spread (inter-quartile range over the median)
    of SPREAD_PCT: K - 1/K = spread. Timings are skewed to the slow side and never negative, so the quartiles are
    taken as symmetric on a log scale (about half the spread either side while it is small, still above 0 past 200%)."""
    s = max(spread_pct or 0.0, 0.0) / 100.0
    return (s + math.sqrt(s * s + 4.0)) / 2.0


def speedup(baseline, precision, baseline_ms, runtime_ms, baseline_spread, runtime_spread):
    """The bar of RUNTIME_MS against BASELINE_MS with the error bar the two spreads give (None without both times):
    from the baseline's low quartile over the candidate's high one to the other way round."""
    if not baseline_ms or not runtime_ms:
        return None
    b, c = quartile_factor(baseline_spread), quartile_factor(runtime_spread)
    ratio = baseline_ms / runtime_ms
    return Speedup(baseline, precision, baseline_ms, ratio, ratio / (b * c), ratio * b * c, baseline_spread)


def kernel_base_name(name):
    """A kernel's function name alone: torch.profiler prints "void ns::k<64>(float const*, int)" where Nsight Compute
    may print "k" or "void ns::k<64>(const float *, int)", so the two tables are joined on this."""
    head = name.replace("(anonymous namespace)", "").split("(", 1)[0]
    depth, kept = 0, []
    for ch in head:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(depth - 1, 0)
        elif depth == 0:
            kept.append(ch)
    words = "".join(kept).split()
    return words[-1].rsplit("::", 1)[-1] if words else name


def _ncu_row(ncu, name):
    """The Nsight Compute row of the kernel NAME: the same name, else the only row with its base name."""
    if name in ncu:
        return ncu[name]
    same = [row for key, row in ncu.items() if kernel_base_name(key) == kernel_base_name(name)]
    return same[0] if len(same) == 1 else {}


def kernel_rows(profile):
    """The candidate's heaviest kernels (torch.profiler), with Nsight Compute's achieved DRAM and SM throughput as a
    share of the GPU's peak where ncu measured them."""
    ncu = {row.get("name"): row for row in profile.get("ncu_candidate") or [] if row.get("name")}
    rows = []
    for r in (profile.get("candidate") or [])[:8]:
        measured = _ncu_row(ncu, r.get("name", "?"))
        rows.append(
            KernelRow(
                r.get("name", "?"),
                _number(r.get("share_pct")),
                _number(r.get("mean_us")),
                _number(measured.get("dram_pct")),
                _number(measured.get("sm_pct")),
            )
        )
    if not rows:
        rows = [
            KernelRow(
                r.get("name", "?"),
                None,
                _number(r.get("duration_us")),
                _number(r.get("dram_pct")),
                _number(r.get("sm_pct")),
            )
            for r in (profile.get("ncu_candidate") or [])[:8]
        ]
    return rows


def headline(status, correct, speedups):
    if not correct:
        return f"Not correct: the kernel {FAILURES.get(status, status)}."
    default = {s.baseline: s.speedup for s in speedups if s.precision == "default"}
    parts = [
        f"{ratio:.2f}x faster than {name}" if ratio >= 1 else f"{1 / ratio:.2f}x slower than {name}"
        for name, ratio in default.items()
    ]
    return "Correct" + (": " + ", ".join(parts) if parts else "") + "."


def view(verdict):
    """The VerdictView of a verdict's JSON dict (stored verdicts of any age), or None without one."""
    if not verdict:
        return None
    timing = verdict.get("timing") or {}
    runtime = _number(verdict.get("runtime_ms"))
    runtime_spread = _spread(timing, "candidate")
    correct = bool(verdict.get("correct", verdict.get("status") == "ok"))
    bars = (
        [
            speedup(name, precision, _number(verdict.get(key)), runtime, _spread(timing, spread_key), runtime_spread)
            for name, precision, key, spread_key in (
                ("eager", "default", "eager_ms", "eager"),
                ("torch.compile", "default", "compiled_ms", "compiled"),
                ("eager", "tf32", "eager_tf32_ms", "eager_tf32"),
                ("torch.compile", "tf32", "compiled_tf32_ms", "compiled_tf32"),
            )
        ]
        if correct
        else []
    )
    bars = [b for b in bars if b is not None]
    trials = verdict.get("trials") or []
    schedule = schedule_of(verdict)
    reward = verdict.get("reward")
    profile = verdict.get("profile") or {}
    return VerdictView(
        status=verdict.get("status", "?"),
        correct=correct,
        headline=headline(verdict.get("status"), correct, bars),
        reward=reward,
        reward_schedule=schedule,
        reward_meaning=meaning(schedule, reward),
        runtime_ms=runtime,
        runtime_spread_pct=runtime_spread,
        trials_passed=sum(1 for t in trials if t.get("ok")),
        trials_total=len(trials),
        max_abs_error=_number(verdict.get("max_abs_error")),
        max_abs_error_fp64=_number(verdict.get("max_abs_error_fp64")),
        reference_abs_error_fp64=_number(verdict.get("reference_abs_error_fp64")),
        speedups=bars,
        kernels=kernel_rows(profile),
        profile_note=profile.get("ncu_note", "") or profile.get("ncu_candidate_error", ""),
        violations=list(verdict.get("violations") or []),
        specialised=specialization(verdict),
    )


def best_speedup(verdict):
    """The speedup against eager (PyTorch default) of a correct verdict, for lists; None otherwise."""
    if not verdict or not verdict.get("correct"):
        return None
    return _number(verdict.get("speedup_vs_eager"))
