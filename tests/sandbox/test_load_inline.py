"""KernelBench-style solutions: sources inlined and built with torch.utils.cpp_extension.load_inline inside the jail,
through the sandbox's fast build (sandbox/native/inline.py: the C++ unit against a precompiled torch header), or by
torch's own function where the fast build cannot honour an option."""

import re
import textwrap

import pytest

pytestmark = pytest.mark.slow

CPP = r"""
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
"""

SOLUTION = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""{cpp}"""

module = load_inline(name="{name}", cpp_sources=cpp_source, functions={functions}, verbose=False{options})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return module.add_relu(x.contiguous(), y.contiguous())
'''


def solution(cpp=CPP, name="ks_add_relu", functions='["add_relu"]', options=""):
    return SOLUTION.format(cpp=cpp, name=name, functions=functions, options=options)


def test_a_load_inline_solution_builds_through_the_precompiled_header_and_evaluates_ok(run_eval, files, elementwise):
    v = run_eval(elementwise, files.solution(solution()))
    assert v.status == "ok", (v.status, v.log[-3000:])
    assert v.violations == [] and v.correct and v.reward >= 1
    # The fast build ran, through the header the harness prepared and exposed (the jail cannot build one).
    (built,) = v.timing["extensions"]
    assert (built["name"], built["via"], built["pch"], built["cached"]) == ("ks_add_relu", "native", True, False)
    assert "precompiled header" in v.timing["stages_s"]
    assert v.compile_s >= built["seconds"] > 0  # the build happened inside the solution's import: compile time


def test_a_build_failure_is_a_compile_error(run_eval, files, elementwise):
    # The compiler fails at once on an option it does not know; the verdict says compile_error, with torch's message
    # and the compiler's complaint.
    v = run_eval(elementwise, files.solution(solution(options=", extra_cflags=['-fno-such-option-ks']")))
    assert v.status == "compile_error", (v.status, v.log[-3000:])
    assert v.reward == -1
    assert "Error building extension 'ks_add_relu'" in v.log and "-fno-such-option-ks" in v.log


def test_a_compile_error_names_the_line_of_the_solution_file(run_eval, files, elementwise):
    source = solution(cpp=CPP.replace("float s = a[i] + b[i];", "float s = a[i] + undeclared_ks[i];"))
    line = textwrap.dedent(source).splitlines().index("        float s = a[i] + undeclared_ks[i];") + 1
    v = run_eval(elementwise, files.solution(source))
    assert v.status == "compile_error", (v.status, v.log[-3000:])
    # The jail holds the solution as solution.py; the line is the one of the file the user wrote.
    assert f"solution.py:{line}:" in v.log and "undeclared_ks" in v.log and "was not declared" in v.log, v.log[-3000:]


def test_a_function_missing_from_the_sources_names_the_generated_bindings(run_eval, files, elementwise):
    v = run_eval(elementwise, files.solution(solution(functions='["add_relu", "relu_ks_missing"]')))
    assert v.status == "compile_error", (v.status, v.log[-3000:])
    assert "<the pybind11 module load_inline generates for functions=>:3:" in v.log
    assert "relu_ks_missing" in v.log


def test_an_option_the_fast_build_cannot_honour_goes_to_torchs_own_load_inline(run_eval, files, elementwise):
    # build_directory: torch's load_inline builds there (ninja's commands name it), after the sandbox said why. A
    # bad flag makes torch's build fail at once instead of compiling torch's headers for a minute.
    options = ", build_directory=__import__('tempfile').mkdtemp(prefix='ext_ks'), extra_cflags=['-fno-such-option-ks']"
    v = run_eval(elementwise, files.solution(solution(options=options)))
    assert v.status == "compile_error", (v.status, v.log[-3000:])
    assert "is not supported by the sandbox's fast build" in v.log and "build_directory=" in v.log
    assert re.search(r"ext_ks\w+/main\.cpp", v.log) and "Error building extension 'ks_add_relu'" in v.log


# A unit no machine compiles in seconds, however fast its headers: GCC evaluates 24 constant expressions of 10^6 loop
# steps each (about 1.4 s apiece on the 2-core machine; each stays under GCC's -fconstexpr-ops-limit).
SLOW_CPP = (
    r"""
constexpr long ks_spin(long k) {
    long s = 0;
    for (long i = 0; i < 1000; ++i)
        for (long j = 0; j < 1000; ++j) s += (i ^ j ^ k) & 1;
    return s;
}
"""
    + "".join(f'static_assert(ks_spin({k}) >= 0, "spun");\n' for k in range(24))
    + CPP
)


def test_a_build_that_outlasts_the_timeout_names_the_stage(run_eval, files, elementwise):
    v = run_eval(elementwise, files.solution(solution(cpp=SLOW_CPP, name="ks_slow_build")), timeout_s=6)
    assert v.status == "timeout", (v.status, v.log[-3000:])
    assert v.log.startswith(
        "stage \"load solution (building the extension 'ks_slow_build')\" ran out of time: "
        "the solution took longer than 6 s"
    ), v.log[-3000:]
