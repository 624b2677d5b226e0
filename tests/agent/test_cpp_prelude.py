"""The C++ target's branch-free float math (agent/heuristic/emit.py's prelude) against libm, compiled as kernels are."""

import subprocess

from agent.heuristic.emit import CPP_PRELUDE

CHECK = r"""
#include <cstdio>
#include <limits>
int main() {
    double worst = 0;
    int wrong = 0;
    for (int i = -1200000; i <= 900000; ++i) {  // x from -120 to 90: subnormal results, 0, inf
        const float x = i * 1e-4f;
        const float got = expf(x), want = std::exp(x);
        if (std::isinf(want) || want < 1.2e-38f) {  // past float's range, or subnormal: within 2 units of 2^-149
            wrong += std::isinf(want) ? !std::isinf(got) : std::fabs(got - want) > 2.9e-45f;
            continue;
        }
        const double rel = std::fabs((double)got - want) / want;
        worst = rel > worst ? rel : worst;
    }
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::printf("%g %d %d %d\n", worst, wrong, (int)std::isnan(expf(nan)), (int)std::isinf(tanhf(1000.0f)));
}
"""


def test_exp_is_libms_over_floats_whole_range_overflow_and_subnormals_included(tmp_path):
    source = tmp_path / "check.cpp"
    source.write_text(CPP_PRELUDE + CHECK)
    flags = ["-O3", "-std=c++17", "-fno-math-errno", "-fno-trapping-math"]  # the CPU target's kernel flags
    subprocess.run(["g++", *flags, str(source), "-o", str(tmp_path / "check")], check=True)
    worst, wrong, nan, tanh_inf = subprocess.run(
        [str(tmp_path / "check")], capture_output=True, text=True, check=True
    ).stdout.split()
    assert float(worst) < 2.5e-7  # two float ulps
    assert int(wrong) == 0  # inf past ln(FLT_MAX) (e^88 before), subnormals as libm's (2^-125 floor before)
    assert int(nan) == 1 and int(tanh_inf) == 0
