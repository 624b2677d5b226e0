"""The timing protocol on CPU (sandbox.timing.measure): warm-up, many samples, the median with its spread,
inputs rotated among sets, and clocks captured at import."""

import time

import pytest
import torch

from sandbox.config import EvalConfig
from sandbox.timing import measure

CONFIG = EvalConfig(device="cpu", time_budget_s=0.15, warmup_s=0.02, min_samples=10, max_samples=60)


def _spin(ms):
    def fn(*inputs):
        end = time.perf_counter() + ms / 1000
        while time.perf_counter() < end:
            pass

    return fn


def test_a_busy_function_measures_what_it_takes():
    t = measure(_spin(2.0), [[torch.zeros(1)]], "cpu", CONFIG)
    assert t.mode == "cpu-clock" and t.calls_per_sample == 1
    # never less than it takes; the fastest sample one call's time (a wall-clock spin descheduled on a loaded host
    # takes longer, so the median may be above it)
    assert 1.9 <= t.min_ms <= 3.0, t
    assert t.min_ms <= t.median_ms <= t.max_ms
    assert t.spread_pct >= 0.0
    assert CONFIG.min_samples <= t.samples <= CONFIG.max_samples


def test_a_slower_function_measures_slower():
    fast = measure(_spin(0.5), [[torch.zeros(1)]], "cpu", CONFIG)
    slow = measure(_spin(3.0), [[torch.zeros(1)]], "cpu", CONFIG)
    assert slow.median_ms > 3 * fast.median_ms, (fast, slow)


def test_samples_follow_the_budget():
    # A 5 ms function with a 0.15 s budget: about 30 samples; a tiny one hits max_samples.
    t = measure(_spin(5.0), [[torch.zeros(1)]], "cpu", CONFIG)
    assert 10 <= t.samples <= 40, t
    tiny = measure(lambda *a: None, [[torch.zeros(1)]], "cpu", CONFIG)
    assert tiny.samples == CONFIG.max_samples
    assert tiny.median_ms < 0.5


def test_inputs_are_rotated_among_the_sets():
    seen = []
    sets = [[torch.full((1,), float(i))] for i in range(3)]
    measure(lambda x: seen.append(int(x.item())), sets, "cpu", CONFIG)
    assert set(seen) == {0, 1, 2}
    assert seen[:6] == [0, 1, 2, 0, 1, 2]


def test_a_real_torch_workload_is_timed_sanely():
    x = torch.randn(512, 512)
    t = measure(lambda a: a @ a, [[x]], "cpu", CONFIG)
    assert 0.0 < t.median_ms < 1000.0 and t.samples >= CONFIG.min_samples


def test_clocks_patched_after_import_change_nothing(monkeypatch):
    # The timing module captured its clock when imported: patching time's functions now is not seen.
    monotonic_ns = time.monotonic_ns

    def spin(*inputs):
        end = monotonic_ns() + 1_000_000
        while monotonic_ns() < end:
            pass

    monkeypatch.setattr(time, "perf_counter_ns", lambda: 0)
    monkeypatch.setattr(time, "perf_counter", lambda: 0.0)
    t = measure(spin, [[torch.zeros(1)]], "cpu", CONFIG)
    assert t.median_ms >= 0.9, t


def test_the_summary_reports_quartile_spread():
    from sandbox.timing import _summarize

    t = _summarize([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], "cpu-clock")
    assert t.median_ms == 5.0 and t.min_ms == 1.0 and t.max_ms == 9.0 and t.samples == 9
    assert t.spread_pct == pytest.approx(100.0 * (7.5 - 2.5) / 5.0)


# -- the protocol a problem is timed by (issue 17: launch-bound problems by graph replay) --------------------------
def test_auto_times_a_launch_bound_cuda_problem_by_graph_replay_and_others_by_events():
    from sandbox.timing import LAUNCH_BOUND_MS, choose_protocol

    auto = EvalConfig(device="cuda")
    assert auto.timing == "auto"
    assert choose_protocol(auto, "cuda", 0.03) == "graph"
    assert choose_protocol(auto, "cuda", LAUNCH_BOUND_MS * 0.99) == "graph"
    assert choose_protocol(auto, "cuda", LAUNCH_BOUND_MS) == "events"
    assert choose_protocol(auto, "cuda", 2.5) == "events"
    # A protocol asked for is kept whatever the time; the CPU has its one clock.
    assert choose_protocol(auto.replace(timing="events"), "cuda", 0.01) == "events"
    assert choose_protocol(auto.replace(timing="graph"), "cuda", 5.0) == "graph"
    assert choose_protocol(auto, "cpu", 0.01) == "cpu-clock"


def test_a_protocol_handed_down_is_what_the_timing_reports():
    # The candidate gets the reference's protocol; on the CPU every protocol is the CPU clock.
    t = measure(_spin(0.2), [[torch.zeros(1)]], "cpu", CONFIG, "graph")
    assert t.protocol == "cpu-clock" and t.mode == "cpu-clock" and t.replay_matches is None
    assert measure(_spin(0.2), [[torch.zeros(1)]], "cpu", CONFIG).protocol == "cpu-clock"
