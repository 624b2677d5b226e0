"""The timing protocol shared by baselines and candidates: one set of rules, so speedups compare like with like.

CUDA: device events around each call, warm-up first, an L2 flush before every sample, inputs rotated among
several sets, and a device-wide synchronize before the closing event so work hidden on side streams is
counted; the fixed cost of that synchronize is calibrated on an empty region and subtracted. The median of
many samples is reported with its spread (inter-quartile range over the median). `graph` mode replays a
captured CUDA graph of several calls instead, for launch-bound problems: CPU load (builds beside the timing) cannot
move it, where per-call events of a 30 us problem moved 2.4x (issue 17). `auto`, the default, picks graph replay for a
problem whose eager estimate is under LAUNCH_BOUND_MS and events otherwise; the reference decides once per problem and
the candidate is timed by the same protocol. A replay's output is checked against a direct call, so a solution cannot
compute one thing when captured and another when called. Where capture fails, back-to-back calls between two events
(`burst`) stand in, and the note says why.
CPU: the same with a monotonic clock, a cache flush by writing a buffer larger than the last-level cache.

Every clock, event and synchronize function is captured when this module is imported, before any solution
code runs: a solution that patches `time` or `torch.cuda` afterwards changes nothing measured here.
"""

import statistics
import time
from dataclasses import asdict, dataclass

import torch

_perf_ns = time.perf_counter_ns
_EventBase = torch._C._CudaEventBase if hasattr(torch._C, "_CudaEventBase") else None
_Event = torch.cuda.Event
# CPU builds of torch define the base class without its methods.
_record = getattr(_EventBase, "record", None)
_elapsed = getattr(_EventBase, "elapsed_time", None)
_synchronize = getattr(torch._C, "_cuda_synchronize", None)
_zero = torch.Tensor.zero_
_fill = torch.Tensor.fill_
_allclose = torch.allclose
_Tensor = torch.Tensor
_CUDAGraph = torch.cuda.CUDAGraph
_no_grad = torch.no_grad
# The statistics too: a solution that replaces statistics.median changes nothing reported from here.
_median = statistics.median
_quantiles = statistics.quantiles

CPU_FLUSH_BYTES = 64 << 20
# Below this eager time (ms) a problem is launch-bound: `auto` times it, baselines and candidate alike, by graph replay.
LAUNCH_BOUND_MS = 0.1


@dataclass
class Timing:
    median_ms: float
    samples: int
    spread_pct: float
    min_ms: float
    max_ms: float
    mode: str
    calls_per_sample: int = 1
    note: str = ""
    # The protocol chosen for the problem ("events" or "graph"; "cpu-clock" on the CPU); `mode` says what timed it.
    protocol: str = ""
    # Graph replay only: whether the replayed output equals a direct call's (None where not checked).
    replay_matches: bool | None = None

    def to_json(self):
        return asdict(self)


def _summarize(samples, mode, calls=1, note=""):
    samples = sorted(samples)
    median = _median(samples)
    q = _quantiles(samples, n=4) if len(samples) >= 4 else [samples[0], median, samples[-1]]
    spread = 100.0 * (q[2] - q[0]) / median if median > 0 else 0.0
    return Timing(median, len(samples), spread, samples[0], samples[-1], mode, calls, note)


def _count(est_ms, budget_s, lo, hi):
    return int(max(lo, min(hi, budget_s * 1000.0 / max(est_ms, 1e-4))))


class _CudaClock:
    def __init__(self, device):
        self.stream = torch.cuda.current_stream(device)
        props = torch.cuda.get_device_properties(device)
        self.flush_buf = torch.empty(max(2 * props.L2_cache_size, 1 << 20), dtype=torch.uint8, device=device)
        self.gap_ms = 0.0
        # The timer's own cost: the minimum over empty samples, since a busy GPU (another process's kernels) only
        # ever adds to it, and an inflated gap would wipe out short kernels' times.
        self.gap_ms = min(self.sample(lambda: None) for _ in range(50))

    def flush(self):
        _zero(self.flush_buf)

    def sample(self, call):
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        self.flush()
        _record(start, self.stream)
        call()
        _synchronize()  # device-wide: side streams included
        _record(end, self.stream)
        _synchronize()
        return max(0.0, _elapsed(start, end) - self.gap_ms)


class _CpuClock:
    gap_ms = 0.0

    def __init__(self):
        self.flush_buf = torch.empty(CPU_FLUSH_BYTES, dtype=torch.uint8)
        self.turn = 0

    def flush(self):
        self.turn += 1
        self.flush_buf.fill_(self.turn & 0xFF)

    def sample(self, call):
        self.flush()
        t0 = _perf_ns()
        call()
        return (_perf_ns() - t0) / 1e6


def choose_protocol(config, device, estimate_ms):
    """How a problem is timed: CONFIG's timing, where `auto` on CUDA is graph replay for a launch-bound problem."""
    if device != "cuda":
        return "cpu-clock"
    if config.timing != "auto":
        return config.timing
    return "graph" if estimate_ms < LAUNCH_BOUND_MS else "events"


def measure(fn, input_sets, device, config, protocol=None):
    """Time fn(*inputs) for inputs rotated over INPUT_SETS; returns a Timing. PROTOCOL ("events" or "graph") is the
    problem's (the reference's choice, passed on to the candidate); None chooses by CONFIG and this function's time."""
    with _no_grad():
        clock = _CudaClock(device) if device == "cuda" else _CpuClock()
        n_sets = len(input_sets)
        calls = iter(range(1 << 62))
        run = lambda: fn(*input_sets[next(calls) % n_sets])  # noqa: E731
        warm, t0 = 0, _perf_ns()
        while warm < 3 or (_perf_ns() - t0) / 1e9 < config.warmup_s:
            clock.sample(run)
            warm += 1
        est = _median(clock.sample(run) for _ in range(3))
        protocol = choose_protocol(config, device, est) if protocol is None or device != "cuda" else protocol
        if protocol == "graph":
            try:
                timing = _measure_graph(fn, input_sets, clock, est, config)
            except Exception as exc:  # noqa: BLE001 -- any capture failure falls back, and says why
                note = f"graph capture failed ({type(exc).__name__}: {str(exc)[:200]}); timed by back-to-back calls"
                torch.cuda.synchronize()
                timing = _measure_burst(run, clock, est, config, note)
        else:
            timing = _measure_events(run, clock, est, config)
        timing.protocol = protocol
        return timing


def _measure_events(run, clock, est, config, note=""):
    n = _count(est, config.time_budget_s, config.min_samples, config.max_samples)
    mode = "events" if isinstance(clock, _CudaClock) else "cpu-clock"
    return _summarize([clock.sample(run) for _ in range(n)], mode, 1, note)


def _reps(est):
    # Enough calls per sample that launch gaps vanish, few enough that a sample stays short.
    return int(max(5, min(50, 0.5 / max(est, 1e-4))))


def _measure_burst(run, clock, est, config, note):
    """Events around many back-to-back calls: the GPU stays busy while the CPU queues the next launches."""
    reps = _reps(est)

    def burst():
        for _ in range(reps):
            run()

    n = _count(est * reps, config.time_budget_s, config.min_samples, config.max_samples)
    return _summarize([clock.sample(burst) / reps for _ in range(n)], "burst", reps, note)


def _measure_graph(fn, input_sets, clock, est, config):
    reps = _reps(est)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(3):
            fn(*input_sets[i % len(input_sets)])
    torch.cuda.current_stream().wait_stream(side)
    graph = _CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(reps):
            captured = fn(*input_sets[i % len(input_sets)])
    graph.replay()
    _synchronize()
    n = _count(est * reps, config.time_budget_s, config.min_samples, config.max_samples)
    samples = [clock.sample(graph.replay) / reps for _ in range(n)]
    timing = _summarize(samples, "graph", reps)
    timing.replay_matches = _replay_matches(graph, captured, fn, input_sets[(reps - 1) % len(input_sets)], config)
    return timing


def _outputs(value):
    if isinstance(value, _Tensor):
        return [value]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, _Tensor) for v in value):
        return list(value)
    return None


def _replay_matches(graph, captured, fn, inputs, config):
    """Whether the graph's last call, replayed into outputs poisoned with NaN, equals a direct call on its inputs: what
    was timed is what the function computes (None where the outputs are not tensors, or not floating point)."""
    replayed = _outputs(captured)
    if replayed is None or not all(t.is_floating_point() for t in replayed):
        return None
    for t in replayed:
        _fill(t, float("nan"))
    graph.replay()
    _synchronize()
    direct = _outputs(fn(*inputs))
    _synchronize()
    if direct is None or len(direct) != len(replayed):
        return False
    return all(
        a.shape == b.shape and bool(_allclose(a, b, rtol=config.rtol, atol=config.atol, equal_nan=True))
        for a, b in zip(replayed, direct)
    )
