"""The native workspace form on the CPU target: a stable-ABI binding that builds in about a second, the
content-hash cache, a classic torch/extension.h binding through the precompiled header, compiler errors, OpenBLAS."""

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sandbox.errors import BuildError
from sandbox.native.build import build_workspace, import_library, prepare, toolchain, workspace_key


def test_stable_abi_workspace_builds_and_is_cached(files, sources, ks_cache_dir):
    workspace = files.workspace(sources["STABLE_WORKSPACE"])
    # A kernel of its own (a comment), so that this test builds rather than finds an earlier build.
    (workspace / "kernels" / "add_relu.cpp").write_text(
        (workspace / "kernels" / "add_relu.cpp").read_text() + f"// {time.time_ns()}\n"
    )
    first = build_workspace(workspace, "cpu")
    assert first.cached is False
    assert os.path.isfile(first.library) and first.library.startswith(str(ks_cache_dir))
    assert first.module_name == f"ks_{first.key[:16]}"
    # World-readable (the jailed uids load it), never world-writable.
    mode = os.stat(first.library).st_mode
    assert mode & stat.S_IROTH and not mode & stat.S_IWOTH
    t0 = time.perf_counter()
    again = build_workspace(workspace, "cpu")
    assert again.cached is True and again.library == first.library and again.key == first.key
    assert time.perf_counter() - t0 < 1.0


def _binding_command(build_dir):
    """The g++ command build.ninja compiles the binding with, with -H: g++ then lists the headers it reads and marks
    a precompiled one it uses with '!'."""
    ninja = (build_dir / "build.ninja").read_text()
    rule = ninja.split("rule cxx\n  command = ")[1].splitlines()[0]
    rule = rule.replace("$out.d", str(build_dir / "b.d")).replace("$in", "src/binding.cpp").replace("$out", "b.o")
    return rule.split() + ["-H"]


def test_a_stable_binding_compiles_against_the_precompiled_stable_header(files, sources, ks_cache_dir, tmp_path):
    workspace = files.workspace(sources["STABLE_WORKSPACE"])
    *_, pch = prepare(workspace, tmp_path, "cpu")
    assert pch.name == "ks_stable.h" and pch.with_name("ks_stable.h.gch").is_file()
    assert str(pch).startswith(str(ks_cache_dir))
    compiled = subprocess.run(_binding_command(tmp_path), cwd=tmp_path, capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stderr
    assert f"! {pch}.gch" in compiled.stderr.splitlines()[0], compiled.stderr[:500]
    built = build_workspace(workspace, "cpu")
    x = __import__("torch").tensor([-1.0, 2.0])
    assert getattr(import_library(built.library, built.module_name), "add_relu")(x, x).tolist() == [0.0, 8.0]


def test_a_binding_that_defines_a_macro_before_torchs_headers_compiles_them_itself(files, sources, tmp_path):
    # What it defines first may change what torch's headers declare: the precompiled form cannot open its unit.
    source = dict(sources["STABLE_WORKSPACE"])
    source["binding.cpp"] = "#define KS_BEFORE_TORCH 1\n" + source["binding.cpp"]
    workspace = files.workspace(source)
    assert prepare(workspace, tmp_path, "cpu")[-1] is None
    assert "-include" not in (tmp_path / "build.ninja").read_text()
    compiled = subprocess.run(_binding_command(tmp_path), cwd=tmp_path, capture_output=True, text=True)
    assert compiled.returncode == 0 and "ks_stable.h" not in compiled.stderr, compiled.stderr[:500]
    assert build_workspace(workspace, "cpu").cached is False


def test_the_cache_key_follows_the_compiled_sources_only(files, sources):
    workspace = files.workspace(sources["STABLE_WORKSPACE"])
    key = workspace_key(workspace, "cpu")
    assert workspace_key(workspace, "cpu") == key  # deterministic
    kernel = workspace / "kernels" / "add_relu.cpp"
    kernel.write_text(kernel.read_text().replace("2.0f", "3.0f"))
    changed = workspace_key(workspace, "cpu")
    assert changed != key
    binding = workspace / "binding.cpp"
    binding.write_text(binding.read_text() + "\n// a comment changes the binding's bytes\n")
    assert workspace_key(workspace, "cpu") not in (key, changed)
    # model_new.py is imported, not compiled: it is not part of the key.
    before = workspace_key(workspace, "cpu")
    (workspace / "model_new.py").write_text((workspace / "model_new.py").read_text() + "\n# edited\n")
    assert workspace_key(workspace, "cpu") == before


def test_stable_abi_workspace_evaluates_ok(run_eval, files, elementwise, sources):
    v = run_eval(elementwise, files.workspace(sources["STABLE_WORKSPACE"]))
    assert v.status == "ok", (v.status, v.log[-3000:])
    assert v.violations == [] and v.reward >= 1
    assert v.compile_s is not None
    # Built once: a second evaluation finds the library in the cache.
    again = run_eval(elementwise, files.workspace(sources["STABLE_WORKSPACE"]))
    assert again.status == "ok"
    # A compile takes seconds; finding the library takes milliseconds (the stage's wall time also holds starting the
    # jails, which a loaded machine stretches past a second).
    assert again.compile_s < 0.5, (again.compile_s, again.timing["stages_s"])


def test_build_errors_carry_the_compiler_error_line(files, sources):
    broken = dict(sources["STABLE_WORKSPACE"])
    broken["kernels/add_relu.cpp"] = broken["kernels/add_relu.cpp"].replace(
        "out[i] =", "undeclared_thing(out[i]);\n            out[i] ="
    )
    with pytest.raises(BuildError) as caught:
        build_workspace(files.workspace(broken), "cpu")
    message = str(caught.value)
    assert "add_relu.cpp" in message and "error" in message and "undeclared_thing" in message, message
    assert "undeclared_thing" in caught.value.log


def test_a_binding_error_is_a_compile_error_verdict(run_eval, files, elementwise, sources):
    broken = dict(sources["STABLE_WORKSPACE"])
    broken["binding.cpp"] = broken["binding.cpp"].replace(
        "Tensor out =", "Tensor out = missing_function(x);\n    Tensor out2 ="
    )
    v = run_eval(elementwise, files.workspace(broken))
    assert v.status == "compile_error", (v.status, v.log[-3000:])
    assert v.reward == -1
    assert "binding.cpp" in v.log and "missing_function" in v.log


def test_a_workspace_without_binding_is_a_compile_error(run_eval, files, elementwise, sources):
    workspace = files.workspace({"model_new.py": sources["STABLE_WORKSPACE"]["model_new.py"]})
    v = run_eval(elementwise, workspace)
    assert v.status == "compile_error", (v.status, v.log[-3000:])
    assert "binding.cpp" in v.log


def test_a_cache_under_private_folders_still_reaches_the_jail(
    files, elementwise, sources, fast_config, tmp_path, monkeypatch
):
    # tmp_path lies under /tmp/pytest-of-root/..., folders only their owner may enter: the jail must still let
    # the unprivileged uid reach the cache inside (the built library is loaded from there).
    from sandbox import evaluate

    cache = tmp_path / "private" / "deeper" / "cache"
    cache.parent.mkdir(parents=True)
    os.chmod(cache.parent.parent, 0o700)
    os.chmod(cache.parent, 0o700)
    monkeypatch.setenv("KS_CACHE_DIR", str(cache))
    v = evaluate(elementwise, files.workspace(sources["STABLE_WORKSPACE"]), fast_config)
    assert v.status == "ok", (v.status, v.log[-3000:])


@pytest.mark.slow
def test_classic_binding_through_the_precompiled_header(run_eval, files, elementwise, sources, ks_cache_dir):
    workspace = files.workspace(sources["classic_workspace_files"]("add_relu"))
    v = run_eval(elementwise, workspace)
    assert v.status == "ok", (v.status, v.log[-3000:])
    assert v.violations == []
    assert list(ks_cache_dir.glob("pch/*/ks_torch.h.gch")), "the precompiled header was not built"
    # The same binding again: cached, no compiler runs.
    t0 = time.perf_counter()
    again = build_workspace(workspace, "cpu")
    assert again.cached is True and time.perf_counter() - t0 < 1.0


# LINEAR_RELU's GEMM through OpenBLAS, as the heuristic's CPU kernels call it: <cblas.h> of the scipy-openblas32 wheel.
BLAS_WORKSPACE = {
    "kernels/linear_relu.cpp": """
        #include <cblas.h>
        #include <cstdint>

        void linear_relu_forward(const float* x, const float* w, const float* b, float* out, int64_t m, int64_t n,
                                 int64_t k) {
            scipy_cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, x, k, w, k, 0.0f, out, n);
            for (int64_t i = 0; i < m * n; ++i) out[i] = out[i] + b[i % n] > 0.0f ? out[i] + b[i % n] : 0.0f;
        }
        """,
    "binding.cpp": """
        #include <torch/csrc/stable/library.h>
        #include <torch/csrc/stable/tensor.h>
        #include <torch/csrc/stable/ops.h>

        using torch::stable::Tensor;

        void linear_relu_forward(const float* x, const float* w, const float* b, float* out, int64_t m, int64_t n,
                                 int64_t k);

        Tensor linear_relu(Tensor x, Tensor w, Tensor b) {
            Tensor out = torch::stable::new_empty(x, {x.size(0), w.size(0)});
            linear_relu_forward(reinterpret_cast<const float*>(x.data_ptr()), reinterpret_cast<const float*>(w.data_ptr()),
                                reinterpret_cast<const float*>(b.data_ptr()), reinterpret_cast<float*>(out.data_ptr()),
                                x.size(0), w.size(0), x.size(1));
            return out;
        }

        STABLE_TORCH_LIBRARY(KS_NAMESPACE, m) { m.def("linear_relu(Tensor x, Tensor w, Tensor b) -> Tensor"); }
        STABLE_TORCH_LIBRARY_IMPL(KS_NAMESPACE, CPU, m) { m.impl("linear_relu", TORCH_BOX(&linear_relu)); }
        """,
    "model_new.py": """
        import torch.nn as nn

        from sandbox.native import load_extension

        ext = load_extension(__file__)


        class ModelNew(nn.Module):
            def __init__(self, in_features, out_features):
                super().__init__()
                self.linear = nn.Linear(in_features, out_features)

            def forward(self, x):
                return ext.linear_relu(x.contiguous(), self.linear.weight, self.linear.bias)
        """,
}


def test_cpu_kernels_call_openblas_from_the_wheel_which_a_jailed_solution_loads(run_eval, files, linear_relu):
    import scipy_openblas32

    workspace = files.workspace(BLAS_WORKSPACE)
    v = run_eval(linear_relu, workspace)
    assert v.status == "ok" and v.correct, (v.status, v.log[-3000:])
    library = build_workspace(workspace, "cpu").library
    linked = subprocess.run(["ldd", library], capture_output=True, text=True, check=True).stdout
    blas = next(line for line in linked.splitlines() if "libscipy_openblas" in line)
    assert str(Path(scipy_openblas32.get_lib_dir()).resolve()) in blas, linked


def test_the_openblas_flags_are_part_of_the_cpu_build_key():
    import scipy_openblas32

    tc = toolchain("cpu")
    assert f"-I{scipy_openblas32.get_include_dir()}" in tc["kernel_flags"]
    assert f"-Wl,-rpath,{scipy_openblas32.get_lib_dir()}" in tc["ldflags"] and "-lscipy_openblas" in tc["ldflags"]
    assert scipy_openblas32.__version__ in tc["blas"]


def test_a_loaded_extension_stays_out_of_the_processs_global_symbol_scope(files, sources, ks_cache_dir):
    """An extension's exported symbols (its copies of C++ runtime code among them) must not serve libraries loaded
    after it: on the H100, cuDNN loaded by a second solution bound std::ostream code in the first and crashed."""
    built = build_workspace(files.workspace(sources["STABLE_WORKSPACE"]), "cpu")
    exported = subprocess.run(
        ["nm", "-D", "--defined-only", built.library], capture_output=True, text=True, check=True
    ).stdout.split()
    names = [name for name in exported[2::3] if not name.startswith("_init") and not name.startswith("_fini")]
    assert names, exported
    script = f"""
import ctypes, sys
import torch
from sandbox.native.build import import_library
import_library({built.library!r}, {built.module_name!r})
own, scope = ctypes.CDLL({built.library!r}), ctypes.CDLL(None)
leaked = []
for name in {names!r}:
    try:
        address = ctypes.cast(getattr(scope, name), ctypes.c_void_p).value
    except AttributeError:
        continue  # not found through the global scope
    if address == ctypes.cast(getattr(own, name), ctypes.c_void_p).value:
        leaked.append(name)
print(len(leaked), leaked[:5])
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("0 "), out.stdout
