"""Precision in verdicts (issue 17): errors against a float64 reference beside the FP32 one, and precision-matched
(TF32) baselines only where they mean something (CUDA; tests/gpu has the GEMM pair); float64 settling a trial the
FP32 reference itself gets wrong."""

import textwrap

from sandbox.verdict import Verdict

LINEAR = textwrap.dedent("""
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(64, 32)

        def forward(self, x):
            return torch.relu(self.linear(x))

    def get_inputs():
        return [torch.randn(16, 64)]

    def get_init_inputs():
        return []
    """)

# The same computation in numpy, with the weights rounded to SHIFT's precision first (none: exact float32).
SOLUTION = textwrap.dedent("""
    import numpy as np
    import torch
    import torch.nn as nn

    class ModelNew(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(64, 32)

        def forward(self, x):
            w = self.linear.weight.detach().numpy(){rounding}
            y = x.numpy() @ w.T + self.linear.bias.detach().numpy()
            return torch.from_numpy(np.maximum(y, 0).astype(np.float32))
    """)


def test_a_solution_that_gives_up_precision_shows_it_against_float64(run_eval, files):
    problem = files.problem(LINEAR, "linear.py")
    exact = run_eval(problem, files.solution(SOLUTION.format(rounding=""), "exact.py"))
    rounded = run_eval(
        problem, files.solution(SOLUTION.format(rounding=".astype(np.float16).astype(np.float32)"), "rounded.py")
    )
    for v in (exact, rounded):
        assert v.status == "ok" and v.correct, (v.status, v.log[-2000:])  # both inside atol = rtol = 1e-2
        assert v.reference_abs_error_fp64 is not None and "max_abs_error_fp64" in v.trials[0]
        assert not any("max_abs_error_fp64" in t for t in v.trials[1:])  # once: it reports, it decides nothing
    # FP32 against float64: the reference and an exact float32 solution agree to a few ulps...
    assert exact.max_abs_error_fp64 < 10 * exact.reference_abs_error_fp64 + 1e-6
    # ...while half-precision weights give up two orders of magnitude, which the verdict now shows.
    assert rounded.max_abs_error_fp64 > 100 * rounded.reference_abs_error_fp64
    assert rounded.max_abs_error_fp64 > 50 * exact.max_abs_error_fp64


def test_cpu_verdicts_have_no_tf32_baselines(run_eval, files):
    v = run_eval(files.problem(LINEAR, "linear.py"), files.solution(SOLUTION.format(rounding=""), "exact.py"))
    assert v.status == "ok"
    assert v.eager_tf32_ms is None and v.speedup_vs_eager_tf32 is None and v.compiled_tf32_ms is None
    assert "TF32" not in v.summary()


def test_a_model_that_cannot_run_in_float64_still_gets_its_verdict(run_eval, files):
    problem = LINEAR.replace(
        "return torch.relu(self.linear(x))",
        "return torch.relu(x @ self.linear.weight.float().t() + self.linear.bias.float())",
    )
    v = run_eval(files.problem(problem, "float32_only.py"), files.solution(SOLUTION.format(rounding=""), "exact.py"))
    assert v.status == "ok" and v.correct, (v.status, v.log[-2000:])
    assert v.max_abs_error_fp64 is None
    assert "does not run in float64" in v.trials[0]["fp64_error"]


def test_precision_fields_survive_the_json_round_trip():
    v = Verdict(
        status="ok",
        correct=True,
        runtime_ms=0.39,
        eager_ms=2.79,
        eager_tf32_ms=0.457,
        compiled_ms=2.79,
        compiled_tf32_ms=0.49,
        speedup_vs_eager=7.15,
        speedup_vs_eager_tf32=1.17,
        speedup_vs_compiled=7.15,
        speedup_vs_compiled_tf32=1.25,
        max_abs_error_fp64=2e-3,
        reference_abs_error_fp64=1e-6,
    )
    assert Verdict.loads(v.dumps()) == v
    assert "TF32-matched: 1.17x eager, 1.25x compiled" in v.summary()
    assert Verdict.from_json({"status": "ok"}).eager_tf32_ms is None  # verdicts stored before these fields


def test_the_float64_check_can_be_turned_off(run_eval, files):
    v = run_eval(
        files.problem(LINEAR, "linear.py"),
        files.solution(SOLUTION.format(rounding=""), "exact.py"),
        precision_check=False,
    )
    assert v.status == "ok" and v.max_abs_error_fp64 is None and "max_abs_error_fp64" not in v.trials[0]


def test_a_solution_evaluated_again_reports_its_stored_float64_errors_without_running_float64_again(run_eval, files):
    problem = files.problem(LINEAR + "\n# a problem of its own in the session's cache\n", "linear_again.py")
    solution = files.solution(SOLUTION.format(rounding=".astype(np.float16).astype(np.float32)"), "again.py")
    first, again = run_eval(problem, solution), run_eval(problem, solution)
    assert first.status == again.status == "ok", (first.log[-2000:], again.log[-2000:])
    assert "fp64" not in first.timing and again.timing["fp64"].startswith("cached")
    for key in ("max_abs_error_fp64", "max_rel_error_fp64", "reference_abs_error_fp64"):
        assert getattr(again, key) == getattr(first, key) == first.trials[0][key] == again.trials[0][key]
    # Every check still runs: the trials are fresh, only the float64 report is reused.
    assert len(again.trials) == len(first.trials) and again.max_abs_error != first.max_abs_error


# The float64 copy is slow to make (4 s) and every draw of the checks' inputs is slow (2 s between its tensors): the
# warm-up, which seeds torch's global generator for its own draw, would land in the middle of the first check's draw.
SLOW_FLOAT64_COPY = """
import threading
import time

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y) * 2.0

    def double(self):
        time.sleep(4.0)
        return super().double()


def get_inputs():
    x = torch.randn(128, 512)
    if threading.current_thread() is threading.main_thread():
        time.sleep(2.0)
    return [x, torch.randn(128, 512)]


def get_init_inputs():
    return []
"""


def test_the_float64_warm_up_never_reseeds_a_checks_draw_of_its_inputs(run_eval, files, honest):
    """A loaded machine judged a correct solution incorrect (66% of its outputs off): the reference drew a check's
    inputs while its float64 warm-up, in another thread, seeded the same global generator for its own draw."""
    # The race is in the first checks, beside the warm-up: the later draws (timing's input sets, shape trials) would
    # only add their two seconds each.
    problem = files.problem(SLOW_FLOAT64_COPY, "slow_float64_copy.py")
    v = run_eval(problem, honest, timeout_s=180, input_sets=1, shape_check=False)
    assert v.status == "ok" and v.correct, (v.status, v.log[-1500:])
    assert v.max_abs_error_fp64 is not None and v.max_abs_error_fp64 < 1e-5, v.max_abs_error_fp64


# x + 1e7 - 1e7 in float32 keeps x to the nearest whole number: where |x| > 3 (0.3% of the values) the FP32 reference
# is off by up to 0.5, float64 is not. A few values apart is what float64 is asked to settle (most apart: a wrong kernel).
CANCELLING = textwrap.dedent("""
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def forward(self, x):
            return torch.where(x.abs() > 3.0, (x + 1.0e7) - 1.0e7, x)

    def get_inputs():
        return [torch.randn(64, 128)]

    def get_init_inputs():
        return []
    """)

EXACT = textwrap.dedent("""
    import torch
    import torch.nn as nn

    class ModelNew(nn.Module):
        def forward(self, x):
            return torch.from_numpy(x.numpy() + {offset})
    """)


def test_a_solution_the_fp32_reference_misjudges_is_settled_by_float64(run_eval, files):
    problem = files.problem(CANCELLING, "cancelling.py")
    exact = run_eval(problem, files.solution(EXACT.format(offset="0.0"), "exact.py"))
    assert exact.status == "ok" and exact.correct, (exact.status, exact.log[-2000:])
    assert exact.max_abs_error > 0.1  # what the FP32 reference alone would have failed
    judged = [t for t in exact.trials if t.get("judged_by")]
    assert judged and all(t["ok"] for t in judged) and "float64" in judged[0]["judged_by"]
    assert judged[0]["max_abs_error_fp64"] < 1e-6 < 0.1 < judged[0]["reference_abs_error_fp64"]
    # a solution off float64 as well stays incorrect: float64 rescues only what matches it (here off everywhere, so it
    # is not even asked); one off at a few values only is asked, and still fails
    off = run_eval(problem, files.solution(EXACT.format(offset="0.05"), "off.py"))
    assert off.status == "incorrect" and not off.correct
    assert not any(t.get("judged_by") for t in off.trials)
    few = run_eval(
        problem, files.solution(EXACT.format(offset="((abs(x.numpy()) > 3.0) * 0.3).astype('float32')"), "few.py")
    )
    assert few.status == "incorrect" and not any(t.get("judged_by") for t in few.trials)


# A running sum near float's largest value, in float32 one step at a time (as a CUDA scan sums; the CPU's cumsum
# sums in double): each 1e31 is below half an ulp of 3.4028e38 and is lost, so it stays finite, while the true sum
# (float64's) passes FLT_MAX after about 400 steps; a solution summing in double overflows to inf there.
EDGE = textwrap.dedent("""
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def forward(self, x):
            out, total = torch.empty_like(x), torch.zeros_like(x[:, 0])
            for j in range(x.shape[1]):
                total = total + x[:, j]
                out[:, j] = total
            return out

    def get_inputs():
        x = torch.randn(128, 1024)
        x[0, 0], x[0, 1:] = 3.4028e38, 1e31
        return [x]

    def get_init_inputs():
        return []
    """)
DOUBLE_CUMSUM = textwrap.dedent("""
    import numpy as np
    import torch
    import torch.nn as nn

    class ModelNew(nn.Module):
        def forward(self, x):
            with np.errstate(over="ignore"):
                return torch.from_numpy(np.cumsum(x.numpy().astype(np.float64), axis=1).astype(np.float32))
    """)


def test_an_inf_where_float64_passes_floats_range_is_settled_by_float64(run_eval, files):
    v = run_eval(files.problem(EDGE, "edge.py"), files.solution(DOUBLE_CUMSUM, "double_cumsum.py"))
    assert v.status == "ok" and v.correct, (v.status, v.log[-2000:])
    assert "float64" in v.trials[0]["judged_by"], v.trials[0]
