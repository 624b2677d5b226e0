"""The sandbox: build, verify, time, profile and reward kernels for a KernelBench-format problem."""

from sandbox.config import EvalConfig
from sandbox.errors import InvalidProblem, InvalidSolution, MisuseError, SandboxError
from sandbox.verdict import STATUSES, Verdict

__all__ = [
    "EvalConfig",
    "Verdict",
    "STATUSES",
    "evaluate",
    "profile",
    "SandboxError",
    "MisuseError",
    "InvalidProblem",
    "InvalidSolution",
]


def evaluate(problem, solution, config=None, **overrides):
    """Evaluate SOLUTION (a .py file or a native workspace folder) against PROBLEM; returns a Verdict."""
    from sandbox.harness import evaluate as _evaluate

    return _evaluate(problem, solution, config, **overrides)


def profile(problem, solution, config=None, **overrides):
    """Evaluate with profiling on; the Verdict carries per-kernel tables for reference and candidate."""
    from sandbox.harness import evaluate as _evaluate

    overrides.setdefault("profile", True)
    return _evaluate(problem, solution, config, **overrides)
