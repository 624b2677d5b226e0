"""The sandbox against solutions that cheat or break, on a real GPU: work hidden on a side stream is still timed,
a faulting or hanging kernel ends its own evaluation only, an output written in part fails on NaN poisoning,
PyTorch compute reached from C++ or a Python custom op is a violation, and graph timing steadies tiny kernels.

Most variants come from one test double, tests/gpu/hacks/scale (y = 2x + 1), whose model_new.py picks the
behaviour; its kernels and binding never change, so all of them share one build.
"""

import shutil
from pathlib import Path

import pytest

from sandbox.native import build_workspace

pytestmark = pytest.mark.gpu

HACKS = Path(__file__).resolve().parent / "hacks"
PROBLEMS = HACKS.parent / "problems"
SCALE_SHIFT = PROBLEMS / "scale_shift.py"
TINY_SCALE_SHIFT = PROBLEMS / "tiny_scale_shift.py"
SMALL_MATMUL = PROBLEMS / "small_matmul.py"
SPIN_US = 200  # long enough to time reliably, short enough to keep each evaluation quick


@pytest.fixture(scope="module")
def scale_variant(tmp_path_factory):
    """scale_variant(behavior, spin_us=0): a copy of the scale workspace that behaves so."""
    root = tmp_path_factory.mktemp("scale-variants")

    def make(behavior, spin_us=0):
        folder = root / f"{behavior}-{spin_us}"
        if not folder.exists():
            shutil.copytree(HACKS / "scale", folder)
            source = (folder / "model_new.py").read_text()
            patched = source.replace('BEHAVIOR = "honest"', f'BEHAVIOR = "{behavior}"').replace(
                "SPIN_US = 0", f"SPIN_US = {spin_us}"
            )
            assert patched.count(f'BEHAVIOR = "{behavior}"') == 1 and f"SPIN_US = {spin_us}" in patched
            (folder / "model_new.py").write_text(patched)
        return folder

    return make


@pytest.mark.gpu_quiet
def test_work_on_a_side_stream_is_timed_or_refused(scale_variant, run_eval):
    # Events (the protocol of problems above the launch bound): the device-wide synchronize counts the side stream.
    honest = run_eval(
        SCALE_SHIFT, scale_variant("honest", SPIN_US), label="scale, same stream, 200 us spin, events", timing="events"
    )
    hidden = run_eval(
        SCALE_SHIFT,
        scale_variant("side_stream", SPIN_US),
        label="scale, side stream, 200 us spin, events",
        timing="events",
    )
    assert honest.status == "ok", honest.log
    assert hidden.status == "ok", hidden.log
    assert honest.runtime_ms >= 0.5 * SPIN_US / 1000
    # Without the device-wide synchronize the side stream's 200 us would vanish from the measurement; the
    # L2 flush before each sample may overlap its start, hence the margin.
    assert hidden.runtime_ms >= 0.6 * honest.runtime_ms, (hidden.runtime_ms, honest.runtime_ms)
    # Graph replay (auto picks it for this tiny problem): work on a stream the capture never saw is not replayed, the
    # replayed output differs from a direct call's, and the verdict is a violation (H100, 2026-11-25: so it was).
    replayed = run_eval(SCALE_SHIFT, scale_variant("side_stream", SPIN_US), label="scale, side stream, auto")
    assert replayed.status == "violation", (replayed.status, replayed.log)
    assert replayed.timing["candidate"]["mode"] == "graph" and replayed.reward == -1


@pytest.mark.gpu_fault
def test_an_illegal_memory_access_crashes_only_its_own_evaluation(scale_variant, run_eval):
    crashed = run_eval(SCALE_SHIFT, scale_variant("illegal_address"), label="scale, illegal address")
    assert crashed.status == "crashed", f"{crashed.status}: {crashed.log}"
    assert not crashed.correct and crashed.reward == -1
    assert "illegal" in crashed.log.lower()
    after = run_eval(SCALE_SHIFT, scale_variant("honest"), label="scale, right after the crash")
    assert after.status == "ok", after.log
    assert after.correct and after.reward >= 1


@pytest.mark.gpu_fault
def test_a_hanging_kernel_times_out(scale_variant, run_eval):
    workspace = scale_variant("hang")
    build_workspace(workspace, "cuda")  # built beforehand, so that the short limit below covers the run only
    verdict = run_eval(SCALE_SHIFT, workspace, label="scale, kernel never ends", timeout_s=15)
    assert verdict.status == "timeout", f"{verdict.status}: {verdict.log}"
    assert verdict.reward == -1
    assert verdict.wall_s < 120


def test_an_output_written_in_part_is_incorrect(scale_variant, run_eval):
    verdict = run_eval(SCALE_SHIFT, scale_variant("half_output"), label="scale, half the output")
    assert verdict.status == "incorrect", f"{verdict.status}: {verdict.log}"
    assert "NaN" in verdict.log
    assert verdict.reward == -1


def test_aten_mm_called_from_a_stable_binding_is_a_violation(run_eval):
    verdict = run_eval(SMALL_MATMUL, HACKS / "dispatcher_mm", label="aten::mm through the C++ dispatcher")
    assert verdict.status == "violation", f"{verdict.status}: {verdict.log}"
    assert any("aten::mm" in v for v in verdict.violations), verdict.violations
    assert verdict.reward == -1


def test_torch_matmul_in_a_python_custom_op_is_a_violation(run_eval):
    verdict = run_eval(SMALL_MATMUL, HACKS / "python_op_matmul.py", label="torch.matmul in a Python custom op")
    assert verdict.status == "violation", f"{verdict.status}: {verdict.log}"
    assert any("aten::" in v for v in verdict.violations), verdict.violations


@pytest.mark.slow
def test_at_matmul_in_a_classic_binding_is_a_violation(run_eval):
    # The classic binding compiles against the precompiled torch header, built on first use (tens of seconds).
    verdict = run_eval(SMALL_MATMUL, HACKS / "classic_matmul", label="at::matmul in a classic binding", timeout_s=300)
    assert verdict.status == "violation", f"{verdict.status}: {verdict.log}"
    assert any("aten::" in v for v in verdict.violations), verdict.violations


@pytest.mark.gpu_quiet
def test_graph_timing_is_steadier_than_events_for_a_tiny_kernel(scale_variant, run_eval):
    workspace = scale_variant("honest")
    events = run_eval(TINY_SCALE_SHIFT, workspace, label="tiny scale, events", timing="events", time_budget_s=0.5)
    graph = run_eval(TINY_SCALE_SHIFT, workspace, label="tiny scale, graph", timing="graph", time_budget_s=0.5)
    assert events.status == "ok", events.log
    assert graph.status == "ok", graph.log
    assert events.timing["candidate"]["mode"] == "events"
    assert graph.timing["candidate"]["mode"] == "graph", graph.timing["candidate"].get("note")
    assert graph.timing["candidate"]["calls_per_sample"] > 1
    # One percentage point of slack: both spreads can be near zero on a quiet GPU.
    assert graph.timing["candidate"]["spread_pct"] <= events.timing["candidate"]["spread_pct"] + 1.0, (
        graph.timing["candidate"],
        events.timing["candidate"],
    )
