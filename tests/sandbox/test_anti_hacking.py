"""The anti-hacking rules, each with a solution that tries to break it.

- PyTorch compute operators reached from ModelNew.forward (Python, torch.nn.functional, nn modules, C++ through
  the dispatcher, a custom op wrapping one) are violations in strict mode; a relaxed mode records them.
- Outputs reused across calls are not rewarded; unwritten (stale) output memory fails.
- Patched clocks or timer functions do not change measured times and are reported as tampering.
- A solution cannot slow or forge the baselines, and cannot change the problem or the harness.
(Work hidden on side streams is a GPU rule: tests/gpu.)
"""

import os
import textwrap
from pathlib import Path

import pytest

from sandbox import settings


def _solution(body, imports=""):
    """A ModelNew for ELEMENTWISE whose forward is BODY (x, y in scope); IMPORTS run at import time."""
    return (
        "import numpy as np\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
        + textwrap.dedent(imports)
        + "\n\nclass ModelNew(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.relu = nn.ReLU()\n\n    def forward(self, x, y):\n"
        + textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 8)
        + "\n"
    )


HONEST_BODY = "return torch.from_numpy(np.maximum(x.numpy() + y.numpy(), 0.0) * np.float32(2.0))"


def _violation(verdict, *names):
    assert verdict.status == "violation", (verdict.status, verdict.log[-3000:])
    assert verdict.reward == -1 and verdict.correct is False
    text = "\n".join(verdict.violations)
    for name in names:
        assert name in text, (name, verdict.violations)
    return text


# -- PyTorch compute operators ------------------------------------------------------------------------------
FALLBACKS = {
    "tensor methods": ("return x.add(y).clamp_min(0.0).mul(2.0)", ("aten::add", "aten::clamp_min", "aten::mul")),
    "torch.nn.functional": ("return F.relu(torch.from_numpy(x.numpy() + y.numpy())) * 2.0", ("aten::relu",)),
    "nn module": ("return self.relu(torch.from_numpy(x.numpy() + y.numpy())) * 2.0", ("aten::relu",)),
    "operator overloads": (
        "s = x + y\nreturn torch.from_numpy(np.maximum(s.numpy(), 0.0) * np.float32(2.0))",
        ("aten::add",),
    ),
}


@pytest.mark.parametrize("how", list(FALLBACKS))
def test_torch_compute_from_python_is_a_violation(run_eval, files, elementwise, how):
    body, names = FALLBACKS[how]
    text = _violation(run_eval(elementwise, files.solution(_solution(body))), *names)
    assert "Strict mode" in text


def test_allocation_and_view_operators_are_allowed(run_eval, files, elementwise):
    body = """
        out = torch.empty_like(x)
        buf = out.view(-1)
        buf.numpy()[:] = (np.maximum(x.numpy() + y.numpy(), 0.0) * np.float32(2.0)).reshape(-1)
        z = torch.zeros(4)
        return out.reshape(128, 512).t().contiguous().t().clone()
        """
    v = run_eval(elementwise, files.solution(_solution(body)))
    assert v.status == "ok", (v.status, v.violations, v.log[-2000:])
    assert v.violations == []


def test_relaxed_mode_records_fallbacks_instead_of_failing(run_eval, files, elementwise):
    solution = files.solution(_solution("return torch.relu(x + y) * 2.0"))
    v = run_eval(elementwise, solution, strict=False)
    assert v.status == "ok", (v.status, v.log[-2000:])
    assert v.violations == [] and v.reward >= 1
    assert "relaxed: PyTorch compute operators" in v.log and "aten::relu" in v.log
    # The same solution in strict mode (the default) is a violation.
    assert _violation(run_eval(elementwise, solution), "aten::relu")


def test_python_custom_op_wrapping_matmul_is_a_violation(run_eval, files, linear_relu):
    source = """
        import numpy as np
        import torch
        import torch.nn as nn


        @torch.library.custom_op("ks_cheat::linear", mutates_args=())
        def linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return torch.matmul(x, w.t()) + b


        class ModelNew(nn.Module):
            def __init__(self, in_features, out_features):
                super().__init__()
                self.linear = nn.Linear(in_features, out_features)

            def forward(self, x):
                out = linear(x, self.linear.weight, self.linear.bias)
                return torch.from_numpy(np.maximum(out.numpy(), 0.0))
        """
    text = _violation(run_eval(linear_relu, files.solution(source)))
    assert "aten::mm" in text or "aten::matmul" in text or "aten::addmm" in text, text


@pytest.mark.slow
def test_cpp_at_call_through_the_dispatcher_is_a_violation(run_eval, files, elementwise, sources):
    # A classic binding (torch/extension.h) whose kernel is at::relu(at::add(x, y)) * 2: C++, but dispatched.
    workspace = files.workspace(sources["classic_workspace_files"]("cheat"))
    assert _violation(run_eval(elementwise, workspace), "aten::relu", "aten::add")


# -- outputs ------------------------------------------------------------------------------------------------
def test_reused_output_storage_is_a_violation(run_eval, files, elementwise):
    # Correct values every call, but always in the same buffer: a caller holding the last output sees it change.
    body = """
        if not hasattr(self, "out"):
            self.out = torch.empty_like(x)
        self.out.numpy()[...] = np.maximum(x.numpy() + y.numpy(), 0.0) * np.float32(2.0)
        return self.out
        """
    assert _violation(run_eval(elementwise, files.solution(_solution(body))), "same output storage")


def test_returning_the_input_storage_is_a_violation(run_eval, files, elementwise):
    body = """
        a = x.numpy()
        np.maximum(a + y.numpy(), 0.0, out=a)
        a *= np.float32(2.0)
        return x
        """
    assert _violation(run_eval(elementwise, files.solution(_solution(body))), "input's storage")


def test_a_memoized_output_fails_on_fresh_inputs(run_eval, files, elementwise):
    body = """
        if not hasattr(self, "first"):
            self.first = torch.from_numpy(np.maximum(x.numpy() + y.numpy(), 0.0) * np.float32(2.0))
        return self.first.clone()
        """
    v = run_eval(elementwise, files.solution(_solution(body)))
    assert v.status == "incorrect", (v.status, v.log)
    assert "trial 2" in v.log and v.reward == -1


def test_unwritten_output_memory_fails(run_eval, files, elementwise):
    # The kernel writes only the first half of its output; the second half is whatever the allocator held.
    # (On CPU the harness does not poison memory: fresh random inputs every trial must catch it.)
    body = """
        out = torch.empty_like(x)
        half = x.shape[0] // 2
        out.numpy()[:half] = np.maximum(x.numpy()[:half] + y.numpy()[:half], 0.0) * np.float32(2.0)
        return out
        """
    v = run_eval(elementwise, files.solution(_solution(body)))
    assert v.status == "incorrect", (v.status, v.log)
    assert v.reward == -1 and ("outside atol" in v.log or "NaN" in v.log), v.log


def test_patching_the_comparison_cannot_make_wrong_outputs_pass(run_eval, files, elementwise):
    # Outputs are compared in the reference's process: patching comparisons in the solution's changes nothing.
    imports = """
        import sandbox.correctness
        torch.allclose = lambda *a, **k: True
        torch.equal = lambda *a, **k: True
        torch.Tensor.__eq__ = lambda *a, **k: True
        sandbox.correctness.compare = lambda *a, **k: sandbox.correctness.Comparison(True)
        """
    v = run_eval(
        elementwise, files.solution(_solution("return torch.from_numpy(np.ones(x.shape, np.float32))", imports))
    )
    assert v.status == "incorrect", (v.status, v.log)
    assert v.reward == -1


# -- clocks and timers --------------------------------------------------------------------------------------
def test_patched_clocks_are_reported_and_do_not_change_the_time(run_eval, files, elementwise, honest):
    imports = """
        import time
        _ns, _s = time.perf_counter_ns, time.perf_counter
        time.perf_counter_ns = lambda: _ns() // 1000
        time.perf_counter = lambda: _s() / 1000
        time.monotonic = lambda: 0.0
        torch.isfinite = lambda t: torch.ones(t.shape, dtype=torch.bool)
        """
    cheat = run_eval(elementwise, files.solution(_solution(HONEST_BODY, imports)))
    assert _violation(
        cheat,
        "tampering: time.perf_counter was replaced",
        "tampering: time.perf_counter_ns was replaced",
        "tampering: time.monotonic was replaced",
        "tampering: torch.isfinite was replaced",
    )
    twin = run_eval(elementwise, honest)
    assert twin.status == "ok"
    # A 1000x slower clock would report a 1000x shorter time; the harness captured its clocks beforehand.
    assert cheat.runtime_ms > twin.runtime_ms / 5, (cheat.runtime_ms, twin.runtime_ms)


def test_a_code_swap_undone_before_the_check_is_still_reported(run_eval, files, elementwise):
    # Swapped and restored within one call: the audit hook saw the assignment to a watched function's code.
    body = (
        """
        import sandbox.timing
        original = sandbox.timing._summarize.__code__
        sandbox.timing._summarize.__code__ = (lambda *a, **k: None).__code__
        sandbox.timing._summarize.__code__ = original
        """
        + HONEST_BODY
    )
    assert _violation(
        run_eval(elementwise, files.solution(_solution(body))),
        "tampering: solution code triggered 'set _summarize.__code__'",
    )


@pytest.mark.xfail(
    strict=True,
    reason=(
        "CPython raises no audit event for assigning a class or module attribute, only for special ones such as "
        "__code__: a patch of torch.nn.Module.__call__ (or of the clock's method) that solution code undoes before "
        "the final integrity check goes unseen; only patches still in place at the end are reported"
    ),
)
def test_a_class_attribute_patch_undone_before_the_check_is_still_reported(run_eval, files, elementwise):
    body = (
        """
        original = torch.nn.Module.__call__
        torch.nn.Module.__call__ = lambda self, *a, **k: original(self, *a, **k)
        torch.nn.Module.__call__ = original
        """
        + HONEST_BODY
    )
    assert _violation(run_eval(elementwise, files.solution(_solution(body))), "Module.__call__")


TIMER_PATCHES = {
    # statistics.median computes the reported median from the samples.
    "statistics.median": """
        import statistics
        statistics.median = lambda data: 1e-6
        statistics.quantiles = lambda data, n=4: [1e-6] * (n - 1)
        """,
    # The CPU clock's sampling method, on the harness's own class.
    "clock class method": """
        import sandbox.timing
        sandbox.timing._CpuClock.sample = lambda self, call: (call(), 1e-6)[1]
        """,
    # The code object of a harness function swapped in place: the function object stays the same.
    "__code__ swap": """
        import sandbox.timing

        def _fake(samples, mode, calls=1, note=""):
            return Timing(1e-6, len(samples), 0.0, 1e-6, 1e-6, mode, calls, note)

        sandbox.timing._summarize.__code__ = _fake.__code__
        """,
    # The clock the timing module captured at import, replaced in the module.
    "captured clock": """
        import sandbox.timing
        _ns = sandbox.timing._perf_ns
        sandbox.timing._perf_ns = lambda: _ns() // 4
        """,
    # A builtin the summary relies on.
    "builtins.sorted": """
        import builtins
        _sorted = builtins.sorted


        def _fake_sorted(data, **k):  # only lists of floats (timing samples) come back as tiny numbers
            out = _sorted(data, **k)
            return [1e-6] * len(out) if out and all(type(v) is float for v in out) else out

        builtins.sorted = _fake_sorted
        """,
}


@pytest.mark.parametrize("how", list(TIMER_PATCHES))
def test_patched_timer_functions_are_not_rewarded(run_eval, files, elementwise, how):
    cheat = run_eval(elementwise, files.solution(_solution(HONEST_BODY, TIMER_PATCHES[how])))
    assert cheat.reward == -1, (how, cheat.status, cheat.runtime_ms, cheat.eager_ms, cheat.violations)
    assert cheat.status == "violation" and any("tampering" in v for v in cheat.violations), cheat.violations


def test_a_patched_timer_does_not_change_the_time(run_eval, files, elementwise, honest):
    # The timing module holds its own references to what it computes with: a solution that replaces the
    # module-level functions of `statistics` changes nothing measured.
    cheat = run_eval(elementwise, files.solution(_solution(HONEST_BODY, TIMER_PATCHES["statistics.median"])))
    twin = run_eval(elementwise, honest)
    assert cheat.runtime_ms > twin.runtime_ms / 5, (cheat.runtime_ms, twin.runtime_ms)


# -- the problem, the harness and the baselines -------------------------------------------------------------
def test_changing_the_problem_inputs_for_timing_is_not_rewarded(run_eval, files, elementwise):
    # The problem module is imported in the solution's process; a solution that rewrites get_inputs to hand
    # the timing loop tiny tensors (full-size ones for the trials) would be timed on almost no work.
    imports = """
        import sys
        _problem = sys.modules["ks_problem"]
        _real = _problem.get_inputs
        _timed = []

        def get_inputs():
            caller = sys._getframe(1)
            while caller is not None and caller.f_code.co_name != "time_it":
                caller = caller.f_back
            if caller is not None:
                _timed.append(1)
                if len(_timed) > 1:
                    return [torch.randn(1, 8), torch.randn(1, 8)]
            return _real()

        _problem.get_inputs = get_inputs
        """
    cheat = run_eval(elementwise, files.solution(_solution(HONEST_BODY, imports)))
    assert cheat.reward == -1, (cheat.status, cheat.runtime_ms, cheat.eager_ms, cheat.violations)
    assert cheat.status == "violation", (cheat.status, cheat.log[-2000:])
    assert "differ in shape or dtype" in cheat.log


def test_replacing_the_problem_inputs_with_same_shaped_ones_is_reported(run_eval, files, elementwise):
    # Same shapes, other values (zeros: a data-dependent kernel would run faster on them) for timing only.
    imports = """
        import sys
        _problem = sys.modules["ks_problem"]
        _real = _problem.get_inputs

        def get_inputs():
            caller = sys._getframe(1)
            while caller is not None and caller.f_code.co_name != "time_it":
                caller = caller.f_back
            return [torch.zeros_like(t) for t in _real()] if caller is not None else _real()

        _problem.get_inputs = get_inputs
        """
    cheat = run_eval(elementwise, files.solution(_solution(HONEST_BODY, imports)))
    assert _violation(cheat, "tampering: the problem's get_inputs was replaced")


def test_a_symlinked_output_file_cannot_make_the_harness_touch_host_files(run_eval, files, elementwise, tmp_path):
    # Outputs travel as files from the solution's folder to the reference's. A solution that swaps its output
    # file for a symlink must not get the (root) harness to chown or read what the link points to.
    victim = tmp_path / "victim"
    victim.write_text("host secret")
    os.chmod(victim, 0o600)
    before = os.stat(victim)
    imports = f"""
        import os, sys
        _main = sys.modules["__main__"]  # the candidate worker: patch whatever it writes outputs with
        _name = next(n for n in ("save_tensors", "_save") if hasattr(_main, n))
        _save = getattr(_main, _name)

        def _evil(obj, path):
            _save(obj, path)
            os.unlink(path)
            os.symlink({str(victim)!r}, path)

        setattr(_main, _name, _evil)
        """
    v = run_eval(elementwise, files.solution(_solution(HONEST_BODY, imports)))
    after = os.stat(victim)
    assert (after.st_uid, after.st_gid, after.st_mode) == (before.st_uid, before.st_gid, before.st_mode)
    assert victim.read_text() == "host secret"
    assert v.status == "violation" and v.reward == -1, (v.status, v.log[-2000:])
    assert "replaced its output file with a link" in v.log


def test_slow_solution_import_does_not_change_the_baselines(run_eval, files, sources, honest, jailed_processes):
    # A problem of its own, so that its baselines are measured during the slow solution's evaluation.
    problem = files.problem(sources["ELEMENTWISE"] + "\n# baselines of the slow-import test\n")
    imports = """
        import os, time
        # Spin for a second, and leave two spinning children behind.
        for _ in range(2):
            if os.fork() == 0:
                os.setsid()
                while True:
                    pass
        t0 = time.time()
        while time.time() - t0 < 1.0:
            pass
        """
    slow = run_eval(problem, files.solution(_solution(HONEST_BODY, imports)))
    assert slow.status == "ok", (slow.status, slow.log[-2000:])
    assert slow.compile_s >= 0.9  # the solution's import is its load time, not the baselines'
    assert jailed_processes(wait=10) == []  # the spinners died with the evaluation: they cannot slow the next one
    again = run_eval(problem, honest)
    # Measured once, before any solution code, then cached; unless a probe now finds the entry slower than the
    # machine is (the suite's other worker loaded it then): measured again, and the verdict says why.
    if again.timing["baselines"] == "cached":
        assert again.eager_ms == slow.eager_ms
    else:
        assert again.timing["baselines"].startswith("re-measured"), again.timing["baselines"]
        assert again.timing["eager_probe"]["median_ms"] * settings.STALE_BASELINE_RATIO < slow.eager_ms
    # Within noise of the same problem measured in a quiet machine.
    twin = run_eval(files.problem(sources["ELEMENTWISE"] + "\n# twin of the slow-import test\n"), honest)
    assert slow.eager_ms < 4 * twin.eager_ms, (slow.eager_ms, twin.eager_ms)


def test_the_baseline_cache_cannot_be_forged(run_eval, files, elementwise, honest, probe, ks_cache_dir):
    first = run_eval(elementwise, honest)
    cached = {p: p.read_bytes() for p in (ks_cache_dir / "baselines").glob("*.json")}
    assert cached
    result = probe("""
        import glob
        forged = json.dumps({"eager": {"median_ms": 1e6, "samples": 10, "spread_pct": 0, "min_ms": 1e6,
                                       "max_ms": 1e6, "mode": "cpu-clock"}})
        folder = os.path.join(os.environ["KS_CACHE_DIR"], "baselines")
        result["listed"] = glob.glob(folder + "/*.json") + glob.glob(os.environ["KS_CACHE_DIR"] + "/*")
        for path in result["listed"]:
            try:
                with open(path, "w") as fh:
                    fh.write(forged)
                result[path] = "written"
            except OSError as exc:
                result[path] = f"{type(exc).__name__}: {exc}"
        for name in ("new.json", "../baselines2"):
            try:
                with open(os.path.join(folder, name), "w") as fh:
                    fh.write(forged)
                result[name] = "written"
            except OSError as exc:
                result[name] = f"{type(exc).__name__}: {exc}"
        """)
    # The candidate's jail holds nothing of the cache but its own build: the baselines are not even there to forge.
    assert result.pop("listed") == [], result
    assert all(outcome != "written" for outcome in result.values()), result
    assert {p: p.read_bytes() for p in cached} == cached
    assert run_eval(elementwise, honest).eager_ms == first.eager_ms


def test_solution_code_cannot_write_the_problem_the_harness_or_the_system(probe, elementwise, ks_cache_dir):
    import torch

    import sandbox.timing

    targets = {
        "problem": str(elementwise),
        "harness": sandbox.timing.__file__,
        "torch": torch.__file__,
        "new file in /etc": "/etc/ks-sandbox-probe",
        "new file in the repo": os.path.join(os.path.dirname(os.path.dirname(sandbox.timing.__file__)), "ks-probe"),
        "cache": str(ks_cache_dir / "ks-probe"),
    }
    before = {name: Path(path).read_bytes() for name, path in targets.items() if os.path.exists(path)}
    result = probe(f"""
        for name, path in {targets!r}.items():
            try:
                with open(path, "a") as fh:
                    fh.write("# changed by the solution\\n")
                result[name] = "written"
            except OSError as exc:
                result[name] = f"{{type(exc).__name__}}: {{exc}}"
        """)
    assert set(result) == set(targets)
    for name, outcome in result.items():
        assert outcome.startswith(("OSError", "PermissionError", "FileNotFoundError")), (name, outcome)
    assert {name: Path(targets[name]).read_bytes() for name in before} == before
    assert not os.path.exists(targets["new file in /etc"]) and not os.path.exists(targets["new file in the repo"])
