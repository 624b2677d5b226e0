"""KernelBench-style solutions: C++ sources inlined and built with torch.utils.cpp_extension.load_inline inside
the jail (torch's full headers: slow, so one build per outcome)."""
import pytest

pytestmark = pytest.mark.slow

CPP = r'''
#include <torch/extension.h>

torch::Tensor add_relu(torch::Tensor x, torch::Tensor y) {
    auto out = torch::empty_like(x);
    const float* a = x.data_ptr<float>();
    const float* b = y.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) {
        float s = a[i] + b[i];
        o[i] = (s > 0.0f ? s : 0.0f) * 2.0f;
    }
    return out;
}
'''

SOLUTION = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""{cpp}"""

module = load_inline(name="ks_add_relu", cpp_sources=cpp_source, functions=["add_relu"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return module.add_relu(x.contiguous(), y.contiguous())
'''


def test_load_inline_solution_evaluates_ok(run_eval, files, elementwise):
    v = run_eval(elementwise, files.solution(SOLUTION.format(cpp=CPP.replace("#include <torch/extension.h>", ""))))
    assert v.status == "ok", (v.status, v.log[-3000:])
    assert v.violations == [] and v.correct and v.reward >= 0
    assert v.compile_s > 1.0  # the build happened inside the solution's import, and is reported as compile time


def test_load_inline_build_failure_is_a_compile_error(run_eval, files, elementwise):
    # The compiler fails at once on an option it does not know (a code error would first parse torch's headers
    # for a minute); load_inline raises, and the verdict says compile_error, with the compiler's complaint.
    source = SOLUTION.format(cpp=CPP.replace("#include <torch/extension.h>", "")).replace(
        "verbose=False", "verbose=False, extra_cflags=['-fno-such-option-ks']")
    v = run_eval(elementwise, files.solution(source))
    assert v.status == "compile_error", (v.status, v.log[-3000:])
    assert v.reward == -1
    assert "Error building extension" in v.log and "-fno-such-option-ks" in v.log
