"""The execution filters, one function each: facts the jailed probe measured in, a FilterVerdict out.

Order (cheapest first, as the pipeline applies them): composes, not_duplicate, runs, deterministic,
well_conditioned, not_trivial, eager_window, not_dominated, compiles. An LLM-composed source is untrusted, so it is fingerprinted
in the jail and not_duplicate comes after not_trivial. A task is kept only if every filter passes; the first
that fails is the one the dataset summary charges with its removal.
"""

import re
from dataclasses import asdict, dataclass

FILTERS = (
    "composes",
    "not_duplicate",
    "runs",
    "deterministic",
    "well_conditioned",
    "not_trivial",
    "eager_window",
    "not_dominated",
    "compiles",
)

# Eager-time windows per target (ms). The CPU window is the GPU's scaled by how much slower a CPU runs the
# same operators (~10x on the sizes the cpu profile draws); both are overridable from the CLI.
DEFAULT_WINDOWS = {"cuda": (1.0, 100.0), "cpu": (10.0, 1000.0)}
# Kernels (CUDA) or top-level operators (CPU) of vendor libraries no hand-written kernel could beat by much.
LIBRARY_CALL = re.compile(
    r"gemm|gemv|cublas|cutlass|xmma|nvjet|cudnn|conv|winograd|implicit|fft|flash|fmha|attention|"
    r"aten::(mm|addmm|bmm|baddbmm|matmul|linear|einsum|conv\w*|_convolution|mkldnn\w*|_scaled_dot_product\w*|"
    r"lstm|gru|rnn\w*)$",
    re.I,
)


@dataclass
class FilterVerdict:
    filter: str
    passed: bool
    reason: str = ""

    def to_json(self):
        return asdict(self)

    @classmethod
    def from_json(cls, data):
        return cls(**data)


def _verdict(name, failure):
    return FilterVerdict(name, failure is None, failure or "")


def composes(error):
    """The composer produced a problem (ERROR: why it could not, or None)."""
    return _verdict("composes", error)


def runs(checked):
    """It imports, constructs, runs on get_inputs() and returns finite tensors."""
    if not checked.get("ok") and checked.get("filter") == "runs":
        return _verdict("runs", checked.get("reason") or "it did not run")
    facts = checked.get("facts") or {}
    if checked.get("ok") and not facts.get("finite", True):
        return _verdict("runs", "the output holds NaN or Inf")
    return _verdict("runs", None)


def deterministic(checked):
    """Two runs on the same inputs agree (the sandbox's validation reseeds between them: dropout fails)."""
    if not checked.get("ok") and checked.get("filter") == "deterministic":
        return _verdict("deterministic", checked.get("reason"))
    return _verdict("deterministic", None)


# The largest share of an output's values on which float32 may miss float64 beyond the sandbox's tolerance.
MAX_FLOAT64_MISMATCH = 1e-4


def well_conditioned(checked):
    """Its float32 output is float64's within the sandbox's tolerance, but for a few values: where float32's rounding
    decides the result (a cancellation, a product of many factors) the reference itself is off, and no float32
    kernel can be judged against it reliably."""
    share = (checked.get("facts") or {}).get("float64_mismatch")
    if share is not None and share > MAX_FLOAT64_MISMATCH:
        return _verdict(
            "well_conditioned",
            f"float32 and float64 disagree beyond the tolerance on {100 * share:.2g}% of the output",
        )
    return _verdict("well_conditioned", None)


def not_trivial(checked):
    """The output is not constant, does not ignore the inputs, and is not one of them."""
    facts = checked.get("facts") or {}
    if facts.get("constant"):
        return _verdict("not_trivial", "the output is constant")
    if facts.get("input_independent"):
        return _verdict("not_trivial", "the output does not depend on the inputs")
    if facts.get("equals_input") is not None:
        return _verdict("not_trivial", f"the output equals input {facts['equals_input']}")
    if facts.get("aliases_input"):
        return _verdict("not_trivial", "the output is a view of an input")
    return _verdict("not_trivial", None)


def not_duplicate(fingerprint, claims, owner):
    """No kept task and no KernelBench problem has the same graph; claims FINGERPRINT for OWNER when free."""
    if not fingerprint:
        return _verdict("not_duplicate", "the problem could not be fingerprinted")
    held = claims.claim(fingerprint, owner)
    if held is None or held == owner:
        return _verdict("not_duplicate", None)
    return _verdict("not_duplicate", f"same graph as {held}")


def eager_window(eager_ms, window):
    """The eager time lies in WINDOW (lo_ms, hi_ms)."""
    lo, hi = window
    if eager_ms is None:
        return _verdict("eager_window", "no eager time was measured")
    if eager_ms < lo:
        return _verdict("eager_window", f"eager time {eager_ms:.3f} ms is under the window's {lo:g} ms")
    if eager_ms > hi:
        return _verdict("eager_window", f"eager time {eager_ms:.3f} ms is over the window's {hi:g} ms")
    return _verdict("eager_window", None)


def not_dominated(profile_rows, max_share):
    """No single vendor-library call (GEMM, convolution, attention) takes more than MAX_SHARE of the time."""
    if not profile_rows:
        return _verdict("not_dominated", None)
    top = max(profile_rows, key=lambda r: r["share_pct"])
    if top["share_pct"] > 100.0 * max_share and LIBRARY_CALL.search(top["name"]):
        return _verdict(
            "not_dominated",
            f"{top['name'][:80]} takes {top['share_pct']:.0f}% of the time (limit {100 * max_share:.0f}%)",
        )
    return _verdict("not_dominated", None)


def compiles(compiled):
    """torch.compile traces it (in one graph when fullgraph is asked), runs it, and agrees with eager."""
    if compiled.get("ok"):
        return _verdict("compiles", None)
    return _verdict("compiles", compiled.get("reason") or "torch.compile failed")
