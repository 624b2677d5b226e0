"""sandbox/native/inline.py in this process, g++ for real: load_inline's and load's behaviour through the fast build
(functions as a list or with docstrings, torch's error handling, NAME_vN, a plain library for is_python_module=False,
files named in errors), the cache, which flags share a precompiled header, and which options go to torch."""

import pytest
import torch

from sandbox.native import inline

pytestmark = pytest.mark.slow

CPP = r"""
torch::Tensor scale_ks(torch::Tensor x, double alpha) {
    TORCH_CHECK(x.dim() == 1, "scale_ks wants a 1-D tensor, not ", x.dim(), "-D");
    auto out = torch::empty_like(x);
    const float* a = x.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = a[i] * static_cast<float>(alpha);
    return out;
}

int64_t count_ks(std::vector<torch::Tensor> xs) { return static_cast<int64_t>(xs.size()); }
"""


def test_functions_with_docstrings_behave_as_load_inlines_and_a_second_build_comes_from_the_cache():
    module = inline.load_inline(
        name="ks_inline_doc",
        cpp_sources=CPP,
        functions={"scale_ks": "Scales x by alpha.", "count_ks": "How many tensors."},
    )
    first = inline.BUILDS[-1]
    assert (first["via"], first["pch"], first["cached"]) == ("native", True, False)
    x = torch.randn(64)
    assert torch.equal(module.scale_ks(x, 2.5), x * 2.5)
    assert module.count_ks([x, x, x]) == 3
    # pybind11's signature line, then the docstring given in functions=, as load_inline generates them.
    signature = module.scale_ks.__doc__.splitlines()[0]
    assert signature.startswith("scale_ks(arg0: torch.Tensor, arg1: ") and signature.endswith(") -> torch.Tensor")
    assert "Scales x by alpha." in module.scale_ks.__doc__
    # torch::wrap_pybind_function: TORCH_CHECK raises torch's error type, with its message.
    with pytest.raises(RuntimeError, match="scale_ks wants a 1-D tensor, not 2-D"):
        module.scale_ks(torch.randn(2, 2), 1.0)
    assert module.__name__ == "ks_inline_doc"

    again = inline.load_inline(
        name="ks_inline_doc",
        cpp_sources=CPP,
        functions={"scale_ks": "Scales x by alpha.", "count_ks": "How many tensors."},
    )
    assert inline.BUILDS[-1]["cached"] and again.__name__ == "ks_inline_doc"
    assert torch.equal(again.scale_ks(x, 2.0), x * 2.0)


def test_a_name_reused_with_other_sources_gets_load_inlines_next_version():
    inline.load_inline(name="ks_inline_versions", cpp_sources=CPP, functions=["count_ks"])
    other = inline.load_inline(
        name="ks_inline_versions", cpp_sources=CPP.replace("xs.size()", "xs.size() + 1"), functions=["count_ks"]
    )
    assert other.__name__ == "ks_inline_versions_v1" and other.count_ks([torch.ones(1)]) == 2


def test_without_a_python_module_the_library_is_loaded_and_its_path_returned():
    source = (
        CPP
        + r"""
TORCH_LIBRARY(ks_inline_ops, m) { m.def("twice(Tensor x) -> Tensor"); }
TORCH_LIBRARY_IMPL(ks_inline_ops, CPU, m) { m.impl("twice", [](torch::Tensor x) { return scale_ks(x, 2.0); }); }
"""
    )
    path = inline.load_inline(name="ks_inline_ops_lib", cpp_sources=source, is_python_module=False)
    assert isinstance(path, str) and path.endswith("ks_inline_ops_lib.so")
    x = torch.randn(8)
    assert torch.equal(torch.ops.ks_inline_ops.twice(x), x * 2)


def test_load_builds_files_where_they_are_and_its_errors_name_them(tmp_path):
    good = tmp_path / "good.cpp"
    good.write_text(
        "#include <torch/extension.h>\n" + CPP + "\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n"
        '  m.def("count_ks", &count_ks);\n}\n'
    )
    module = inline.load(name="ks_inline_files", sources=[str(good)])
    assert module.count_ks([torch.ones(1)] * 4) == 4 and inline.BUILDS[-1]["pch"]
    bad = tmp_path / "bad.cpp"
    bad.write_text("#include <torch/extension.h>\n\nint broken_ks() { return undeclared_ks; }\n")
    with pytest.raises(RuntimeError, match="Error building extension 'ks_inline_bad'") as failure:
        inline.load(name="ks_inline_bad", sources=[str(bad)])
    assert f"{bad}:3:" in str(failure.value) and "undeclared_ks" in str(failure.value)


def test_only_optimization_levels_of_the_users_flags_share_a_precompiled_header():
    torch_flags = [
        "-DTORCH_EXTENSION_NAME=ks_x",
        "-DTORCH_API_INCLUDE_EXTENSION_H",
        "-I/home/me/include",
        "-isystem",
        "/torch/include",
        "-fPIC",
        "-std=c++20",
    ]
    base = ["-DTORCH_API_INCLUDE_EXTENSION_H", "-isystem", "/torch/include", "-fPIC", "-std=c++20"]
    assert inline.pch_flags(torch_flags) == (base, "")
    assert inline.pch_flags(torch_flags + ["-O3"]) == (base + ["-O2"], "")
    assert inline.pch_flags(torch_flags + ["-O3", ""]) == (base + ["-O2"], "")
    assert inline.pch_flags(torch_flags + ["-O2", "-O0"]) == (base, "")
    flags, why = inline.pch_flags(torch_flags + ["-O3", "-march=native"])
    assert flags is None and "-march=native" in why
    assert inline.pch_flags(torch_flags + ["-std=c++17"])[0] is None  # a second -std is the user's


@pytest.mark.parametrize(
    "option", [{"build_directory": "/tmp/elsewhere"}, {"sycl_sources": "int x;"}, {"with_sycl": True}]
)
def test_options_the_fast_build_cannot_honour_are_named(option):
    import torch.utils.cpp_extension as ce

    with pytest.raises(inline.Fallback, match=f"{next(iter(option))}=.* is not supported"):
        inline._arguments(ce.load_inline, ("ks_x", "int x;"), option, inline.INLINE_OPTIONS)
    with pytest.raises(inline.Fallback, match="is_standalone=True"):
        inline._arguments(ce.load, ("ks_x", ["x.cpp"]), {"is_standalone": True}, inline.LOAD_OPTIONS)
    honoured = inline._arguments(
        ce.load_inline, ("ks_x", "int x;"), {"use_pch": True, "verbose": True}, inline.INLINE_OPTIONS
    )
    assert honoured["use_pch"] and honoured["verbose"]
