"""Every verdict status, each produced by a solution that earns it, on the CPU target."""

import time

import pytest

from sandbox.verdict import STATUSES


def _failed(verdict, status):
    assert verdict.status == status, (verdict.status, verdict.log[-3000:])
    assert verdict.correct is False
    assert verdict.reward == -1
    return verdict


def test_every_status_is_covered_here():
    tested = {"ok", "compile_error", "load_error", "runtime_error", "incorrect", "timeout", "crashed", "violation"}
    assert set(STATUSES) == tested


def test_ok_for_an_honest_solution(run_eval, elementwise, honest):
    v = run_eval(elementwise, honest, trials=5)  # the default number of trials
    assert v.status == "ok", v.log
    assert v.correct is True and v.violations == []
    assert v.reward >= 1
    assert v.runtime_ms > 0 and v.eager_ms > 0
    assert v.speedup_vs_eager == pytest.approx(v.eager_ms / v.runtime_ms, rel=1e-3)
    assert v.compiled_ms is None and v.speedup_vs_compiled is None  # compiled_baseline=False
    # 5 trials on fresh inputs, then one on fresh values written into the timed buffers.
    assert [t["trial"] for t in v.trials] == [f"trial {i}" for i in range(1, 6)] + ["post-timing"]
    assert all(t["ok"] for t in v.trials)
    assert v.max_abs_error is not None and v.max_abs_error < 1e-4
    assert v.timing["candidate"]["samples"] >= 10 and v.timing["eager"]["samples"] >= 10
    assert v.isolation.startswith("bwrap")
    assert len(v.problem_hash) == 64 and len(v.solution_hash) == 64


def test_ok_for_a_reduction_and_a_layer_with_weights(run_eval, files, rowsum, linear_relu, sources):
    v = run_eval(rowsum, files.solution(sources["HONEST_ROWSUM"]))
    assert v.status == "ok", v.log
    # ModelNew gets Model's initial weights (same names and shapes): an honest numpy linear layer is correct.
    v = run_eval(linear_relu, files.solution(sources["HONEST_LINEAR_RELU"]))
    assert v.status == "ok", v.log
    assert v.max_abs_error < 1e-3


def test_compile_error_for_a_cpp_syntax_error(run_eval, files, elementwise, sources):
    broken = dict(sources["STABLE_WORKSPACE"])
    broken["kernels/add_relu.cpp"] = broken["kernels/add_relu.cpp"].replace("out[i] =", "out[i] = = ")
    v = _failed(run_eval(elementwise, files.workspace(broken)), "compile_error")
    assert "add_relu.cpp" in v.log and "error" in v.log
    assert v.runtime_ms is None


def test_load_error_for_a_missing_import(run_eval, files, elementwise):
    v = _failed(run_eval(elementwise, files.solution("import nonexistent_module_ks\n")), "load_error")
    assert "nonexistent_module_ks" in v.log


def test_load_error_without_model_new(run_eval, files, elementwise):
    source = """
        import torch.nn as nn

        class ModelOld(nn.Module):
            def forward(self, x, y):
                return x
        """
    v = _failed(run_eval(elementwise, files.solution(source)), "load_error")
    assert "ModelNew" in v.log


def test_load_error_when_the_constructor_fails(run_eval, files, elementwise):
    source = """
        import torch.nn as nn

        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                raise ValueError("no weights for you")
        """
    v = _failed(run_eval(elementwise, files.solution(source)), "load_error")
    assert "no weights for you" in v.log


def test_runtime_error_for_a_forward_that_raises(run_eval, files, elementwise):
    source = """
        import torch.nn as nn

        class ModelNew(nn.Module):
            def forward(self, x, y):
                raise ValueError("kernel launch went sideways")
        """
    v = _failed(run_eval(elementwise, files.solution(source)), "runtime_error")
    assert "kernel launch went sideways" in v.log


WRONG = {
    "values": "torch.from_numpy(np.maximum(x.numpy() + y.numpy(), 0.0) * np.float32(2.0) + np.float32(0.5))",
    "shape": "torch.from_numpy(np.ascontiguousarray((np.maximum(x.numpy() + y.numpy(), 0.0) * np.float32(2.0))[:, :-1]))",
    "nan": "torch.from_numpy(np.full(x.shape, np.nan, dtype=np.float32))",
    "inf": "torch.from_numpy(np.full(x.shape, np.inf, dtype=np.float32))",
    "dtype": "torch.from_numpy(np.maximum(x.numpy() + y.numpy(), 0.0).astype(np.float64) * 2.0)",
    "not a tensor": "3.0",
}
WHY = {
    "values": "outside atol",
    "shape": "shape",
    "nan": "NaN",
    "inf": "NaN/Inf",
    "dtype": "float64",
    "not a tensor": "returned",
}


@pytest.mark.parametrize("kind", list(WRONG))
def test_incorrect_outputs(run_eval, files, elementwise, kind):
    source = f"""
        import numpy as np
        import torch
        import torch.nn as nn

        class ModelNew(nn.Module):
            def forward(self, x, y):
                return {WRONG[kind]}
        """
    v = _failed(run_eval(elementwise, files.solution(source)), "incorrect")
    assert "trial 1" in v.log and WHY[kind] in v.log, v.log
    assert v.runtime_ms is None  # an incorrect solution is never timed


def test_timeout_for_an_infinite_loop(run_eval, files, elementwise):
    source = """
        import torch.nn as nn

        class ModelNew(nn.Module):
            def forward(self, x, y):
                while True:
                    pass
        """
    t0 = time.monotonic()
    v = _failed(run_eval(elementwise, files.solution(source), timeout_s=3), "timeout")
    assert time.monotonic() - t0 < 60
    assert v.log.startswith('stage "trial 1" ran out of time: the solution took longer than 3 s'), v.log[-2000:]


def test_timeout_for_a_hang_at_import(run_eval, files, elementwise):
    v = _failed(run_eval(elementwise, files.solution("import time\ntime.sleep(3600)\n"), timeout_s=3), "timeout")
    assert v.wall_s < 60
    assert v.log.startswith('stage "load solution (importing it)" ran out of time: the solution took longer than 3 s')


def test_crashed_for_an_exit_at_import_after_the_process_ran_longer_than_the_exit_grace(
    run_eval, files, elementwise, monkeypatch
):
    # The grace a worker whose channel closed has to exit counts from then, not from the process's start: a loaded
    # machine where importing took longer than the grace still reads the exit as the crash it is.
    from sandbox import harness

    monkeypatch.setattr(harness, "EXIT_GRACE_S", 0.5)
    v = _failed(run_eval(elementwise, files.solution("import os, time\ntime.sleep(1.5)\nos._exit(3)\n")), "crashed")
    assert "exit" in v.log and "3" in v.log, v.log[-2000:]


SEGFAULTS = {
    "null pointer": "ctypes.string_at(0)",
    "abort": "os.abort()",
    "signal": "os.kill(os.getpid(), signal.SIGSEGV)",
}


@pytest.mark.parametrize("how", SEGFAULTS)
def test_crashed_for_a_segfault_and_the_caller_carries_on(run_eval, files, elementwise, honest, how):
    source = f"""
        import ctypes, os, signal
        import torch.nn as nn

        class ModelNew(nn.Module):
            def forward(self, x, y):
                {SEGFAULTS[how]}
        """
    v = _failed(run_eval(elementwise, files.solution(source)), "crashed")
    assert "killed by signal" in v.log, v.log
    # The crash ended that subprocess only: the next evaluation in this process works.
    assert run_eval(elementwise, honest).status == "ok"


def test_violation_for_torch_compute_in_forward(run_eval, files, elementwise):
    source = """
        import torch
        import torch.nn as nn

        class ModelNew(nn.Module):
            def forward(self, x, y):
                return torch.relu(x + y) * 2.0
        """
    v = _failed(run_eval(elementwise, files.solution(source)), "violation")
    assert any("aten::relu" in s and "aten::add" in s for s in v.violations), v.violations
    assert v.runtime_ms is not None  # it was correct and timed; the violation alone takes the reward away


OVERFLOW = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.exp(x * 60.0)  # float32's exp overflows to inf past x = 1.48: about 7% of the values


def get_inputs():
    return [torch.randn(256, 512)]


def get_init_inputs():
    return []
"""
OVERFLOWS = {
    "as eager": "y",
    "nan for inf": "np.where(np.isinf(y), np.float32(np.nan), y)",
    "inf one place more": "np.where(x == x.min(), np.float32(np.inf), y)",
}


@pytest.mark.parametrize("kind", list(OVERFLOWS))
def test_a_sampled_output_with_nan_or_inf_is_right_only_where_the_references_are(run_eval, files, kind):
    # Compared by a sample (over full_compare_mb): the NaN/Inf positions are checked one by one against eager's.
    source = f"""
        import numpy as np
        import torch
        import torch.nn as nn

        class ModelNew(nn.Module):
            def forward(self, x):
                x = x.numpy()
                with np.errstate(over="ignore"):
                    y = np.exp(x * np.float32(60.0))
                return torch.from_numpy(np.ascontiguousarray({OVERFLOWS[kind]}, dtype=np.float32))
        """
    v = run_eval(files.problem(OVERFLOW, "overflow.py"), files.solution(source), full_compare_mb=0, trials=2)
    assert all(t["sampled"] for t in v.trials), v.trials
    if kind == "as eager":
        assert v.status == "ok" and v.correct, v.log[-3000:]
        return
    _failed(v, "incorrect")
    assert "NaN/Inf" in v.log, v.log[-2000:]
