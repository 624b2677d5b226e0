"""Packaging solutions as pip-installable extensions: built for real, installed into a fresh virtual environment,
tested there with the package's own tests, and compiled with torch.compile without graph breaks."""

import contextlib
import io
import json
import subprocess
import tarfile
import textwrap

import pytest

from sandbox.cli import main
from sandbox.errors import PackagingError
from sandbox.package import package_solution
from sandbox.package.verify import check_package
from sandbox.verdict import Verdict

PROBLEM = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """relu(x + y) * alpha."""

    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y):
        return torch.relu(x + y) * self.alpha


def get_inputs():
    return [torch.randn(64, 256), torch.randn(64, 256)]


def get_init_inputs():
    return [2.0]
'''

# A stable-ABI native workspace: the kernel is plain C++, the binding sees only torch's C shim.
WORKSPACE = {
    "kernels/add_relu.cpp": """
        #include <algorithm>
        #include <cstdint>

        void add_relu_forward(const float* x, const float* y, float* out, int64_t n, double alpha) {
            for (int64_t i = 0; i < n; ++i) out[i] = std::max(x[i] + y[i], 0.0f) * static_cast<float>(alpha);
        }
        """,
    "binding.cpp": """
        #include <torch/csrc/stable/library.h>
        #include <torch/csrc/stable/tensor.h>
        #include <torch/csrc/stable/ops.h>

        using torch::stable::Tensor;

        void add_relu_forward(const float* x, const float* y, float* out, int64_t n, double alpha);

        Tensor add_relu(Tensor x, Tensor y, double alpha) {
            Tensor out = torch::stable::empty_like(x);
            add_relu_forward(reinterpret_cast<const float*>(x.data_ptr()), reinterpret_cast<const float*>(y.data_ptr()),
                             reinterpret_cast<float*>(out.data_ptr()), x.numel(), alpha);
            return out;
        }

        STABLE_TORCH_LIBRARY(KS_NAMESPACE, m) { m.def("add_relu(Tensor x, Tensor y, float alpha) -> Tensor"); }
        STABLE_TORCH_LIBRARY_IMPL(KS_NAMESPACE, CPU, m) { m.impl("add_relu", TORCH_BOX(&add_relu)); }
        """,
    "model_new.py": """
        import torch.nn as nn

        from sandbox.native import load_extension

        ext = load_extension(__file__)


        class ModelNew(nn.Module):
            def __init__(self, alpha):
                super().__init__()
                self.alpha = alpha

            def forward(self, x, y):
                return ext.add_relu(x.contiguous(), y.contiguous(), self.alpha)
        """,
}

# KernelBench style: C++ source in the solution, bound by load_inline's `functions`.
INLINE = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

UNROLL = 4
HEADER = "#include <algorithm>\\n"
source = HEADER + f"constexpr int kUnroll = {UNROLL};\\n" + """
torch::Tensor add_relu(torch::Tensor x, torch::Tensor y, double alpha) {
    auto out = torch::empty_like(x);
    const float* a = x.data_ptr<float>();
    const float* b = y.data_ptr<float>();
    float* o = out.data_ptr<float>();
    const int64_t n = x.numel();
    static_assert(kUnroll == 4, "the constant came through");
    for (int64_t i = 0; i < n; ++i) o[i] = std::max(a[i] + b[i], 0.0f) * static_cast<float>(alpha);
    return out;
}
"""

add_relu = load_inline(name="add_relu_ext", cpp_sources=source, functions=["add_relu"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha
        self.ext = add_relu

    def forward(self, x, y):
        return self.ext.add_relu(x.contiguous(), y.contiguous(), self.alpha)
'''

VERDICT = Verdict(
    status="ok",
    correct=True,
    runtime_ms=0.0123,
    eager_ms=0.0456,
    compiled_ms=0.0345,
    speedup_vs_eager=3.7073,
    speedup_vs_compiled=2.8049,
    reward=3,
    device="cpu",
    trials=[{"trial": f"trial {i}", "ok": True} for i in range(5)],
    max_abs_error=2.4e-7,
)

# Run in the package's fresh environment: a model mixing torch operators with the package's operator.
EXPLAIN = """
import torch
import ks_test_add_relu as pkg


def f(x, y):
    return pkg.ops.add_relu(torch.sin(x), y, 2.0) + 1.0


x, y = torch.randn(8, 32), torch.randn(8, 32)
explanation = torch._dynamo.explain(f)(x, y)
assert explanation.graph_break_count == 0, explanation.break_reasons
assert explanation.graph_count == 1, explanation
compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
torch.testing.assert_close(compiled(x, y), torch.relu(torch.sin(x) + y) * 2.0 + 1.0)
print("no graph breaks;", torch.ops.ks_test_add_relu.add_relu.default._schema)
"""


def _write(root, files):
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text).lstrip("\n"))


@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    path = tmp_path_factory.mktemp("problem") / "add_relu.py"
    path.write_text(PROBLEM)
    return path


@pytest.fixture(scope="module")
def packaged(problem, tmp_path_factory):
    """The workspace packaged once through the CLI, with a verdict: (the CLI's JSON report, its exit code). Its
    check runs in the test below, from the sdist."""
    root = tmp_path_factory.mktemp("packaged")
    _write(root / "workspace", WORKSPACE)
    (root / "verdict.json").write_text(VERDICT.dumps())
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = main(
            [
                "package",
                str(problem),
                str(root / "workspace"),
                "--out",
                str(root / "dist"),
                "--name",
                "ks-test-add-relu",
                "--verdict",
                str(root / "verdict.json"),
                "--no-check",
            ]
        )
    return json.loads(stdout.getvalue()), code


def _sdist_text(sdist, rel):
    with tarfile.open(sdist) as tar:
        root = tar.getnames()[0].split("/")[0]
        return tar.extractfile(f"{root}/{rel}").read().decode()


def test_the_cli_writes_the_sdist_and_a_wheel_for_this_platform(packaged):
    report, code = packaged
    assert code == 0
    assert report["name"] == "ks-test-add-relu" and report["module"] == "ks_test_add_relu"
    assert report["sdist"].endswith(f"/ks_test_add_relu-{report['version']}.tar.gz")
    # The stable ABI binding makes one wheel for every CPython >= 3.9 on this platform.
    assert report["wheel"].endswith(f"/ks_test_add_relu-{report['version']}-cp39-abi3-linux_x86_64.whl")
    assert report["operators"] == ["ks_test_add_relu::add_relu"]
    assert report["notes"] == []


def test_the_sdist_holds_sources_operators_tests_and_the_measurements(packaged):
    sdist = packaged[0]["sdist"]
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert {
        "pyproject.toml",
        "setup.py",
        "csrc/binding.cpp",
        "csrc/kernels/add_relu.cpp",
        "README.md",
        "src/ks_test_add_relu/ops.py",
        "src/ks_test_add_relu/model.py",
        "tests/reference.py",
        "tests/test_ks_test_add_relu.py",
    } <= names
    model = _sdist_text(sdist, "src/ks_test_add_relu/model.py")
    assert "sandbox" not in model and "ext = _ks_ops" in model
    ops = _sdist_text(sdist, "src/ks_test_add_relu/ops.py")
    assert 'register_fake("ks_test_add_relu::add_relu")' in ops
    assert "return torch.empty((x.shape[0], x.shape[1]), dtype=x.dtype, device=x.device)" in ops
    readme = _sdist_text(sdist, "README.md")
    for figure in ("0.0123 ms", "0.0456 ms", "3.71x", "0.0345 ms", "2.80x", "reward 3", "torch 2."):
        assert figure in readme


def test_the_sdist_installs_into_a_fresh_environment_passes_its_tests_and_compiles_without_graph_breaks(
    packaged, tmp_path_factory, monkeypatch
):
    # Run from a pytest session that selects tests by options in the environment (bench/gpu_session.sh's `-k`):
    # the package's own tests must not inherit them (every one of them was deselected on the GPU host).
    monkeypatch.setenv("PYTEST_ADDOPTS", "-k no_test_is_named_this")
    check = check_package(packaged[0]["sdist"], tmp_path_factory.mktemp("check-sdist"))
    assert check.ok, check.log
    assert "Building wheel for ks-test-add-relu" in check.log  # the sdist was compiled here
    assert "test_model_new_compiles_without_graph_breaks PASSED" in check.log
    assert "test_operators_pass_opcheck PASSED" in check.log
    assert "test_model_new_compiles_with_dynamic_shapes PASSED" in check.log
    # The fresh environment cannot import the sandbox: the package stands on its own.
    run = subprocess.run(
        [check.python, "-c", EXPLAIN], capture_output=True, text=True, cwd=tmp_path_factory.getbasetemp()
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "no graph breaks; ks_test_add_relu::add_relu(Tensor x, Tensor y, float alpha) -> Tensor" in run.stdout
    isolated = subprocess.run(
        [check.python, "-c", "import sandbox"], capture_output=True, text=True, cwd=tmp_path_factory.getbasetemp()
    )
    assert isolated.returncode != 0


def test_a_load_inline_solution_packages_too(problem, tmp_path_factory):
    root = tmp_path_factory.mktemp("inline")
    (root / "solution.py").write_text(INLINE)
    result = package_solution(problem, root / "solution.py", root / "dist", name="ks-inline-add-relu", check=False)
    assert result.wheel and result.operators == ["ks_inline_add_relu::add_relu"]
    ops = _sdist_text(result.sdist, "src/ks_inline_add_relu/ops.py")
    assert '@torch.library.custom_op("ks_inline_add_relu::add_relu", mutates_args=())' in ops
    assert "def add_relu(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:" in ops
    assert "constexpr int kUnroll = 4;" in _sdist_text(result.sdist, "csrc/add_relu_ext/main.cpp")
    check = check_package(result.sdist, root / "check", install=result.wheel)
    assert check.ok, check.log
    assert "test_model_new_compiles_without_graph_breaks PASSED" in check.log


RUNTIME_SOURCES = """
import torch.nn as nn
from torch.utils.cpp_extension import load_inline


def kernel_source(op):
    return "torch::Tensor apply(torch::Tensor x) { return x." + op + "(); }"


ext = load_inline(name="generated", cpp_sources=kernel_source("relu"), functions=["apply"])


class ModelNew(nn.Module):
    def forward(self, x, y):
        return ext.apply(x + y)
"""


def test_sources_generated_at_run_time_cannot_be_packaged(problem, tmp_path):
    (tmp_path / "solution.py").write_text(RUNTIME_SOURCES)
    with pytest.raises(PackagingError) as caught:
        package_solution(problem, tmp_path / "solution.py", tmp_path / "dist")
    message = str(caught.value)
    assert "solution.py:10: `cpp_sources` of load_inline is computed at run time (`kernel_source('relu')`)" in message
    assert "string literal or a module-level constant" in message
    assert not (tmp_path / "dist").exists()


def test_the_cli_explains_a_solution_it_cannot_package(problem, tmp_path, capsys):
    (tmp_path / "solution.py").write_text(RUNTIME_SOURCES)
    assert main(["package", str(problem), str(tmp_path / "solution.py"), "--out", str(tmp_path / "dist")]) == 2
    assert "computed at run time" in capsys.readouterr().err
