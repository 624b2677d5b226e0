"""The CPU target's float math (ks_math.h: exp, log, log1p, tanh) against torch: within 1 ulp of the correctly rounded
value over a sweep of every kind of float (random bit patterns, subnormals, huge values, inf, NaN), libm's results
where the argument is special, and loops of it that vectorize; Mish and softplus kernels that keep torch's values."""

import ctypes
import re
import subprocess

import pytest
import torch

from agent.export import CPU_CFLAGS
from agent.heuristic.emit import CPP_PRELUDE

FUNCTIONS = {"expf": torch.exp, "logf": torch.log, "log1pf": torch.log1p, "tanhf": torch.tanh}
SPECIAL = [0.0, -0.0, 1.0, -1.0, 1e-45, -1e-45, 1e-40, 1.17549435e-38, 3.4e38, -3.4e38, 88.72283, 88.7228394,
           88.72284, -87.3, -103.9, -104.1, 0.625, -0.625, 9.0, 9.02, 10.0, 20.0, -0.99999994, -1.0000001,
           float("inf"), float("-inf"), float("nan")]  # fmt: skip


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    """The prelude's functions over arrays, each an `omp simd` loop compiled with the kernels' flags; and the
    compiler's report of the loops it vectorized."""
    folder = tmp_path_factory.mktemp("vector_math")
    loops = "".join(
        f'extern "C" void apply_{name}(const float* x, float* y, long n) {{\n'
        f"    #pragma omp simd\n    for (long i = 0; i < n; ++i) y[i] = {name}(x[i]);\n}}\n"
        for name in FUNCTIONS
    )
    (folder / "math.cpp").write_text(CPP_PRELUDE + loops)
    report = subprocess.run(
        ["g++", *CPU_CFLAGS, "-std=c++17", "-shared", "-fPIC", "-fopt-info-vec-optimized", "math.cpp", "-o", "math.so"],
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    return ctypes.CDLL(str(folder / "math.so")), report


def sweep():
    bits = torch.randint(-(2**31), 2**31 - 1, (1 << 20,), generator=torch.Generator().manual_seed(0))
    return torch.cat(
        [
            bits.to(torch.int32).view(torch.float32),
            torch.linspace(-100, 100, 100001),
            torch.linspace(-1, 1, 100001),
            torch.tensor(SPECIAL),
        ]
    ).contiguous()


def ordered(x):
    """Float32 X as integers of the same order, one apart per ulp (across zero too)."""
    bits = x.view(torch.int32).to(torch.int64)
    return torch.where(bits < 0, -(bits & 0x7FFFFFFF), bits)


def apply(library, name, x):
    y = torch.empty_like(x)
    getattr(library[0], f"apply_{name}")(ctypes.c_void_p(x.data_ptr()), ctypes.c_void_p(y.data_ptr()), x.numel())
    return y


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_the_math_is_within_one_ulp_of_correctly_rounded_with_libms_specials(library, name):
    x = sweep()
    got, want = apply(library, name, x), FUNCTIONS[name](x.double()).float()
    assert torch.equal(torch.isnan(got), torch.isnan(want))
    finite = ~torch.isnan(want)
    assert (ordered(got[finite]) - ordered(want[finite])).abs().max() <= 1
    # inf, 0 and overflow as torch's own float32 functions (which may flush a subnormal result: 1e-45's log1p)
    special = torch.tensor(SPECIAL)
    got, want = apply(library, name, special), FUNCTIONS[name](special)
    torch.testing.assert_close(got, want, rtol=2.5e-7, atol=2e-45, equal_nan=True)
    assert torch.equal(torch.isinf(got), torch.isinf(want)) and torch.equal(
        got[torch.isinf(got)], want[torch.isinf(want)]
    )


def test_the_math_loops_vectorize(library):
    vectorized = {int(line) for line in re.findall(r"math\.cpp:(\d+):\d+: optimized: loop vectorized", library[1])}
    lines = CPP_PRELUDE.count("\n") + 1 + 4 * torch.arange(len(FUNCTIONS)) + 2  # each function's `for` line
    assert set(lines.tolist()) <= vectorized, library[1]


MISH_SOFTPLUS = """import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x):
        return F.mish(x) + F.softplus(x, beta=2.0) + F.softplus(x, beta=0.5, threshold=5.0) * torch.tanh(x)


def get_inputs():
    return [torch.randn(4, 1000)]


def get_init_inputs():
    return []
"""


def test_mish_and_softplus_kernels_keep_torchs_values_past_the_threshold_and_at_inf_and_nan(cpu_solution):
    solution, model, files = cpu_solution(MISH_SOFTPLUS)
    assert "log1pf(" in files["kernels/fused.cpp"]
    x = torch.randn(4, 1000) * 20
    x[0, :5] = torch.tensor([float("inf"), float("-inf"), float("nan"), 1e30, -1e30])
    x[1, :6] = torch.tensor([10.0, 10.000001, 9.999999, 2.5, 5.0, 20.0])  # at the thresholds (beta * x > threshold)
    want, got = model(x), solution(x)
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6, equal_nan=True)
