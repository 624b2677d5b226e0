"""sandbox.native.light with g++ for real and small headers of our own standing in for torch's: a unit is linked
from its light-header object only where its parses against both headers dumped the same functions, with the same
callees; what the parse cannot see (templates, load-time initializers) keeps the full header."""

import shutil
import subprocess
import textwrap

import pytest

from sandbox.native import light

pytestmark = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("ninja") is None, reason="needs g++, ninja")

# The light header declares what the full one declares first; the full one adds an overload and a function that
# shadows one reached through a using-directive, as torch/extension.h could add to what torch/types.h declares.
LIGHT = """
#pragma once
struct R { R(); ~R(); int v; };
namespace lib { inline long f(long x) { return x + 2; } }
namespace a { R make(int); }
namespace b { using namespace a; }
"""
FULL = """
#pragma once
#include "light.h"
namespace lib { inline long f(int x) { return x + 1; } }
namespace b { R make(int); }
"""


FLAGS = ["-std=c++17", "-fPIC"]


@pytest.fixture
def headers(tmp_path):
    """Both headers, precompiled as torch's are: functions they define are not parsed again in a unit."""
    for name, text in (("light.h", LIGHT), ("full.h", FULL)):
        (tmp_path / name).write_text(textwrap.dedent(text))
        subprocess.run(["g++", *FLAGS, "-x", "c++-header", name, "-o", f"{name}.gch"], cwd=tmp_path, check=True)
    # What a unit includes first; the full header is already in, the light one blanks the line.
    (tmp_path / "inc" / "torch").mkdir(parents=True)
    (tmp_path / "inc" / "torch" / "extension.h").write_text('#pragma once\n#include "../../full.h"\n')
    return tmp_path


def parse(folder, header, text, name):
    """The two dumps of TEXT parsed to its end against HEADER, as sandbox.native.light's first ninja run makes them."""
    (folder / f"{name}.cpp").write_text(light.cut_text(text, f"{name}.cpp"))
    dumps = []
    for form in ("", "-raw"):
        out = folder / f"{name}{form}.dump"
        proc = subprocess.run(
            ["g++", *FLAGS, "-Winvalid-pch", "-include", str(folder / header), "-fsyntax-only", "-Wfatal-errors",
             f"-fdump-tree-original{form}={out}", f"{name}.cpp"],
            cwd=folder, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert light.CUT_MESSAGE in proc.stderr and "invalid" not in proc.stderr, proc.stderr
        dumps.append(out.read_text())
    return dumps


def difference(folder, text):
    return light.difference(*parse(folder, "full.h", text, "full"), *parse(folder, "light.h", text, "light"))


def test_code_that_means_the_same_under_both_headers_passes(headers):
    text = "long g(long x) { R r; return lib::f(x) + r.v; }\nR h() { return a::make(2); }\n"
    assert difference(headers, text) == ""


def test_an_overload_only_the_full_header_declares_is_caught(headers):
    # lib::f(3) picks f(int) under the full header, f(long) under the light one: the call's text differs.
    assert "g()" in difference(headers, "long g() { return lib::f(3); }\n")


def test_a_callee_returned_by_value_is_told_apart_by_its_mangled_name(headers):
    # GCC prints `make` unqualified in both dumps (an aggregate-returning call): only the raw dump's mangled names
    # say that b::make is a::make under the light header and b's own function under the full one.
    full_text, _ = parse(headers, "full.h", "R g() { return b::make(1); }\n", "probe")
    assert "b::make" not in full_text and "make" in full_text
    assert "g()" in difference(headers, "R g() { return b::make(1); }\n")


@pytest.mark.parametrize(
    "text, kind",
    [
        ("torch::Tensor f(torch::Tensor x) {\n  for (auto& s : x.sizes()) {}\n  return x;\n}\n", "types"),
        ("const int kBlock = 256;\nconstexpr float kScale = 2.0f;\nint f(int a = 1);\n", "types"),
        ('struct P { int n; } p;\nextern "C" void ks_launch_k(int n);\n', "types"),
        ('torch::Tensor f(torch::Tensor x);\nPYBIND11_MODULE(m, m) {\n  m.def("f", &f);\n}\n', "module"),
        ('int f(int x) { return x; }\nPYBIND11_MODULE(m, m) {\n  m.def("f", &f);\n}\n', "bind"),
    ],
)
def test_plain_torch_code_and_bindings_are_eligible(text, kind):
    assert light.eligible(text) == (kind, "")


@pytest.mark.parametrize(
    "text, why",
    [
        ("template <typename T> T twice(T x) { return x + x; }\n", "templates"),
        ("int f() { auto g = [](auto x) { return x; }; return g(1); }\n", "generic lambda"),
        ("static auto kOnes = torch::ones({4});\n", "load time"),
        ("torch::Tensor kWeights{torch::ones({4})};\n", "load time"),
        ("Table table(16);\n", "load time"),
        ("#include <torch/all.h>\nint f();\n", "frontend"),
    ],
)
def test_what_the_parse_cannot_check_keeps_the_full_header(text, why):
    kind, reason = light.eligible(text)
    assert kind is None and why in reason


def test_the_light_text_keeps_line_numbers_and_the_file_name():
    text = '#include <cuda_runtime.h>\n\n  #include "torch/extension.h"\nint f() { return __LINE__; }\n'
    out = light.light_text(text, "build/main.cpp")
    assert out.splitlines()[0] == '#line 1 "build/main.cpp"'
    assert out.splitlines()[1:] == ["#include <cuda_runtime.h>", "", "", "int f() { return __LINE__; }"]


NINJA = """ninja_required_version = 1.3
cxx = g++
cflags = -std=c++17 -fPIC -I{folder}/inc
post_cflags =
rule compile
  command = $cxx -MMD -MF $out.d $cflags $ks_pch -c $in -o $out $post_cflags
  depfile = $out.d
  deps = gcc
rule link
  command = $cxx $in -shared -o $out
build same.o: compile {folder}/same.cpp
  ks_pch = -include {folder}/full.h
build differs.o: compile {folder}/differs.cpp
  ks_pch = -include {folder}/full.h
build ext.so: link same.o differs.o
default ext.so
"""


def test_a_build_links_the_light_object_where_the_check_passes_and_compiles_the_rest_in_full(headers):
    sources = {
        "same.cpp": "#include <torch/extension.h>\nlong g(long x) { return lib::f(x); }\n",
        "differs.cpp": "#include <torch/extension.h>\nlong h() { return lib::f(3); }\n",
    }
    for name, text in sources.items():
        (headers / name).write_text(text)
    ninja = NINJA.format(folder=headers)
    (headers / "build.ninja").write_text(ninja)
    texts = {str(headers / name): text for name, text in sources.items()}
    paths = {light.MAIN: headers / "full.h", "ks_types.h": headers / "light.h", "ks_bind.h": headers / "light.h"}
    units, skipped = light.plan(headers, ninja, texts, paths)
    assert [u.obj for u in units] == ["same.o", "differs.o"] and skipped == {}
    subprocess.run(["ninja", "-f", "ks_light.ninja", "-k", "0", *light.targets(units, ninja, False)], cwd=headers)
    settled, decided = light.settle(headers, ninja, units)
    assert decided[str(headers / "same.cpp")] == "types"
    assert decided[str(headers / "differs.cpp")].startswith("full: long int h()")
    assert "build same.o" not in settled and "build differs.o: compile" in settled
    (headers / "build.ninja").write_text(settled)
    proc = subprocess.run(["ninja", "-v"], cwd=headers, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
    # Only the unit the check turned down was compiled again, against the full header.
    assert "differs.cpp" in proc.stdout and "same.cpp" not in proc.stdout
    symbols = subprocess.run(["nm", "-C", "ext.so"], cwd=headers, capture_output=True, text=True).stdout
    assert "g(long)" in symbols and "h()" in symbols


def _headers_reached(header, tmp_path):
    """The files g++ reads for `#include HEADER` with torch's include paths."""
    import sysconfig

    from torch.utils.cpp_extension import include_paths

    flags = [f"-I{p}" for p in include_paths() + [sysconfig.get_paths()["include"]]]
    (tmp_path / "probe.cpp").write_text(f"#include {header}\n")
    proc = subprocess.run(
        ["g++", "-std=c++17", *flags, "-M", "probe.cpp"], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {p for p in proc.stdout.replace("\\\n", " ").split()[1:] if p.endswith(".h")}


@pytest.mark.slow
@pytest.mark.parametrize("light_header", ["ks_bind.h", "ks_module.h"])
def test_the_light_binding_headers_see_every_type_caster_torch_extension_h_brings(light_header, tmp_path):
    # A caster pybind11 instantiates at a unit's end, past the check's parse: the light header must hold them all.
    full = _headers_reached("<torch/extension.h>", tmp_path)
    lighter = _headers_reached(f'"{light.HEADERS[light_header]}"', tmp_path)
    assert {p for p in full if "/pybind11/" in p} <= lighter
    casters = {p for p in full - lighter if "type_caster" in open(p, errors="replace").read()}
    assert casters == set()
