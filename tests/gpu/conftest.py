"""GPU tests: skipped unless torch sees a CUDA device; KernelBench problems by name (the run's fresh sandbox cache is
tests/conftest.py's).

KernelBench's problems are read from tests/gpu/data/problems.jsonl (copied there on a GPU machine, where only
the repository travels), else from ../shared/kernelbench/problems.jsonl beside the repository.
"""

import fcntl
import json
import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

import pytest

GPU_TESTS = Path(__file__).resolve().parent
REPO = GPU_TESTS.parents[1]
PROBLEM_SOURCES = (GPU_TESTS / "data" / "problems.jsonl", REPO.parent / "shared" / "kernelbench" / "problems.jsonl")
SOLUTIONS = GPU_TESTS / "solutions"
HACKS = GPU_TESTS / "hacks"
TEST_PROBLEMS = GPU_TESTS / "problems"

# Small enough that an evaluation of a small problem takes seconds; the protocol itself is unchanged.
FAST = dict(
    device="cuda",
    trials=2,
    time_budget_s=0.3,
    warmup_s=0.05,
    min_samples=10,
    max_samples=100,
    input_sets=2,
    compiled_baseline=False,
)
# Validations run two at a time: model construction and process start-up run on the CPU, and two problems of
# 6 GB inputs (four such tensors each while validating) fit in GPU memory together.
VALIDATION_WORKERS = 2
# Under pytest-xdist (`make test-gpu` where it is installed), at most this many evaluations of KernelBench's level-1
# shapes (gigabytes of inputs, copied for every trial) hold the GPU at once: eight at once ran out of 139 GiB.
GPU_MEMORY_SLOTS = int(os.environ.get("KS_GPU_MEMORY_SLOTS", "3"))
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER")

_verdicts = []


def _cuda_available():
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:  # noqa: BLE001 -- no usable torch is the same as no GPU here
        return False


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu_fault: injects a GPU fault or hang; runs after every other GPU test")
    config.addinivalue_line(
        "markers", "gpu_quiet: compares timings, so `make test-gpu` runs it alone, never beside other evaluations"
    )


def pytest_collection_modifyitems(config, items):
    # Faults last: should one leave the GPU unusable, every other test has already run.
    items.sort(key=lambda item: item.get_closest_marker("gpu_fault") is not None)
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device: tests/gpu runs where torch.cuda.is_available()")
    for item in items:
        if GPU_TESTS in Path(str(item.fspath)).parents:
            item.add_marker(skip)


@dataclass(frozen=True)
class Case:
    """A KernelBench problem with its handwritten solution."""

    level: int
    name: str
    output_shape: tuple
    big: bool = False  # gigabytes of input and output on the GPU

    @property
    def key(self):
        return f"level{self.level}/{self.name}"

    @property
    def solution(self):
        folder = SOLUTIONS / f"level{self.level}" / self.name
        return folder if folder.is_dir() else folder.with_suffix(".py")


CASES = (
    Case(1, "1_Square_matrix_multiplication_", (4096, 4096)),
    Case(1, "19_ReLU", (4096, 393216), big=True),
    Case(1, "23_Softmax", (4096, 393216), big=True),
    Case(1, "47_Sum_reduction_over_a_dimension", (128, 1, 4095), big=True),
    Case(1, "95_CrossEntropyLoss", ()),
    Case(2, "9_Matmul_Subtract_Multiply_ReLU", (1024, 8192)),
    Case(2, "59_Matmul_Swish_Scaling", (128, 32768)),
    Case(2, "63_Gemm_ReLU_Divide", (1024, 8192)),
    Case(2, "70_Gemm_Sigmoid_Scaling_ResidualAdd", (1024, 8192)),
    Case(2, "86_Matmul_Divide_GELU", (1024, 8192)),
)


def pytest_generate_tests(metafunc):
    """A test that takes `case` runs once per KernelBench case."""
    if "case" in metafunc.fixturenames:
        metafunc.parametrize("case", CASES, ids=[case.key for case in CASES])


class KernelBench:
    """Writes KernelBench problems, found by level and name, into a folder of this session."""

    def __init__(self, folder):
        self.folder = folder
        self._codes = None

    @property
    def source(self):
        return next((p for p in PROBLEM_SOURCES if p.is_file()), None)

    def _load(self):
        if self._codes is None:
            if self.source is None:
                pytest.skip(
                    "KernelBench problems not found: copy ../shared/kernelbench/problems.jsonl to "
                    f"{PROBLEM_SOURCES[0].relative_to(REPO)}"
                )
            self._codes = {}
            for line in self.source.read_text().splitlines():
                if line.strip():
                    row = json.loads(line)
                    self._codes[(row["level"], row["name"])] = row["code"]
        return self._codes

    def problem(self, level, name):
        codes = self._load()
        if (level, name) not in codes:
            raise KeyError(f"no level {level} problem named {name} in {self.source}")
        path = self.folder / f"level{level}_{name}.py"
        if not path.exists():
            path.write_text(codes[(level, name)])
        return path


@pytest.fixture(scope="session")
def kernelbench(tmp_path_factory):
    return KernelBench(tmp_path_factory.mktemp("kernelbench"))


def _memory_heavy(item):
    """Whether a test evaluates one of KernelBench's level-1 shapes or a case of gigabytes."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    case = params.get("case")
    return params.get("level") == 1 or bool(case is not None and case.big)


@pytest.fixture(autouse=True)
def gpu_memory_slot(request):
    """Under xdist, a memory-heavy test waits for one of GPU_MEMORY_SLOTS slots (a file lock shared by workers)."""
    if not XDIST_WORKER or not _memory_heavy(request.node):
        yield
        return
    folder = Path(tempfile.gettempdir()) / f"ks-gpu-memory-slots-{os.getuid()}"
    folder.mkdir(exist_ok=True)
    while True:
        for slot in range(GPU_MEMORY_SLOTS):
            handle = open(folder / f"slot{slot}", "w")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
                handle.close()
            return
        time.sleep(0.5)


class _ValidatedOnDemand(dict):
    """validated_specs under xdist: a worker validates only the cases its tests ask for, one at a time."""

    def __init__(self, paths):
        super().__init__()
        self.paths = paths

    def __missing__(self, key):
        from sandbox.validate import validate_problem

        with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
            try:
                self[key] = ("ok", pool.submit(validate_problem, str(self.paths[key]), "cuda").result())
            except Exception as exc:  # noqa: BLE001 -- the test reports the reason
                self[key] = ("invalid", f"{type(exc).__name__}: {exc}")
        return self[key]


@pytest.fixture(scope="session")
def validated_specs(kernelbench):
    """{case key: ("ok", spec) or ("invalid", reason)} for every case, validated on the GPU in parallel (on demand
    under xdist, where each worker runs a share of the cases)."""
    from sandbox.validate import validate_problem

    paths = {case.key: kernelbench.problem(case.level, case.name) for case in CASES}
    if XDIST_WORKER:
        return _ValidatedOnDemand(paths)
    # Big problems first, so that they never end up waiting behind each other at the end.
    order = sorted(CASES, key=lambda case: not case.big)
    results = {}
    with ProcessPoolExecutor(VALIDATION_WORKERS, mp_context=get_context("spawn")) as pool:
        futures = {case.key: pool.submit(validate_problem, str(paths[case.key]), "cuda") for case in order}
        for key, future in futures.items():
            try:
                results[key] = ("ok", future.result())
            except Exception as exc:  # noqa: BLE001 -- the test reports the reason
                results[key] = ("invalid", f"{type(exc).__name__}: {exc}")
    return results


@pytest.fixture
def fast_protocol():
    """The FAST protocol's settings, for tests that build their own EvalConfig."""
    return dict(FAST)


@pytest.fixture
def record_verdict():
    """Adds a verdict (a Verdict or its JSON) to the session's summary under LABEL."""
    from sandbox.verdict import Verdict

    def record(label, verdict):
        _verdicts.append((label, verdict if isinstance(verdict, Verdict) else Verdict.from_json(verdict)))

    return record


@pytest.fixture
def run_eval():
    """sandbox.evaluate with the FAST protocol (overridable); every verdict lands in the session's summary."""
    from sandbox import evaluate

    def run(problem, solution, label=None, **overrides):
        verdict = evaluate(str(problem), str(solution), **{**FAST, **overrides})
        _verdicts.append((label or f"{Path(str(solution)).name} on {Path(str(problem)).stem}", verdict))
        return verdict

    return run


def pytest_terminal_summary(terminalreporter):
    if not _verdicts:
        return
    terminalreporter.section("sandbox verdicts (tests/gpu)")
    terminalreporter.write_line(
        f"{'evaluation':58} {'status':13} {'reward':>6} {'ms':>9} {'x eager':>8} "
        f"{'spread%':>8} {'compile s':>9} {'wall s':>7}"
    )
    for label, v in _verdicts:
        spread = (v.timing.get("candidate") or {}).get("spread_pct")
        cells = [
            f"{label[:58]:58}",
            f"{v.status:13}",
            f"{v.reward:>6}",
            f"{v.runtime_ms:9.4f}" if v.runtime_ms is not None else f"{'-':>9}",
            f"{v.speedup_vs_eager:8.2f}" if v.speedup_vs_eager is not None else f"{'-':>8}",
            f"{spread:8.1f}" if spread is not None else f"{'-':>8}",
            f"{v.compile_s:9.1f}" if v.compile_s is not None else f"{'-':>9}",
            f"{v.wall_s:7.1f}" if v.wall_s is not None else f"{'-':>7}",
        ]
        terminalreporter.write_line(" ".join(cells))
    report = Path(os.environ.get("KS_GPU_REPORT", ""))
    if report.name:  # a JSON list of verdicts, extended by every session (and xdist worker) that names it
        with open(report.with_name(report.name + ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            earlier = json.loads(report.read_text()) if report.is_file() else []
            rows = earlier + [{"evaluation": label, **v.to_json()} for label, v in _verdicts]
            report.write_text(json.dumps(rows, indent=1))
