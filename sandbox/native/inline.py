"""torch.utils.cpp_extension.load_inline and load through the native build path: a precompiled torch header, a cache.

The candidate worker installs this before it imports a solution (`install()`). A KernelBench solution's
`load_inline` compiles a C++ unit that opens with torch/extension.h: about 40 s on two cores, nearly all of it torch's
headers. Here that unit is compiled with `-include` of ks_torch.h precompiled for the very same flags, or against a
lighter precompiled header where GCC shows, unit by unit, that this changes nothing (sandbox/native/light.py: a third
of the time), and the library is kept by a hash of everything that went into it. Each build's stages (ninja's log)
are recorded with it. Everything else is load_inline's own: the source text it
writes (the implicit includes, the pybind11 module it generates for `functions=`), torch's build file with torch's
flags (torch's generator writes it), the module's name (`NAME_vN` when a name comes back with other sources), the
error it raises ("Error building extension 'NAME': ..."). Two differences, both for people: `#line` directives make
compiler errors name the solution's own file and lines, and a build is found again in the cache.

What it cannot honour (SYCL, HIP, Windows, `build_directory`, standalone executables, options newer than this module)
goes to torch's own function, with the reason logged and recorded in `BUILDS`. A `.cu` source is split into its
kernels (nvcc without torch's headers) and its torch code (C++) where sandbox/native/cuda_split.py can, else built
whole by nvcc with torch's headers, as load_inline compiles it.
"""

import functools
import hashlib
import inspect
import json
import logging
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sandbox import settings
from sandbox.native import light
from sandbox.native.build import _first_line, _library_path, precompiled_headers, store

log = logging.getLogger(__name__)

# Marks on stderr: the harness reads them to say which stage ran out of time.
BUILDING, BUILT = "[sandbox] building extension", "[sandbox] built extension"
# load_inline's and load's arguments this module honours; any other one with a value of its own goes to torch.
INLINE_OPTIONS = {
    "name",
    "cpp_sources",
    "cuda_sources",
    "functions",
    "extra_cflags",
    "extra_cuda_cflags",
    "extra_ldflags",
    "extra_include_paths",
    "verbose",
    "with_cuda",
    "is_python_module",
    "with_pytorch_error_handling",
    "keep_intermediates",
    "use_pch",
    "no_implicit_headers",
}
LOAD_OPTIONS = {
    "name",
    "sources",
    "extra_cflags",
    "extra_cuda_cflags",
    "extra_ldflags",
    "extra_include_paths",
    "verbose",
    "with_cuda",
    "is_python_module",
    "keep_intermediates",
}
# User C flags a precompiled header can be shared under: optimization levels only (any -O1..3 defines __OPTIMIZE__
# and nothing else a header sees). Other flags get no precompiled header: they may change what it would hold, and
# flags chosen by solution code are never run outside the jail.
PCH_SAFE_FLAGS = {"", "-O0", "-O1", "-O2", "-O3"}
HEADER_SUFFIXES = (".h", ".hpp", ".hh", ".cuh", ".inl")
_TORCH_INCLUDE = re.compile(r'\s*#\s*include\s*[<"]torch/extension\.h[>"]')

_REAL = {}
BUILDS = []  # this process's builds (ExtensionBuild.to_json()), reported in the verdict
_VERSIONS = {}  # name -> [keys]: load_inline's NAME_vN for a name reused with other sources


class Fallback(Exception):
    """This call goes to torch's own function; the message says why."""


@dataclass
class ExtensionBuild:
    name: str
    via: str  # "native" (this module) or "torch" (torch's own function; `reason` says why)
    seconds: float
    cached: bool = False
    pch: bool = False
    reason: str = ""
    split: bool = False  # its .cu built as kernels apart from torch's headers (sandbox.native.cuda_split)
    # Seconds of each stage of the build (kernels, host, binding, check, link: sandbox.native.light), from ninja's log.
    stages: dict = field(default_factory=dict)
    # The header each C++ unit was compiled against: a light one (sandbox.native.light), or "full: why".
    headers: dict = field(default_factory=dict)

    def to_json(self):
        return asdict(self)


def install():
    """Route torch.utils.cpp_extension.load_inline and load through this module (once per process)."""
    import torch.utils.cpp_extension as ce

    if _REAL:
        return
    _REAL.update(load_inline=ce.load_inline, load=ce.load)
    ce.load_inline = functools.wraps(_REAL["load_inline"])(load_inline)
    ce.load = functools.wraps(_REAL["load"])(load)


def wanted(source):
    """Whether solution SOURCE (bytes) may build through torch.utils.cpp_extension."""
    return b"cpp_extension" in source


def load_inline(*args, **kwargs):
    """torch.utils.cpp_extension.load_inline, built through the precompiled header."""
    real = _REAL.get("load_inline") or _torch().load_inline
    try:
        options = _arguments(real, args, kwargs, INLINE_OPTIONS)
        return _build(options["name"], inline_files(options, _caller()), options)
    except Fallback as why:
        return _fallback(real, args, kwargs, why)


def load(*args, **kwargs):
    """torch.utils.cpp_extension.load (files), built through the precompiled header."""
    real = _REAL.get("load") or _torch().load
    try:
        options = _arguments(real, args, kwargs, LOAD_OPTIONS)
        sources = [options["sources"]] if isinstance(options["sources"], str) else list(options["sources"])
        return _build(options["name"], {Path(s).resolve(): None for s in sources}, options)
    except Fallback as why:
        return _fallback(real, args, kwargs, why)


def _torch():
    import torch.utils.cpp_extension as ce

    return ce


def _arguments(real, args, kwargs, honoured):
    """REAL's arguments by name, defaults filled in; Fallback where one asks for what this module cannot do."""
    ce = _torch()
    try:
        bound = inspect.signature(real).bind(*args, **kwargs)
    except TypeError:
        raise Fallback("its arguments do not match its signature (torch says how)") from None
    bound.apply_defaults()
    options = dict(bound.arguments)
    defaults = {k: p.default for k, p in inspect.signature(real).parameters.items()}
    for key, value in options.items():
        if key not in honoured and value != defaults.get(key) and value not in (None, [], ""):
            raise Fallback(f"{key}={value!r} is not supported by the sandbox's fast build")
    if ce.IS_WINDOWS or ce.IS_MACOS or ce.IS_HIP_EXTENSION:
        raise Fallback("the fast build covers Linux with CUDA or the CPU only")
    if shutil.which("ninja") is None:
        raise Fallback("ninja is not installed")
    return options


def _fallback(real, args, kwargs, why):
    name = kwargs.get("name", args[0] if args else "?")
    log.warning("%s(%r) is built by torch's own function: %s", real.__name__, name, why)
    t0 = time.perf_counter()
    try:
        return real(*args, **kwargs)
    finally:
        BUILDS.append(ExtensionBuild(str(name), "torch", round(time.perf_counter() - t0, 3), reason=str(why)).to_json())


# -- sources ------------------------------------------------------------------------------------------------------
def inline_files(options, origin):
    """{file name: text} of load_inline's main.cpp and cuda.cu, as load_inline writes them, plus `#line` directives
    that point each source at where ORIGIN (the calling file: (path, text)) holds it."""
    cpp = options["cpp_sources"]
    cpp = [cpp] if isinstance(cpp, str) else list(cpp)
    cuda = options.get("cuda_sources") or []
    cuda = [cuda] if isinstance(cuda, str) else list(cuda)
    implicit = not options.get("no_implicit_headers", False)
    lines = (["#include <torch/extension.h>"] if implicit else []) + _located(cpp, "cpp_sources", origin)
    functions = options.get("functions")
    if functions is not None:
        if isinstance(functions, str):
            functions = [functions]
        if isinstance(functions, list):
            functions = {f: f for f in functions}
        elif not isinstance(functions, dict):
            raise ValueError(f"Expected 'functions' to be a list or dict, but was {type(functions)}")
        wrap = "torch::wrap_pybind_function({0})" if options.get("with_pytorch_error_handling", True) else "{0}"
        lines += [
            '#line 1 "<the pybind11 module load_inline generates for functions=>"',
            "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {",
        ]
        lines += [f'm.def("{name}", {wrap.format(name)}, "{doc}");' for name, doc in functions.items()] + ["}"]
    files = {"main.cpp": "\n".join(lines)}
    if cuda:
        headers = ["#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>"] if implicit else []
        files["cuda.cu"] = "\n".join(headers + _located(cuda, "cuda_sources", origin))
    return files


def _located(sources, label, origin):
    """SOURCES, each after a `#line` directive naming its place in the calling file, else `LABEL[i]` line 1."""
    path, text = origin
    out = []
    for index, source in enumerate(sources):
        line = _line_of(source, text)
        where = path if line else f"{label}[{index}]"
        out += [f'#line {line or 1} "{_c_string(where)}"', source]
    return out


def _line_of(source, text):
    """The line of TEXT where SOURCE starts; None where it cannot be found (built at run time, escapes changed it)."""
    if not text or not source.strip():
        return None
    at = text.find(source)
    if at < 0:
        # A literal with escapes reads differently in the file: find its first lines instead, where they are unique.
        head = "\n".join(source.splitlines()[:3])
        at = text.find(head) if len(head.strip()) >= 20 and text.count(head) == 1 else -1
    return text.count("\n", 0, at) + 1 if at >= 0 else None


def _c_string(text):
    return str(text).replace("\\", "\\\\").replace('"', '\\"')


def _caller():
    """(path, text) of the file that called load_inline: the solution, whose lines compiler errors should name."""
    frame = sys._getframe(1)
    while frame and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    path = Path(frame.f_code.co_filename) if frame else None
    try:
        return str(path), path.read_text(errors="replace") if path and path.stat().st_size < (4 << 20) else ""
    except OSError:
        return str(path), ""


def _opens_with_torch_extension(text):
    """Whether the first directive of TEXT (past blank lines, comments and `#line`) includes torch/extension.h:
    then `-include` of the precompiled header compiles it exactly as written."""
    in_comment = False
    for line in text.splitlines():
        stripped = line.strip()
        if in_comment:
            in_comment = "*/" not in stripped
            continue
        if not stripped or stripped.startswith("//") or stripped.startswith("#line"):
            continue
        if stripped.startswith("/*"):
            in_comment = "*/" not in stripped
            continue
        return bool(_TORCH_INCLUDE.match(stripped))
    return False


# -- building -----------------------------------------------------------------------------------------------------
def _build(name, files, options):
    """Build FILES ({name: text} written into a scratch folder, or {path of a user's file: None}) as extension NAME
    unless cached; returns what load_inline returns."""
    ce = _torch()
    t0 = time.perf_counter()
    with_cuda = options.get("with_cuda")
    if with_cuda is None:
        with_cuda = any(map(ce._is_cuda_file, map(str, files)))
    scratch = Path(tempfile.mkdtemp(prefix="ks-inline-"))
    try:
        sources = []
        for rel, text in files.items():
            if text is None:
                sources.append(Path(rel))
            else:
                (scratch / rel).write_text(text)
                sources.append(scratch / rel)
        texts = {str(s): s.read_text(errors="replace") for s in sources}
        ninja = _torch_ninja(scratch, name, sources, options, with_cuda)
        key = _key(ninja, scratch, texts, sources, options, with_cuda)
        module_name = _versioned(name, key)
        ninja = _torch_ninja(scratch, module_name, sources, options, with_cuda)
        library = _library_path(_digest(key, module_name), module_name)
        cached, pch, split, report = library.exists(), False, False, ({}, {})
        if not cached and with_cuda and settings.SPLIT_CUDA:
            report = _build_split(scratch, module_name, sources, texts, options, library)
            split = pch = report is not None
        if not cached and not split:
            eligible = [s for s in sources if _opens_with_torch_extension(texts[str(s)])]
            ninja, headers, why = _with_pch(ninja, eligible)
            pch = bool(headers)
            if why:
                log.info("extension %r is compiled without the precompiled torch header: %s", module_name, why)
            print(
                f"{BUILDING} '{module_name}' ({'C++ through the precompiled torch header' if pch else 'full'})",
                file=sys.stderr,
                flush=True,
            )
            # A whole `.cu` (nvcc with torch's headers, a minute) is the build's longest part: no light headers there.
            light_units = eligible if not with_cuda else []
            report = _compile(scratch, module_name, ninja, headers, light_units, options.get("verbose"))
            store(scratch / f"{module_name}{ce.LIB_EXT}", library)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    module = ce._import_module_from_library(module_name, str(library.parent), options.get("is_python_module", True))
    seconds = round(time.perf_counter() - t0, 3)
    if not cached:
        print(f"{BUILT} '{module_name}' in {seconds:.1f} s", file=sys.stderr, flush=True)
    stages, headers = report or ({}, {})
    BUILDS.append(ExtensionBuild(module_name, "native", seconds, cached, pch, "", split, stages, headers).to_json())
    return module


def _build_split(scratch, name, sources, texts, options, library):
    """Build NAME with each `.cu` split into its kernels and its torch code (sandbox.native.cuda_split), the C++
    through the precompiled torch header; (stages, headers) where it was built (into LIBRARY), else None. Anything
    that does not split, or a split that does not compile, is left to the whole build, whose errors are the
    solution's own."""
    from sandbox.native.cuda_split import Unsplittable, split

    ce = _torch()
    folder = scratch / "split"
    folder.mkdir()
    parts, new = [], []
    try:
        for source in sources:
            if not ce._is_cuda_file(str(source)):
                new.append(source)
                continue
            device, host = split(texts[str(source)])
            stem = f"{len(parts)}_{source.stem}"
            (folder / f"{stem}.kernels.cu").write_text(device)
            (folder / f"{stem}.host.cpp").write_text(host)
            new += [folder / f"{stem}.kernels.cu", folder / f"{stem}.host.cpp"]
            parts.append(folder / f"{stem}.host.cpp")
    except Unsplittable as why:
        log.info("extension %r: its CUDA source is built whole: %s", name, why)
        return None
    if not parts:
        return None
    # The split units sit in a folder of their own: a user's file's own folder stays on the include path.
    extra = list(options.get("extra_include_paths") or []) + sorted({str(s.parent) for s in sources})
    ninja = _torch_ninja(folder, name, new, {**options, "extra_include_paths": extra}, True)
    eligible = parts + [s for s in new if not s.suffix == ".cu" and _opens_with_torch_extension(s.read_text())]
    ninja, headers, why = _with_pch(ninja, eligible)
    if not headers:
        log.info("extension %r: no split build without the precompiled torch header (%s)", name, why)
        return None
    print(
        f"{BUILDING} '{name}' (kernels apart from torch's headers, C++ through the precompiled header)",
        file=sys.stderr,
        flush=True,
    )
    try:
        report = _compile(folder, name, ninja, headers, eligible, False, kernels=True)
    except RuntimeError as exc:
        log.info("extension %r: the split build failed, building it whole: %s", name, str(exc)[-2000:])
        print(
            f"{BUILDING} '{name}': the split build failed, building the CUDA source whole", file=sys.stderr, flush=True
        )
        return None
    store(folder / f"{name}{ce.LIB_EXT}", library)
    return report


def _call(function, **kwargs):
    """FUNCTION (a private helper of torch's) with the KWARGS its signature takes; Fallback where it wants more."""
    params = inspect.signature(function).parameters
    try:
        return function(**{k: v for k, v in kwargs.items() if k in params})
    except TypeError as exc:
        raise Fallback(f"torch {__import__('torch').__version__} changed {function.__name__} ({exc})") from None


def _torch_ninja(folder, name, sources, options, with_cuda):
    """The build.ninja torch writes for this call (its flags, compilers and rules), as text."""
    ce = _torch()
    ldflags = _call(
        ce._prepare_ldflags,
        extra_ldflags=list(options.get("extra_ldflags") or []),
        with_cuda=with_cuda,
        with_sycl=False,
        verbose=bool(options.get("verbose")),
        is_standalone=False,
    )
    _call(
        ce._write_ninja_file_to_build_library,
        path=str(folder / "build.ninja"),
        name=name,
        sources=[str(s) for s in sources],
        extra_cflags=list(options.get("extra_cflags") or []),
        extra_cuda_cflags=list(options.get("extra_cuda_cflags") or []),
        extra_sycl_cflags=[],
        extra_ldflags=ldflags,
        extra_include_paths=list(options.get("extra_include_paths") or []),
        with_cuda=with_cuda,
        with_sycl=False,
        is_standalone=False,
    )
    return (folder / "build.ninja").read_text()


def _digest(*parts):
    h = hashlib.sha256()
    for part in parts:
        h.update(part if isinstance(part, bytes) else json.dumps(part, sort_keys=True, default=str).encode())
        h.update(b"\0")
    return h.hexdigest()


def _key(ninja, scratch, texts, sources, options, with_cuda):
    """What the library depends on: torch's build file (flags, compilers), the sources and the headers beside the
    user's own files, the compilers' versions, torch's."""
    import torch

    variables = _variables(ninja)
    compilers = [_first_line([variables.get("cxx", "c++"), "--version"])]
    if with_cuda:
        compilers.append(_first_line([shlex.split(variables.get("nvcc", "nvcc"))[0], "--version"]))
    headers = {}
    folders = {s.parent for s in sources if s.parent != scratch}
    folders |= {Path(p) for p in options.get("extra_include_paths") or []}
    for folder in sorted(folders):
        for path in sorted(folder.glob("*")) if folder.is_dir() else []:
            if path.suffix in HEADER_SUFFIXES and path.is_file():
                headers[str(path)] = path.read_bytes()
    return _digest(
        "ks-inline-1",
        ninja.replace(str(scratch), "@"),
        {k.replace(str(scratch), "@"): v for k, v in texts.items()},
        {k: hashlib.sha256(v).hexdigest() for k, v in headers.items()},
        compilers,
        torch.__version__,
        bool(options.get("is_python_module", True)),
    )


def _versioned(name, key):
    """load_inline's module name: NAME the first time, NAME_vN when NAME comes back with other sources or flags."""
    keys = _VERSIONS.setdefault(name, [])
    if key not in keys:
        keys.append(key)
    version = keys.index(key)
    return name if version == 0 else f"{name}_v{version}"


def _variables(ninja):
    """The top-level `name = value` lines of a build.ninja."""
    found = {}
    for line in ninja.splitlines():
        match = re.match(r"([A-Za-z_][A-Za-z0-9_]*) = (.*)$", line)
        if match:
            found[match.group(1)] = match.group(2)
    return found


def pch_flags(cflags):
    """The flags a precompiled header for a unit compiled with torch's CFLAGS (a list) is built with, or (None, why)
    where the unit's own flags rule one out. The extension's name and the user's include folders do not matter to
    it; the user's extra flags do, and only optimization levels are shared."""
    kept, extra = [], []
    for flag in cflags:
        if flag.startswith("-DTORCH_EXTENSION_NAME=") or flag.startswith("-I"):
            continue
        # torch's own -std closes its flags: extra_cflags follow it.
        user = any(f.startswith("-std=") for f in kept)
        (extra if user else kept).append(flag)
    unsafe = [f for f in extra if f not in PCH_SAFE_FLAGS]
    if unsafe:
        return None, f"extra_cflags {unsafe} may change what a precompiled torch header holds"
    optimized = [f for f in extra if f] and [f for f in extra if f][-1] != "-O0"
    return kept + (["-O2"] if optimized else []), ""


def _with_pch(ninja, eligible):
    """NINJA compiling the ELIGIBLE C++ sources with `-include` of the precompiled header for their flags:
    (ninja, the precompiled headers for those flags ({name: header}, sandbox.native.light.pch_sources(); {} where none
    is used), why not)."""
    if not eligible:
        return ninja, {}, "no C++ source opens with #include <torch/extension.h>"
    rule = "$cflags -c $in"
    variables = _variables(ninja)
    if rule not in ninja or "cflags" not in variables:
        return ninja, {}, "torch's build file has a C++ compile rule this sandbox does not know"
    flags, why = pch_flags(shlex.split(variables["cflags"]))
    if flags is None:
        return ninja, {}, why
    cxx = shlex.split(variables.get("cxx", "c++"))[0]
    headers = precompiled_headers(
        cxx, _first_line([cxx, "--version"]), flags, light.pch_sources(), build=_can_build_pch()
    )
    header = headers.get(light.MAIN)
    if header is None:
        return ninja, {}, "no precompiled torch header for these flags here (the harness prepares those it foresees)"
    wanted = {_ninja_path(s) for s in eligible}
    out = []
    for line in ninja.replace(rule, "$cflags $ks_pch -c $in", 1).splitlines():
        out.append(line)
        match = re.match(r"build .*?: compile (.*)$", line)
        if match and match.group(1) in wanted:
            out.append(f"  ks_pch = -include {shlex.quote(str(header))}")
    return "\n".join(out) + "\n", headers, ""


def _ninja_path(path):
    """PATH as torch's build file writes it."""
    return str(path).replace(" ", "$ ")


def prepare_headers(source, path, device):
    """The folders of the precompiled torch headers the load_inline calls of solution SOURCE (bytes; its PATH names
    it in errors) will look for, built now where missing: by the harness, before the jail that cannot build them
    starts. The calls are read statically (sandbox.package.extract); where they cannot be, load_inline's defaults for
    DEVICE are foreseen. Only optimization levels of the user's own flags count (pch_flags): nothing chosen by
    solution code reaches a compiler outside the jail."""
    from sandbox.errors import PackagingError
    from sandbox.package.extract import inline_calls

    try:
        found = inline_calls(source.decode(errors="replace"), path)
        calls = {(bool(c.cuda_sources), tuple(c.extra_cflags)) for c in found}
    except PackagingError:
        calls = {(device == "cuda", ())}
    folders = set()
    for with_cuda, extra_cflags in sorted(calls):
        with tempfile.TemporaryDirectory(prefix="ks-inline-") as tmp:
            sources = [Path(tmp, "main.cpp")] + ([Path(tmp, "cuda.cu")] if with_cuda else [])
            # An architecture flag of our own: torch would otherwise ask the GPU, which this process must not touch.
            options = {"extra_cflags": list(extra_cflags), "extra_cuda_cflags": ["-arch=sm_90"]}
            variables = _variables(_torch_ninja(Path(tmp), "ks_probe", sources, options, with_cuda))
        flags, _ = pch_flags(shlex.split(variables["cflags"]))
        if flags is not None:
            cxx = shlex.split(variables.get("cxx", "c++"))[0]
            headers = precompiled_headers(cxx, _first_line([cxx, "--version"]), flags, light.pch_sources())
            folders.add(headers[light.MAIN].parent)
    return sorted(folders)


def _can_build_pch():
    """Outside a jail the worker cache is writable and the header is built on first use; inside, only what the
    harness prepared and exposed is there."""
    root = settings.cache_dir()
    probe = root if root.exists() else root.parent
    return probe.exists() and os.access(probe, os.W_OK)


def _compile(folder, name, ninja, headers, eligible, verbose, kernels=False):
    """Build FOLDER's extension NAME from NINJA (torch's build file through the precompiled header); (stages,
    headers) for ExtensionBuild. Where the light headers are there, a first ninja run compiles the ELIGIBLE C++
    units against them and checks that it changes nothing (sandbox.native.light), with KERNELS the CUDA kernel units
    beside them; the build file's own run then links, compiling against the full header what the first did not."""
    units, decided = [], {}
    if settings.INLINE_LIGHT_HEADERS and eligible and len(headers) > 1:
        texts = {_ninja_path(s): s.read_text(errors="replace") for s in eligible}
        units, skipped = light.plan(folder, ninja, texts, headers)
        decided = {Path(s).name: f"full: {why}" for s, why in skipped.items()}
    (folder / "build.ninja").write_text(ninja)
    if units:
        wanted = light.targets(units, ninja, kernels)
        command = ["ninja", "-f", "ks_light.ninja", "-k", "0", "-j", str(settings.MAX_JOBS), *wanted]
        subprocess.run(command, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        failed = [t for t in wanted if t.endswith(".cuda.o") and not (folder / t).exists()]
        if failed:
            raise RuntimeError(f"Error building extension '{name}': {', '.join(failed)} did not compile")
        settled, verdicts = light.settle(folder, ninja, units)
        decided.update({Path(s.replace("$ ", " ")).name: v for s, v in verdicts.items()})
        (folder / "build.ninja").write_text(settled)
    _run_ninja(folder, name, verbose)
    return _stages(folder, ninja, units), decided


def _stages(folder, ninja, units):
    """{stage: seconds} of the build in FOLDER from ninja's log: the longest of each stage's units (they run side
    by side): kernels (nvcc), host (a split `.cu`'s torch code), binding (the unit holding the pybind11 module),
    c++ (other units), check (sandbox.native.light's parses), link."""
    stage = {obj: _stage_of(source) for source, obj in light.compiled(ninja)}
    stage.update({f"{u.stem}.light.o": _stage_of(u.source) for u in units})
    stages = {}
    for line in _read_lines(folder / ".ninja_log"):
        fields = line.split("\t")
        if len(fields) != 5 or not fields[0].isdigit():
            continue
        output = fields[3]
        if output.endswith(".cuda.o"):
            name = "kernels"
        elif output.endswith((".tree", ".raw")):
            name = "check"
        elif output.endswith(".o"):
            name = stage.get(output, "c++")
        else:
            name = "link"
        stages[name] = round(max(stages.get(name, 0.0), (int(fields[1]) - int(fields[0])) / 1000), 3)
    return stages


def _stage_of(source):
    name = Path(source.replace("$ ", " ")).name
    return "host" if name.endswith(".host.cpp") else "binding" if name == "main.cpp" else "c++"


def _read_lines(path):
    try:
        return Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return []


def _run_ninja(folder, name, verbose):
    """ninja in FOLDER; torch's error where it fails ("Error building extension 'NAME': <output>")."""
    command = ["ninja", "-v", "-j", str(settings.MAX_JOBS)]
    proc = subprocess.run(command, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    output = proc.stdout.decode(errors="replace")
    if verbose:
        print(output, flush=True)
    if proc.returncode:
        raise RuntimeError(f"Error building extension '{name}'" + (f": {output}" if output else ""))
