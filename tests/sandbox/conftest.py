"""Fixtures of the sandbox tests: writers of problems, solutions and native workspaces, a fast evaluation config,
and the small problems most tests share (the run's sandbox cache is tests/conftest.py's ks_cache_dir).

Everything runs for real: jailed subprocesses, g++, the dispatch recorder. Tensors are small and the timing
budget short so that one evaluation takes a few seconds on a two-core machine.
"""

import json
import os
import re
import textwrap
import time
from pathlib import Path

import pytest

# The default memory limit (32 GB) is above what a CI machine has: a memory hog must meet the limit first.
TEST_MEMORY_MB = 4096
os.environ["KS_SANDBOX_MEMORY_MB"] = str(TEST_MEMORY_MB)
# One compute thread per worker: timings of tiny problems stay stable on a small, shared CI machine (two
# OpenMP threads on two busy cores stall at every barrier).
os.environ["KS_CPU_THREADS"] = "1"

from sandbox import settings  # noqa: E402 (after KS_CPU_THREADS is set)
from sandbox.config import EvalConfig  # noqa: E402

# sandbox.settings reads its limits once, at import: make them hold even if something imported it earlier.
settings.MEMORY_MB = TEST_MEMORY_MB
settings.CPU_THREADS = 1


# -- the shared problems ------------------------------------------------------------------------------------
ELEMENTWISE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """An elementwise chain: relu(x + y) * 2."""

    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return torch.relu(x + y) * 2.0


def get_inputs():
    return [torch.randn(128, 512), torch.randn(128, 512)]


def get_init_inputs():
    return []
'''

ROWSUM = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """A row-wise sum reduction."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.sum(dim=1)


def get_inputs():
    return [torch.randn(256, 256)]


def get_init_inputs():
    return []
'''

LINEAR_RELU = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """A linear layer with weights, then relu."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))


def get_inputs():
    return [torch.randn(64, 256)]


def get_init_inputs():
    return [256, 128]
'''

# Honest solutions: numpy computes, PyTorch only wraps memory (no PyTorch compute operator is reached).
HONEST_ELEMENTWISE = """
import numpy as np
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return torch.from_numpy(np.maximum(x.numpy() + y.numpy(), 0.0) * np.float32(2.0))
"""

HONEST_ROWSUM = """
import numpy as np
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.from_numpy(np.ascontiguousarray(x.numpy().sum(axis=1, dtype=np.float32)))
"""

HONEST_LINEAR_RELU = """
import numpy as np
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        w = self.linear.weight.detach().numpy()
        b = self.linear.bias.detach().numpy()
        return torch.from_numpy(np.ascontiguousarray(np.maximum(x.numpy() @ w.T + b, 0.0), dtype=np.float32))
"""

# A stable-ABI native workspace for ELEMENTWISE: plain C++ kernel, a binding that sees only torch's C shim.
STABLE_WORKSPACE = {
    "kernels/add_relu.cpp": """
        #include <algorithm>
        #include <cstdint>

        void add_relu_forward(const float* x, const float* y, float* out, int64_t n) {
            for (int64_t i = 0; i < n; ++i) out[i] = std::max(x[i] + y[i], 0.0f) * 2.0f;
        }
        """,
    "binding.cpp": """
        #include <torch/csrc/stable/library.h>
        #include <torch/csrc/stable/tensor.h>
        #include <torch/csrc/stable/ops.h>

        using torch::stable::Tensor;

        void add_relu_forward(const float* x, const float* y, float* out, int64_t n);

        Tensor add_relu(Tensor x, Tensor y) {
            Tensor out = torch::stable::empty_like(x);
            add_relu_forward(reinterpret_cast<const float*>(x.data_ptr()), reinterpret_cast<const float*>(y.data_ptr()),
                             reinterpret_cast<float*>(out.data_ptr()), x.numel());
            return out;
        }

        STABLE_TORCH_LIBRARY(KS_NAMESPACE, m) { m.def("add_relu(Tensor x, Tensor y) -> Tensor"); }
        STABLE_TORCH_LIBRARY_IMPL(KS_NAMESPACE, CPU, m) { m.impl("add_relu", TORCH_BOX(&add_relu)); }
        """,
    "model_new.py": """
        import torch.nn as nn

        from sandbox.native import load_extension

        ext = load_extension(__file__)


        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()

            def forward(self, x, y):
                return ext.add_relu(x.contiguous(), y.contiguous())
        """,
}

# The elementwise problem's kernel, specialized the way the heuristic's kernels once were: the element count is
# checked against the problem's, and anything else is refused.
SPECIALIZED_BINDING_CHECK = """
        Tensor add_relu(Tensor x, Tensor y) {
            if (x.numel() != 65536 || y.numel() != 65536)
                throw std::runtime_error("add_relu: expected 65536 elements, got " + std::to_string(x.numel()));
            Tensor out = torch::stable::empty_like(x);"""


def _specialized(stable):
    files = dict(stable)
    binding = textwrap.dedent(files["binding.cpp"])
    binding = binding.replace(
        "using torch::stable::Tensor;", "#include <stdexcept>\n#include <string>\n\nusing torch::stable::Tensor;"
    )
    binding = binding.replace(
        "Tensor add_relu(Tensor x, Tensor y) {\n    Tensor out = torch::stable::empty_like(x);",
        textwrap.dedent(SPECIALIZED_BINDING_CHECK).strip("\n"),
    )
    assert "65536" in binding
    files["binding.cpp"] = binding
    return files


SPECIALIZED_WORKSPACE = _specialized(STABLE_WORKSPACE)

# A classic binding (torch/extension.h + pybind11), compiled against the precompiled header. `add_relu` is an
# honest kernel; `cheat` calls at::relu from C++, which the dispatch recorder must see. Both share one build.
CLASSIC_BINDING = {
    "kernels/add_relu.cpp": STABLE_WORKSPACE["kernels/add_relu.cpp"],
    "binding.cpp": """
        #include <torch/extension.h>

        void add_relu_forward(const float* x, const float* y, float* out, int64_t n);

        torch::Tensor add_relu(torch::Tensor x, torch::Tensor y) {
            auto out = torch::empty_like(x);
            add_relu_forward(x.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(), x.numel());
            return out;
        }

        torch::Tensor cheat(torch::Tensor x, torch::Tensor y) {
            return at::relu(at::add(x, y)) * 2.0;
        }

        PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
            m.def("add_relu", &add_relu);
            m.def("cheat", &cheat);
        }
        """,
}


def classic_workspace_files(function):
    """CLASSIC_BINDING with a model_new.py whose forward calls ext.FUNCTION(x, y)."""
    return {
        **CLASSIC_BINDING,
        "model_new.py": f"""
        import torch.nn as nn

        from sandbox.native import load_extension

        ext = load_extension(__file__)


        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()

            def forward(self, x, y):
                return ext.{function}(x.contiguous(), y.contiguous())
        """,
    }


class Files:
    """Writes problems, inline solutions and native workspaces into a test's tmp_path."""

    def __init__(self, root):
        self.root = Path(root)
        self._n = 0

    def _name(self, stem, suffix=""):
        self._n += 1
        return self.root / f"{stem}{self._n}{suffix}"

    def problem(self, source, name=None):
        path = self.root / name if name else self._name("problem", ".py")
        path.write_bytes(source if isinstance(source, bytes) else textwrap.dedent(source).encode())
        return path

    def solution(self, source, name=None):
        path = self.root / name if name else self._name("solution", ".py")
        path.write_text(textwrap.dedent(source))
        return path

    def workspace(self, files, name=None):
        folder = self.root / name if name else self._name("workspace")
        for rel, text in files.items():
            target = folder / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(textwrap.dedent(text).lstrip("\n"))
        return folder


@pytest.fixture
def files(tmp_path):
    return Files(tmp_path)


@pytest.fixture(scope="module")
def module_files(tmp_path_factory):
    """Files shared by a module's tests, for what is costly to make once per test (an evaluation)."""
    return Files(tmp_path_factory.mktemp("module"))


@pytest.fixture(scope="session")
def fast_config():
    """A quick CPU evaluation: two trials, no torch.compile baseline, a short timing budget, a bounded timeout."""
    return EvalConfig(
        device="cpu",
        trials=2,
        compiled_baseline=False,
        time_budget_s=0.2,
        warmup_s=0.05,
        min_samples=10,
        max_samples=100,
        timeout_s=120,
    )


@pytest.fixture
def run_eval(fast_config):
    """evaluate(problem, solution, **overrides) with the fast config."""
    from sandbox import evaluate

    def run(problem, solution, **overrides):
        return evaluate(problem, solution, fast_config, **overrides)

    return run


@pytest.fixture
def elementwise(files):
    return files.problem(ELEMENTWISE, "elementwise.py")


@pytest.fixture
def rowsum(files):
    return files.problem(ROWSUM, "rowsum.py")


@pytest.fixture
def linear_relu(files):
    return files.problem(LINEAR_RELU, "linear_relu.py")


@pytest.fixture
def honest(files):
    """The honest numpy solution of ELEMENTWISE."""
    return files.solution(HONEST_ELEMENTWISE, "honest.py")


@pytest.fixture(scope="session")
def sources():
    """The shared sources, for tests that build variants of them."""
    return {
        "ELEMENTWISE": ELEMENTWISE,
        "ROWSUM": ROWSUM,
        "LINEAR_RELU": LINEAR_RELU,
        "HONEST_ELEMENTWISE": HONEST_ELEMENTWISE,
        "HONEST_ROWSUM": HONEST_ROWSUM,
        "HONEST_LINEAR_RELU": HONEST_LINEAR_RELU,
        "STABLE_WORKSPACE": STABLE_WORKSPACE,
        "SPECIALIZED_WORKSPACE": SPECIALIZED_WORKSPACE,
        "classic_workspace_files": classic_workspace_files,
    }


# -- probes: solution code that reports what it could do from inside the jail --------------------------------
PROBE_PREFIX = "KS-PROBE "


def probe_solution(body):
    """An inline solution whose import runs BODY (filling the dict `result`) and then fails with the result:
    the verdict is load_error and its log carries the JSON."""
    return (
        "import json, os, socket, sys\nresult = {}\n"
        + textwrap.dedent(body)
        + f"\nraise RuntimeError({PROBE_PREFIX!r} + json.dumps(result))\n"
    )


def probe_result(verdict):
    assert verdict.status == "load_error", (verdict.status, verdict.log[-3000:])
    found = re.findall(re.escape(PROBE_PREFIX) + r"(\{.*\})", verdict.log)
    assert found, verdict.log[-3000:]
    return json.loads(found[-1])


@pytest.fixture
def probe(files, elementwise, run_eval):
    """probe(body, **overrides): run BODY as solution code inside the jail and return its `result` dict."""

    def run(body, **overrides):
        return probe_result(run_eval(elementwise, files.solution(probe_solution(body)), **overrides))

    return run


def sandbox_uids(wait=0.0):
    """Live processes that run as one of this test process's jail uids (one per role; see sandbox.isolation.Jail):
    stragglers of our evaluations, not those of other workers on the machine. With WAIT, give killed ones that
    many seconds to go."""
    import psutil

    ours = {settings.UID_BASE + (os.getpid() * 4 + slot) % 30000 for slot in range(4)}
    deadline = time.monotonic() + wait
    while True:
        found = []
        for proc in psutil.process_iter(["uids", "pid", "status"]):
            uids = proc.info["uids"]
            if uids and uids.real in ours and proc.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(proc.info["pid"])
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


@pytest.fixture
def jailed_processes():
    return sandbox_uids
