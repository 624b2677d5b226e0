"""Exporting a native workspace as a plain KernelBench solution.py: sources inline, built by load_inline, torch only.

The workspace (model_new.py, binding.cpp, kernels/) is the project's own form: it builds through sandbox.native, so
it runs only where kernel-studio is installed. The export is what KernelBench's harness and other tools evaluate:
binding.cpp becomes load_inline's C++ source, kernels/*.cu its CUDA source (kernels/*.cpp join the C++ one on the CPU
target), local headers are inlined where first included, and model_new.py's `ops = load_extension(__file__)` becomes
a load_inline call with literal arguments. Inside the sandbox's jail that call goes through sandbox/native/inline.py's
fast build.

What a single translation unit per language changes, and how it is kept apart: each kernel file's own macros are
#undef'd after it (a `#define BLOCK 256` of one stage does not leak into the next); two kernel files that
define the same non-static name still clash, as they would when linked.
"""

import ast
import hashlib
import json
import re
from pathlib import PurePosixPath

KERNEL_SUFFIXES = (".cu", ".cpp", ".cc", ".c")
HEADER_SUFFIXES = (".cuh", ".h", ".hpp")
LOADERS = ("sandbox.native", "sandbox.native.build")
_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"\s*$')
_PRAGMA_ONCE = re.compile(r"^\s*#\s*pragma\s+once\s*$")
_DEFINE = re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)")
PROJECT = ("sandbox", "agent", "training", "studio")
LOAD_MARK = "#ks-load-extension-into "  # where model_new.py assigned load_extension(__file__), until rendered

# The flags the native build gives kernels (sandbox/native/build.py's toolchain), minus what load_inline sets itself
# (-std, -fPIC, the architecture of the GPU it builds on) and machine paths, which the exported file finds at import.
CPU_CFLAGS = ["-O3", "-march=native", "-fopenmp", "-fno-math-errno", "-fno-trapping-math"]
CPU_LDFLAGS = ["-fopenmp"]
CUDA_CFLAGS = ["-O3", "-lineinfo"]
CUBLAS_LDFLAGS = ["-lcublas", "-lcublasLt"]


class ExportError(ValueError):
    """The workspace cannot be written as a plain KernelBench solution; the message says what to change."""


def kernelbench_solution(files, title="A Kernel Studio solution"):
    """solution.py text for the workspace FILES ({relative path: text}): load_inline of the inlined sources and
    ModelNew from model_new.py, importing nothing but torch (and scipy_openblas32 where CPU kernels call OpenBLAS)."""
    if "model_new.py" not in files:
        raise ExportError("the solution has no model_new.py to export")
    future, model, loads = _rewrite_model(files["model_new.py"])
    if loads and "binding.cpp" not in files:
        raise ExportError("model_new.py calls load_extension but the workspace has no binding.cpp to build")
    return _render(title, _extension(files) if loads else None, future, model)


def _extension(files):
    kernels = sorted(p for p in files if p.startswith("kernels/") and PurePosixPath(p).suffix in KERNEL_SUFFIXES)
    cuda = [p for p in kernels if p.endswith(".cu")]
    cpp = [p for p in kernels if not p.endswith(".cu")]
    name = "ks_" + hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()[:16]
    seen = set()
    cpp_text = (
        [f"#define KS_NAMESPACE {name}"]
        + [_unit(files, p, seen) for p in cpp]
        + [_unit(files, "binding.cpp", seen, isolate=False)]
    )
    cuda_seen = set()
    cuda_text = [_unit(files, p, cuda_seen) for p in cuda]
    everything = "\n".join(files[p] for p in files if PurePosixPath(p).suffix in KERNEL_SUFFIXES + HEADER_SUFFIXES)
    return {
        "name": name,
        "cpp": "\n".join(cpp_text) + "\n",
        "cuda": "\n".join(cuda_text) + "\n" if cuda else None,
        "python_module": "PYBIND11_MODULE" in files["binding.cpp"],
        "cublas": bool(cuda) and "cublas" in everything,
        "cudnn": bool(cuda) and "cudnn.h" in everything,
        "openblas": not cuda and "cblas.h" in everything,
    }


def _unit(files, path, seen, isolate=True):
    """PATH's text with its local headers inlined (each once, as #pragma once would) after a #line naming it, and,
    with ISOLATE, the macros it defines itself #undef'd after it: a translation unit of its own, as far as one can be."""
    lines = [f'#line 1 "{path}"']
    defined = []
    for number, line in enumerate(files[path].split("\n"), 1):
        header = _local_header(files, path, line)
        if header is None:
            lines.append(line)
            match = _DEFINE.match(line)
            if match and match.group(1) not in defined:
                defined.append(match.group(1))
            continue
        if header not in seen:
            seen.add(header)
            lines.append(_header(files, header, seen))
        lines.append(f'#line {number + 1} "{path}"')
    if isolate:
        lines += [f"#undef {macro}" for macro in defined]
    return "\n".join(lines)


def _header(files, path, seen):
    lines = [f'#line 1 "{path}"']
    for number, line in enumerate(files[path].split("\n"), 1):
        header = _local_header(files, path, line)
        if header is None:
            lines.append("" if _PRAGMA_ONCE.match(line) else line)
            continue
        if header not in seen:
            seen.add(header)
            lines.append(_header(files, header, seen))
        lines.append(f'#line {number + 1} "{path}"')
    return "\n".join(lines)


def _local_header(files, path, line):
    """The workspace file a quoted #include on LINE of PATH names (beside PATH, or in kernels/ as the native build's
    -Ikernels finds it), or None for anything else (system headers, other lines)."""
    match = _INCLUDE.match(line)
    if not match:
        return None
    for base in (PurePosixPath(path).parent, PurePosixPath("kernels")):
        candidate = str(base / match.group(1))
        if candidate in files:
            return candidate
    return None


def _rewrite_model(source):
    """model_new.py with its `from sandbox.native import load_extension` gone and every `X = load_extension(...)`
    now a mark where load_inline goes: (its __future__ imports, which must open the exported file, the rest, whether it loads the
    extension). ExportError for any other use of the project."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise ExportError(f"model_new.py has a syntax error at line {exc.lineno}: {exc.msg}") from None
    lines = source.splitlines()
    edits, loads, future = {}, False, []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            future.append(ast.get_source_segment(source, node))
            edits[(node.lineno, node.end_lineno)] = ""
        elif isinstance(node, ast.ImportFrom) and node.module in LOADERS:
            others = [a.name for a in node.names if a.name != "load_extension"]
            if others:
                raise ExportError(
                    f"model_new.py line {node.lineno} imports {', '.join(others)} from {node.module}: "
                    f"an exported solution can only replace load_extension (with load_inline)"
                )
            edits[(node.lineno, node.end_lineno)] = ""
        elif _is_load(node):
            target = ast.get_source_segment(source, node.targets[0])
            edits[(node.lineno, node.end_lineno)] = f"{LOAD_MARK}{target}"
            loads = True
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            modules = [node.module or ""]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        for module in modules:
            if module.split(".")[0] in PROJECT and not (module in LOADERS and (node.lineno, node.end_lineno) in edits):
                raise ExportError(
                    f"model_new.py line {node.lineno} imports {module}, a part of kernel-studio: an "
                    f"exported solution runs without it; use torch and your own kernels, built with "
                    f"a module-level `ops = load_extension(__file__)`"
                )
    out, skip_to = [], 0
    spans = sorted(edits.items())
    for start, end in [s for s, _ in spans]:
        out += lines[skip_to : start - 1]
        if edits[(start, end)]:
            out.append(edits[(start, end)])
        skip_to = end
    out += lines[skip_to:]
    text = "\n".join(out).strip("\n") + "\n"
    if re.search(r"\bload_extension\b", text):
        raise ExportError(
            "model_new.py uses load_extension other than in a module-level `ops = load_extension("
            "__file__)`: the export replaces only that form with load_inline"
        )
    return "".join(f"{line}\n" for line in future) + ("\n" if future else ""), text, loads


def _is_load(node):
    return (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.value, ast.Call)
        and getattr(node.value.func, "id", getattr(node.value.func, "attr", None)) == "load_extension"
    )


def literal(text):
    """A Python literal of TEXT: a readable raw triple-quoted string where that is exact, repr() otherwise."""
    if "'''" not in text and not text.endswith(("\\", "'")) and "\r" not in text:
        return "r'''" + text + "'''"
    return repr(text)


HEADER = '''"""{title}

A KernelBench solution exported by Kernel Studio: the kernels and their torch binding are inlined below and built by
torch.utils.cpp_extension.load_inline when this file is imported (a C++ compiler{nvcc} and ninja are needed, as for
any load_inline solution). It imports nothing but torch{extra}.
"""
'''

PLAIN_HEADER = '''"""{title}

A KernelBench solution exported by Kernel Studio from a workspace whose model builds no extension.
"""
'''

SOURCES = """{stdlib}import torch
from torch.utils.cpp_extension import load_inline

NAME = {name!r}
CPP_SOURCE = {cpp}
{cuda_line}{finders}
"""

# Machine paths the kernels need, found where the solution is imported (load_inline's arguments are otherwise literals,
# so tools that read them statically, the sandbox's and the packager's, see every flag).
CUDNN_FINDER = '''

def _cudnn_include():
    """The folder of cudnn.h: the nvidia-cudnn wheel torch depends on carries it, else the toolkit's or the system's."""
    for base in sys.path + [os.environ.get("CUDA_HOME", "/usr/local/cuda"), "/usr"]:
        for folder in (os.path.join(base, "nvidia", "cudnn", "include"), os.path.join(base, "include")):
            if os.path.isfile(os.path.join(folder, "cudnn.h")):
                return [folder]
    return []


INCLUDE_PATHS = _cudnn_include()
'''

OPENBLAS_FINDER = """
# The CPU kernels call OpenBLAS through <cblas.h>, prefixed as the scipy-openblas32 wheel ships it.
import scipy_openblas32  # noqa: E402

INCLUDE_PATHS = [scipy_openblas32.get_include_dir()]
BLAS_LDFLAGS = [f"-L{scipy_openblas32.get_lib_dir()}", f"-Wl,-rpath,{scipy_openblas32.get_lib_dir()}",
                f"-l{scipy_openblas32.get_library()}"]
"""


def _load_call(ext, target):
    """The statement(s) that replace `TARGET = load_extension(__file__)`: load_inline with literal arguments."""
    cuda = ext["cuda"] is not None
    ldflags = repr((CUBLAS_LDFLAGS if ext["cublas"] else []) + ([] if cuda else CPU_LDFLAGS))
    if ext["openblas"]:
        ldflags += " + BLAS_LDFLAGS"
    args = ["name=NAME", "cpp_sources=[CPP_SOURCE]"] + (["cuda_sources=[CUDA_SOURCE]"] if cuda else [])
    # The binding's C++ gets load_inline's own flags on CUDA (its optimization is of no account; it includes only
    # the stable ABI's light headers); on the CPU the kernels share its unit and get the native build's.
    # USE_CUDA exposes the stable shim's CUDA entry points (aoti_torch_get_current_cuda_stream), as the native
    # build defines it: torch's load_inline does not (the H100, 2026-11-25: "not declared in this scope").
    args += [
        f"extra_cflags={['-DUSE_CUDA'] if cuda else CPU_CFLAGS!r}",
        f"extra_cuda_cflags={CUDA_CFLAGS if cuda else []!r}",
        f"extra_ldflags={ldflags}",
    ]
    if ext["cudnn"] or ext["openblas"]:
        args.append("extra_include_paths=INCLUDE_PATHS")
    args += [f"is_python_module={ext['python_module']!r}", "no_implicit_headers=True"]
    call = "load_inline(\n    " + ",\n    ".join(args) + ",\n)"
    if ext["python_module"]:
        return f"{target} = {call}"
    return f"{call}\n{target} = getattr(torch.ops, NAME)  # the operators binding.cpp registers under NAME"


def _render(title, ext, future, model):
    if ext is None:
        return PLAIN_HEADER.format(title=title) + future + "\n" + model
    cuda = ext["cuda"] is not None
    sources = SOURCES.format(
        stdlib="import os\nimport sys\n\n" if ext["cudnn"] else "",
        name=ext["name"],
        cpp=literal(ext["cpp"]),
        cuda_line=f"CUDA_SOURCE = {literal(ext['cuda'])}\n" if cuda else "",
        finders=(CUDNN_FINDER if ext["cudnn"] else "") + (OPENBLAS_FINDER if ext["openblas"] else ""),
    )
    header = HEADER.format(
        title=title,
        nvcc=" with nvcc" if cuda else "",
        extra=" (and scipy_openblas32, whose OpenBLAS the CPU kernels call)" if ext["openblas"] else "",
    )
    body = re.sub(re.escape(LOAD_MARK) + r"(\S+)", lambda m: _load_call(ext, m.group(1)), model)
    return header + future + sources + "\n" + body
