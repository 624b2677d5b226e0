"""Packages whose operators' outputs are not shaped like their first argument (a row reduction, a GEMM with an
epilogue, a pool, a kernel with two outputs): each fake is inferred from what the kernel did, written with the
arguments' symbolic sizes, and the package passes its own tests in a fresh environment, at two batch sizes and
under torch.compile(fullgraph=True) and torch.compile(dynamic=True). A kernel whose output size depends on the data
gets a note instead of a guess, and a package whose tests fail is an error naming them."""

import contextlib
import io
import json
import tarfile
import textwrap

import pytest

from sandbox.cli import main
from sandbox.package import package_solution

pytestmark = pytest.mark.slow

_HEADERS = """
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>

#include <cstdint>
#include <tuple>

using torch::stable::Tensor;
"""


def _problem(init, forward, inputs, init_inputs="[]", imports=""):
    return f"""
import torch
import torch.nn as nn
{imports}

class Model(nn.Module):
    def __init__(self{init[0]}):
        super().__init__()
{textwrap.indent(textwrap.dedent(init[1]).strip(), " " * 8)}

    def forward(self, x):
{textwrap.indent(textwrap.dedent(forward).strip(), " " * 8)}


def get_inputs():
    return {inputs}


def get_init_inputs():
    return {init_inputs}
"""


def _model_new(init, call):
    return f"""
import torch.nn as nn

from sandbox.native import load_extension

ext = load_extension(__file__)


class ModelNew(nn.Module):
    def __init__(self{init[0]}):
        super().__init__()
{textwrap.indent(textwrap.dedent(init[1]).strip(), " " * 8)}

    def forward(self, x):
        return {call}
"""


ROW_SUM = {
    "problem": _problem(("", "pass"), "return x.sum(dim=1)", "[torch.randn(64, 96)]"),
    "kernels/row_sum.cpp": """
        #include <cstdint>

        void row_sum_forward(const float* x, float* out, int64_t rows, int64_t cols) {
            for (int64_t r = 0; r < rows; ++r) {
                float total = 0.0f;
                for (int64_t c = 0; c < cols; ++c) total += x[r * cols + c];
                out[r] = total;
            }
        }
        """,
    "binding.cpp": _HEADERS
    + """
        void row_sum_forward(const float* x, float* out, int64_t rows, int64_t cols);

        Tensor row_sum(Tensor x) {
            Tensor out = torch::stable::new_empty(x, {x.size(0)});
            row_sum_forward(reinterpret_cast<const float*>(x.data_ptr()), reinterpret_cast<float*>(out.data_ptr()),
                            x.size(0), x.size(1));
            return out;
        }

        STABLE_TORCH_LIBRARY(KS_NAMESPACE, m) { m.def("row_sum(Tensor x) -> Tensor"); }
        STABLE_TORCH_LIBRARY_IMPL(KS_NAMESPACE, CPU, m) { m.impl("row_sum", TORCH_BOX(&row_sum)); }
        """,
    "model_new.py": _model_new(("", "pass"), "ext.row_sum(x.contiguous())"),
}

# relu(x @ W.T + b) * scale: [16, 48] by a [32, 48] weight.
GEMM = {
    "problem": _problem(
        (
            ", features_in, features_out, scale",
            """
        self.linear = nn.Linear(features_in, features_out)
        self.scale = scale""",
        ),
        "return torch.relu(self.linear(x)) * self.scale",
        "[torch.randn(16, 48)]",
        "[48, 32, 0.5]",
    ),
    "kernels/linear_relu.cpp": """
        #include <algorithm>
        #include <cstdint>

        void linear_relu_forward(const float* x, const float* w, const float* b, float* out, int64_t n, int64_t k,
                                 int64_t m, float scale) {
            for (int64_t i = 0; i < n; ++i)
                for (int64_t j = 0; j < m; ++j) {
                    float acc = b[j];
                    for (int64_t t = 0; t < k; ++t) acc += x[i * k + t] * w[j * k + t];
                    out[i * m + j] = std::max(acc, 0.0f) * scale;
                }
        }
        """,
    "binding.cpp": _HEADERS
    + """
        void linear_relu_forward(const float* x, const float* w, const float* b, float* out, int64_t n, int64_t k,
                                 int64_t m, float scale);

        Tensor linear_relu(Tensor x, Tensor weight, Tensor bias, double scale) {
            Tensor out = torch::stable::new_empty(x, {x.size(0), weight.size(0)});
            linear_relu_forward(reinterpret_cast<const float*>(x.data_ptr()),
                                reinterpret_cast<const float*>(weight.data_ptr()),
                                reinterpret_cast<const float*>(bias.data_ptr()),
                                reinterpret_cast<float*>(out.data_ptr()),
                                x.size(0), x.size(1), weight.size(0), static_cast<float>(scale));
            return out;
        }

        STABLE_TORCH_LIBRARY(KS_NAMESPACE, m) {
            m.def("linear_relu(Tensor x, Tensor weight, Tensor bias, float scale) -> Tensor");
        }
        STABLE_TORCH_LIBRARY_IMPL(KS_NAMESPACE, CPU, m) { m.impl("linear_relu", TORCH_BOX(&linear_relu)); }
        """,
    "model_new.py": _model_new(
        (
            ", features_in, features_out, scale",
            """
        self.linear = nn.Linear(features_in, features_out)
        self.scale = scale""",
        ),
        "ext.linear_relu(x.contiguous(), self.linear.weight, self.linear.bias, self.scale)",
    ),
}

# MaxPool2d(kernel 3, stride 2, padding 1) of [8, 4, 16, 12]: the kernel takes all three as arguments.
POOL = {
    "problem": _problem(
        ("", "self.pool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)"),
        "return self.pool(x)",
        "[torch.randn(8, 4, 16, 12)]",
    ),
    "kernels/max_pool.cpp": """
        #include <algorithm>
        #include <cstdint>
        #include <limits>

        void max_pool2d_forward(const float* x, float* out, int64_t planes, int64_t h, int64_t w, int64_t oh,
                                int64_t ow, int64_t k, int64_t s, int64_t p) {
            for (int64_t c = 0; c < planes; ++c)
                for (int64_t i = 0; i < oh; ++i)
                    for (int64_t j = 0; j < ow; ++j) {
                        float best = -std::numeric_limits<float>::infinity();
                        for (int64_t di = 0; di < k; ++di)
                            for (int64_t dj = 0; dj < k; ++dj) {
                                int64_t r = i * s - p + di, q = j * s - p + dj;
                                if (r >= 0 && r < h && q >= 0 && q < w) best = std::max(best, x[(c * h + r) * w + q]);
                            }
                        out[(c * oh + i) * ow + j] = best;
                    }
        }
        """,
    "binding.cpp": _HEADERS
    + """
        void max_pool2d_forward(const float* x, float* out, int64_t planes, int64_t h, int64_t w, int64_t oh,
                                int64_t ow, int64_t k, int64_t s, int64_t p);

        Tensor max_pool2d(Tensor x, int64_t kernel, int64_t stride, int64_t padding) {
            int64_t h = x.size(2), w = x.size(3);
            int64_t oh = (h + 2 * padding - kernel) / stride + 1, ow = (w + 2 * padding - kernel) / stride + 1;
            Tensor out = torch::stable::new_empty(x, {x.size(0), x.size(1), oh, ow});
            max_pool2d_forward(reinterpret_cast<const float*>(x.data_ptr()), reinterpret_cast<float*>(out.data_ptr()),
                               x.size(0) * x.size(1), h, w, oh, ow, kernel, stride, padding);
            return out;
        }

        STABLE_TORCH_LIBRARY(KS_NAMESPACE, m) {
            m.def("max_pool2d(Tensor x, int kernel, int stride, int padding) -> Tensor");
        }
        STABLE_TORCH_LIBRARY_IMPL(KS_NAMESPACE, CPU, m) { m.impl("max_pool2d", TORCH_BOX(&max_pool2d)); }
        """,
    "model_new.py": _model_new(("", "pass"), "ext.max_pool2d(x.contiguous(), 3, 2, 1)"),
}

# Two outputs of different shapes and dtypes: x minus its row's max ([N, M] float) and the row's argmax ([N] int64).
MAX_SHIFT = {
    "problem": _problem(
        ("", "pass"),
        """
        values, indices = torch.max(x, dim=1)
        return x - values[:, None], indices""",
        "[torch.randn(32, 40)]",
    ),
    "kernels/max_shift.cpp": """
        #include <cstdint>

        void max_shift_forward(const float* x, float* shifted, int64_t* index, int64_t rows, int64_t cols) {
            for (int64_t r = 0; r < rows; ++r) {
                const float* row = x + r * cols;
                int64_t best = 0;
                for (int64_t c = 1; c < cols; ++c) if (row[c] > row[best]) best = c;
                for (int64_t c = 0; c < cols; ++c) shifted[r * cols + c] = row[c] - row[best];
                index[r] = best;
            }
        }
        """,
    "binding.cpp": _HEADERS
    + """
        void max_shift_forward(const float* x, float* shifted, int64_t* index, int64_t rows, int64_t cols);

        std::tuple<Tensor, Tensor> max_shift(Tensor x) {
            Tensor shifted = torch::stable::empty_like(x);
            Tensor index = torch::stable::new_empty(x, {x.size(0)}, torch::headeronly::ScalarType::Long);
            max_shift_forward(reinterpret_cast<const float*>(x.data_ptr()),
                              reinterpret_cast<float*>(shifted.data_ptr()),
                              reinterpret_cast<int64_t*>(index.data_ptr()), x.size(0), x.size(1));
            return std::make_tuple(shifted, index);
        }

        STABLE_TORCH_LIBRARY(KS_NAMESPACE, m) { m.def("max_shift(Tensor x) -> (Tensor, Tensor)"); }
        STABLE_TORCH_LIBRARY_IMPL(KS_NAMESPACE, CPU, m) { m.impl("max_shift", TORCH_BOX(&max_shift)); }
        """,
    "model_new.py": _model_new(("", "pass"), "ext.max_shift(x.contiguous())"),
}

# The elements above a threshold: how many there are depends on the values, so no rule of sizes fits.
ABOVE = {
    "problem": _problem(("", "pass"), "return x[x > 1.0]", "[torch.randn(64, 128)]"),
    "kernels/above.cpp": """
        #include <cstdint>

        int64_t count_above(const float* x, int64_t n, float threshold) {
            int64_t count = 0;
            for (int64_t i = 0; i < n; ++i) count += x[i] > threshold;
            return count;
        }

        void copy_above(const float* x, float* out, int64_t n, float threshold) {
            for (int64_t i = 0; i < n; ++i) if (x[i] > threshold) *out++ = x[i];
        }
        """,
    "binding.cpp": _HEADERS
    + """
        int64_t count_above(const float* x, int64_t n, float threshold);
        void copy_above(const float* x, float* out, int64_t n, float threshold);

        Tensor above(Tensor x, double threshold) {
            const float* data = reinterpret_cast<const float*>(x.data_ptr());
            Tensor out = torch::stable::new_empty(x, {count_above(data, x.numel(), threshold)});
            copy_above(data, reinterpret_cast<float*>(out.data_ptr()), x.numel(), threshold);
            return out;
        }

        STABLE_TORCH_LIBRARY(KS_NAMESPACE, m) { m.def("above(Tensor x, float threshold) -> Tensor"); }
        STABLE_TORCH_LIBRARY_IMPL(KS_NAMESPACE, CPU, m) { m.impl("above", TORCH_BOX(&above)); }
        """,
    "model_new.py": _model_new(("", "pass"), "ext.above(x.contiguous(), 1.0)"),
}


def _write(root, solution):
    root.mkdir(parents=True)
    (root / "problem.py").write_text(solution["problem"])
    for rel, text in solution.items():
        if rel != "problem":
            (root / "workspace" / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / "workspace" / rel).write_text(textwrap.dedent(text).lstrip("\n"))
    return root / "problem.py", root / "workspace"


def _ops(result):
    with tarfile.open(result.sdist) as tar:
        top = tar.getnames()[0].split("/")[0]
        return tar.extractfile(f"{top}/src/{result.module}/ops.py").read().decode()


def _readme(result):
    with tarfile.open(result.sdist) as tar:
        top = tar.getnames()[0].split("/")[0]
        return tar.extractfile(f"{top}/README.md").read().decode()


# Each kind, and what its fake must say: sizes as expressions of the arguments' sizes and integer arguments.
KINDS = {
    "row_reduction": (ROW_SUM, ["torch.empty((x.shape[0],), dtype=x.dtype, device=x.device)"]),
    "gemm_epilogue": (GEMM, ["torch.empty((x.shape[0], weight.shape[0]), dtype=x.dtype, device=x.device)"]),
    "pool": (
        POOL,
        [
            "torch.empty((x.shape[0], x.shape[1], (x.shape[2] + 2 * padding - kernel) // stride + 1, "
            "(x.shape[3] + 2 * padding - kernel) // stride + 1), dtype=x.dtype, device=x.device)"
        ],
    ),
    "multi_output": (
        MAX_SHIFT,
        [
            "(torch.empty((x.shape[0], x.shape[1]), dtype=x.dtype, device=x.device), "
            "torch.empty((x.shape[0],), dtype=torch.int64, device=x.device))"
        ],
    ),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_package_passes_its_own_tests_with_fakes_inferred_from_the_kernel(kind, tmp_path):
    solution, fakes = KINDS[kind]
    problem, workspace = _write(tmp_path / kind, solution)
    result = package_solution(problem, workspace, tmp_path / "dist", name=f"ks-fake-{kind}")
    ops = _ops(result)
    for fake in fakes:
        assert f"return {fake}" in ops
    assert result.notes == []
    assert result.check["ok"], result.check
    passed = result.check["passed"]
    for test in (
        "test_operators_pass_opcheck",
        "test_model_new_compiles_without_graph_breaks",
        "test_model_new_compiles_with_dynamic_shapes",
    ):
        assert test in passed
    # The problem's batch halved and doubled: ModelNew runs at both, eagerly and in the dynamic graph.
    assert sum(t.startswith("test_model_new_matches_the_reference_at_another_batch_size[batch") for t in passed) == 2


def test_a_kernel_whose_output_size_depends_on_the_data_gets_a_note_not_a_guess(tmp_path):
    problem, workspace = _write(tmp_path / "above", ABOVE)
    result = package_solution(problem, workspace, tmp_path / "dist", name="ks-fake-above", check=False)
    (note,) = result.notes
    assert note.startswith(
        "the fake implementation of above could not be inferred (no expression of the "
        "arguments' sizes gives dimension 0 of output 0 on every call"
    )
    assert "its size may depend on the data" in note and "src/ks_fake_above/ops.py" in note
    assert "raise NotImplementedError(" in _ops(result)
    readme = _readme(result)
    assert "**Needs your attention:** no rule was found for the fake implementation of `above`" in readme
    assert "**not inferred: write it**" in readme


def test_the_cli_checks_the_package_by_default_and_names_the_failing_tests(tmp_path, capsys):
    problem, workspace = _write(tmp_path / "above", ABOVE)
    out = tmp_path / "dist"
    code = main(["package", str(problem), str(workspace), "--out", str(out), "--name", "ks-fake-above-cli"])
    captured = capsys.readouterr()
    assert code == 1
    error = captured.err.strip().splitlines()[-1]
    assert error.startswith("error: the package ks-fake-above-cli was built")
    assert "tests/test_ks_fake_above_cli.py::test_model_new_compiles_without_graph_breaks" in error
    report = json.loads(captured.out)
    assert report["check"]["ok"] is False and report["wheel"]
    # --no-check writes the same package and stops there.
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        assert (
            main(
                [
                    "package",
                    str(problem),
                    str(workspace),
                    "--out",
                    str(out),
                    "--name",
                    "ks-fake-above-cli",
                    "--no-check",
                ]
            )
            == 0
        )
    assert json.loads(stdout.getvalue())["check"] is None
