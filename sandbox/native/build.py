"""Building a native workspace: the ninja file, the precompiled torch header, the content-hash cache."""

import fcntl
import functools
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from sandbox import settings
from sandbox.errors import BuildError

SOURCE_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".c", ".h", ".hpp")
PCH_HEADER = Path(__file__).with_name("ks_torch.h")
STABLE_PCH_HEADER = Path(__file__).with_name("ks_stable.h")
# A binding whose first preprocessor directive includes one of these may open with the precompiled stable header:
# nothing it defines or tests comes before torch's headers.
STABLE_FIRST_INCLUDE = re.compile(rb"\s*#\s*include\s*<torch/(csrc/stable|headeronly|csrc/inductor/aoti_torch)/")
_stable_pch_failed = set()
_loaded = {}


@dataclass
class BuildResult:
    library: str
    module_name: str
    key: str
    cached: bool
    seconds: float
    log: str = ""


def workspace_files(workspace):
    """{relative path: bytes} of everything that is compiled: binding.cpp and kernels/**."""
    workspace = Path(workspace)
    if not (workspace / "binding.cpp").is_file():
        raise BuildError(
            f"{workspace} has no binding.cpp: a native workspace needs binding.cpp, kernels/ and model_new.py"
        )
    files = {"binding.cpp": (workspace / "binding.cpp").read_bytes()}
    kernels = workspace / "kernels"
    if kernels.is_dir():
        for path in sorted(kernels.rglob("*")):
            if path.is_file() and path.suffix in SOURCE_SUFFIXES:
                files[str(path.relative_to(workspace))] = path.read_bytes()
    return files


def workspace_device(workspace):
    return "cuda" if any((Path(workspace) / "kernels").rglob("*.cu")) else "cpu"


def _first_line(argv):
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout.strip().splitlines()
        return out[0] if argv[-1] != "--version" or "nvcc" not in argv[0] else out[-1]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "unknown"


@functools.lru_cache(maxsize=1)
def _cuda_arch():
    # nvidia-smi rather than torch.cuda: the worker's parent process must never initialize CUDA.
    try:
        caps = subprocess.run(
            ["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.split()
        if caps:
            return caps[0].replace(".", "")
    except (OSError, subprocess.TimeoutExpired):
        pass
    first = os.environ.get("TORCH_CUDA_ARCH_LIST", "9.0").replace(";", " ").split()[0]
    return first.replace(".", "").replace("+PTX", "")


def _cuda_home():
    """CUDA_HOME, else the toolkit holding the nvcc on PATH, else /usr/local/cuda: the first with headers."""
    candidates = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    nvcc = shutil.which("nvcc")
    if nvcc:
        candidates.append(str(Path(nvcc).resolve().parent.parent))  # a wrapper script resolves elsewhere
    candidates.append("/usr/local/cuda")
    for home in filter(None, candidates):
        if (Path(home) / "include" / "cuda_runtime.h").exists():
            return home
    return "/usr/local/cuda"


def _cudnn_include(cuda_home):
    """The folder of cudnn.h, or None: the one torch's wheels carry (nvidia/cudnn), else the toolkit's or the
    system's. Kernels include it and open the library itself at run time, as cuBLAS is linked."""
    import site

    roots = []
    for base in site.getsitepackages() + [site.getusersitepackages()]:
        roots += sorted(Path(base).glob("nvidia/cudnn")) + sorted(Path(base).glob("nvidia/cu*"))
    roots += [Path(cuda_home), Path("/usr"), Path("/usr/local")]
    for root in roots:
        for inc in (root / "include", root / "include" / "x86_64-linux-gnu"):
            if (inc / "cudnn.h").exists():
                return str(inc)
    return None


@functools.lru_cache(maxsize=2)
def toolchain(device):
    """Compilers, flags and libraries for DEVICE; everything here is part of the cache key.

    Paths are computed here rather than through torch.utils.cpp_extension, whose import (setuptools)
    costs seconds on a cold machine; only classic bindings need it (classic_flags).
    """
    import torch

    cuda = device == "cuda"
    root = Path(torch.__file__).resolve().parent
    cxx = os.environ.get("CXX", "g++")
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    includes = [
        str(root / "include"),
        str(root / "include" / "torch" / "csrc" / "api" / "include"),
        sysconfig.get_paths()["include"],
    ]
    common = ["-O2", "-std=c++17", "-fPIC", f"-D_GLIBCXX_USE_CXX11_ABI={abi}", "-w"] + (["-DKS_CUDA"] if cuda else [])
    lib = str(root / "lib")
    # -Bsymbolic: an extension's calls into its own kernels bind to them, never to a same-named function of
    # another extension loaded earlier into the process; --exclude-libs: what static archives bring (a compiler's
    # static C++ runtime) is not exported for other libraries to bind to.
    ldflags = [
        "-shared",
        "-Wl,-Bsymbolic",
        "-Wl,--exclude-libs,ALL",
        f"-L{lib}",
        f"-Wl,-rpath,{lib}",
        "-lc10",
        "-ltorch_cpu",
    ]
    tc = {
        "device": device,
        "cxx": cxx,
        "cxx_version": _first_line([cxx, "--version"]),
        "torch": torch.__version__,
        # The stable ABI binding sees only torch's small C shim headers: it compiles in about a second.
        "stable_flags": common + [f"-I{p}" for p in includes],
        # A classic binding (torch/extension.h, pybind11) goes through the precompiled header.
        "classic_flags": common + ["-DTORCH_API_INCLUDE_EXTENSION_H"] + [f"-I{p}" for p in includes],
        "classic_libs": ["-ltorch", "-ltorch_python"],
        "ldflags": ldflags,
        "python": sysconfig.get_config_var("EXT_SUFFIX"),
    }
    if cuda:
        cuda_home = _cuda_home()
        nvcc = os.path.join(cuda_home, "bin", "nvcc")
        arch = _cuda_arch()
        tc.update(
            nvcc=nvcc,
            nvcc_version=_first_line([nvcc, "--version"]),
            arch=arch,
            kernel_flags=[
                "-O3",
                "-std=c++17",
                "-lineinfo",
                f"-gencode=arch=compute_{arch},code=sm_{arch}",
                "--compiler-options",
                "-fPIC",
                "-Ikernels",
            ],
        )
        # USE_CUDA exposes the shim's CUDA entry points (aoti_torch_get_current_cuda_stream).
        tc["stable_flags"] = tc["stable_flags"] + ["-DUSE_CUDA", f"-I{cuda_home}/include"]
        tc["classic_flags"] = tc["classic_flags"] + [f"-I{cuda_home}/include"]
        tc["ldflags"] = ldflags + [
            "-lc10_cuda",
            "-ltorch_cuda",
            f"-L{cuda_home}/lib64",
            f"-Wl,-rpath,{cuda_home}/lib64",
            "-lcudart",
            "-lcublas",
            "-lcublasLt",
        ]
        cudnn = _cudnn_include(cuda_home)
        if cudnn:
            # Headers only: kernels open cuDNN at run time from the folder of the one torch loaded.
            tc["kernel_flags"] = tc["kernel_flags"] + [f"-I{cudnn}"]
    else:
        try:  # OpenBLAS for GEMMs: <cblas.h> declares its functions prefixed (scipy_cblas_sgemm)
            import scipy_openblas32 as blas
        except ImportError:
            raise BuildError(
                "the CPU target links OpenBLAS from the scipy-openblas32 wheel, which is not installed: "
                "pip install scipy-openblas32 (a dependency of kernel-studio)"
            ) from None
        # No errno from libm: lets the vectorizer call glibc's SIMD math (expf, logf, ...) in omp simd loops.
        tc.update(
            kernel_flags=[
                "-O3",
                "-std=c++17",
                "-fPIC",
                "-march=native",
                "-fopenmp",
                "-fno-math-errno",
                "-fno-trapping-math",
                "-Ikernels",
                f"-I{blas.get_include_dir()}",
            ],
            blas=f"scipy-openblas32 {blas.__version__}",
        )
        # The rpath lets a jailed solution find OpenBLAS: it sees the Python installation and its packages.
        tc["ldflags"] = ldflags + [
            "-fopenmp",
            f"-L{blas.get_lib_dir()}",
            f"-Wl,-rpath,{blas.get_lib_dir()}",
            f"-l{blas.get_library()}",
        ]
    return tc


@functools.lru_cache(maxsize=2)
def classic_flags(device):
    """Flags of a classic (pybind11) binding: torch's pybind ABI flags come from cpp_extension."""
    import torch.utils.cpp_extension as ce

    return toolchain(device)["classic_flags"] + ce._get_pybind11_abi_build_flags()


def binding_style(binding_source):
    """'stable' for torch's stable ABI (torch/csrc/stable/...), 'classic' for torch/extension.h and pybind11."""
    classic = b"torch/extension.h" in binding_source or b"PYBIND11_MODULE" in binding_source
    return "stable" if b"torch/csrc/stable" in binding_source and not classic else "classic"


def _digest(*parts):
    h = hashlib.sha256()
    for part in parts:
        h.update(part if isinstance(part, bytes) else json.dumps(part, sort_keys=True).encode())
        h.update(b"\0")
    return h.hexdigest()


def workspace_key(workspace, device=None):
    device = device or workspace_device(workspace)
    files = workspace_files(workspace)
    style = binding_style(files["binding.cpp"])
    flags = classic_flags(device) if style == "classic" else []
    return _digest(toolchain(device), flags, *[p.encode() + b"\0" + files[p] for p in sorted(files)])


def ensure_pch(device):
    """The precompiled torch header for DEVICE's flags, built once per worker (under a file lock)."""
    tc = toolchain(device)
    return precompiled_header(tc["cxx"], tc["cxx_version"], classic_flags(device))


def stable_pch(device, binding_source):
    """The precompiled stable-ABI header (ks_stable.h) for DEVICE's flags, built once per worker, when BINDING_SOURCE
    opens with torch's stable headers; else None, and the binding compiles its headers itself (about 2 s of g++ a
    build, most of a small workspace's). None too where it does not build on this toolchain (tried once a process)."""
    first = next((line for line in binding_source.splitlines() if line.lstrip().startswith(b"#")), b"")
    if not STABLE_FIRST_INCLUDE.match(first) or device in _stable_pch_failed:
        return None
    tc = toolchain(device)
    # A process that cannot write the cache (solution code building in its jail) uses the header only if it is there.
    build = _can_create(settings.cache_dir() / "pch")
    try:
        return precompiled_headers(
            tc["cxx"], tc["cxx_version"], tc["stable_flags"], {STABLE_PCH_HEADER.name: STABLE_PCH_HEADER}, build
        ).get(STABLE_PCH_HEADER.name)
    except (BuildError, OSError):
        _stable_pch_failed.add(device)
        return None


def precompiled_header(cxx, cxx_version, flags, build=True):
    """ks_torch.h precompiled by CXX with FLAGS in the worker cache, built once (under a file lock); without BUILD
    (a process that cannot or must not build it), None where it is missing."""
    return precompiled_headers(cxx, cxx_version, flags, {PCH_HEADER.name: PCH_HEADER}, build).get(PCH_HEADER.name)


def precompiled_headers(cxx, cxx_version, flags, sources, build=True):
    """{name: header} of SOURCES ({name: header file}, the first one the main one) precompiled by CXX with FLAGS side
    by side in one folder of the worker cache, built once and in parallel (under a file lock). Without BUILD (a
    process that cannot or must not build them), those that are there. A BuildError where the main one does
    not build; another that does not is left out (its compiler output kept beside, as NAME.failed). Shared by
    classic bindings and load_inline's translation units (sandbox/native/inline.py, sandbox/native/light.py)."""
    folder = (
        settings.cache_dir() / "pch" / _digest(cxx_version, flags, *[p.read_bytes() for p in sources.values()])[:16]
    )
    main = next(iter(sources))
    done = [(folder / f"{name}.gch").exists() or (folder / f"{name}.failed").exists() for name in sources]
    if build and not all(done):
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            _precompile(cxx, flags, folder, sources, main)
        _open_up(folder)
    return {name: folder / name for name in sources if (folder / f"{name}.gch").exists()}


def _precompile(cxx, flags, folder, sources, main):
    """Compile the SOURCES whose headers FOLDER lacks, all at once (each is one g++ on one core)."""
    running = {}
    for name, source in sources.items():
        if (folder / f"{name}.gch").exists() or (folder / f"{name}.failed").exists():
            continue
        shutil.copy(source, folder / name)
        tmp = folder / f".{name}.gch.{os.getpid()}"
        argv = [cxx, "-x", "c++-header", *flags, str(folder / name), "-o", str(tmp)]
        running[name] = (subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True), tmp)
    outputs = {name: proc.communicate()[0] for name, (proc, _) in running.items()}
    for name, (proc, tmp) in running.items():
        if proc.returncode == 0:
            os.replace(tmp, folder / f"{name}.gch")
        elif name != main:
            (folder / f"{name}.failed").write_text(outputs[name])
    if main in running and running[main][0].returncode:
        raise BuildError(f"building the precompiled torch header {main} failed", outputs[main])


def _open_up(path):
    """Cache entries are read by jailed, unprivileged uids: world-readable, never world-writable."""
    root = settings.cache_dir()
    if root not in Path(path).parents:
        return  # a build of the process's own (solution code building in its jail): nobody else reads it
    for parent in [root, *[p for p in Path(path).parents if root in p.parents]]:
        os.chmod(parent, 0o755)
    for dirpath, dirnames, filenames in os.walk(path):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o644)


def _ninja(tc, files, module_name, style, pch=None):
    flags = tc["stable_flags"] if style == "stable" else classic_flags(tc["device"])
    if pch is not None:  # g++ takes PCH.gch beside it (same flags), or PCH's text where that does not fit
        flags = [*flags, "-include", str(pch)]
    libs = tc["ldflags"] + ([] if style == "stable" else tc["classic_libs"])
    rules = [
        "ninja_required_version = 1.3",
        f"rule cxx\n  command = {tc['cxx']} -MMD -MF $out.d {' '.join(flags)} -DKS_NAMESPACE={module_name} "
        f"-c $in -o $out\n  depfile = $out.d",
        f"rule kcxx\n  command = {tc['cxx']} {' '.join(tc['kernel_flags'])} -c $in -o $out",
        f"rule link\n  command = {tc['cxx']} $in {' '.join(libs)} -o $out",
    ]
    if "nvcc" in tc:
        rules.append(f"rule nvcc\n  command = {tc['nvcc']} {' '.join(tc['kernel_flags'])} -c $in -o $out")
    objects, lines = [], []
    for rel in files:
        suffix = Path(rel).suffix
        if rel == "binding.cpp" or suffix not in (".cu", ".cpp", ".cc", ".c"):
            continue
        obj = f"obj/{rel}.o"
        lines.append(f"build {obj}: {'nvcc' if suffix == '.cu' else 'kcxx'} src/{rel}")
        objects.append(obj)
    binding = "src/binding.cpp" if style == "stable" else "_ks_binding.cpp"
    lines.append(f"build obj/binding.o: cxx {binding}")
    objects.append("obj/binding.o")
    lines.append(f"build {module_name}.so: link {' '.join(objects)}")
    return "\n".join(rules + lines) + "\n"


def _wrapper(module_name, pch_header, binding_source):
    # The precompiled header must open the unit; the module name is defined after it, so one header
    # serves every workspace.
    text = [f'#include "{pch_header}"', f"#define TORCH_EXTENSION_NAME {module_name}", '#include "src/binding.cpp"']
    if b"PYBIND11_MODULE" not in binding_source:
        text.append("PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {}")
    return "\n".join(text) + "\n"


def prepare(workspace, build_dir, device):
    """Write sources, wrapper and build.ninja into BUILD_DIR; returns (module_name, key, library path in cache, the
    precompiled header the binding opens with or None)."""
    device = device or workspace_device(workspace)
    files = workspace_files(workspace)
    key = workspace_key(workspace, device)
    module_name = f"ks_{key[:16]}"
    style = binding_style(files["binding.cpp"])
    build_dir = Path(build_dir)
    for rel, data in files.items():
        (build_dir / "src" / rel).parent.mkdir(parents=True, exist_ok=True)
        (build_dir / "src" / rel).write_bytes(data)
    stable = stable_pch(device, files["binding.cpp"]) if style == "stable" else None
    pch = stable if style == "stable" else ensure_pch(device)
    if style == "classic":
        (build_dir / "_ks_binding.cpp").write_text(_wrapper(module_name, pch, files["binding.cpp"]))
    (build_dir / "build.ninja").write_text(_ninja(toolchain(device), files, module_name, style, stable))
    return module_name, key, cached_library(key, module_name), pch


def cached_library(key, module_name):
    return settings.cache_dir() / "builds" / key / f"{module_name}.so"


def _library_path(key, module_name):
    """Where to find or put the library: the worker's cache, or, where this process cannot write it (solution code
    building in its jail, which sees only its own build of the cache), a build folder of its own."""
    library = cached_library(key, module_name)
    if library.exists() or _can_create(library.parent):
        return library
    return Path(tempfile.gettempdir()) / "kernel-studio-builds" / key / f"{module_name}.so"


def _can_create(folder):
    for path in [folder, *folder.parents]:
        if path.exists():
            return os.access(path, os.W_OK | os.X_OK)
    return False


def build_folder(workspace, device=None):
    """The cache folder WORKSPACE's library is (or will be) stored in, made now: a jail that is to load it binds
    this folder alone before the build has run."""
    device = device or workspace_device(workspace)
    key = workspace_key(workspace, device)
    folder = cached_library(key, f"ks_{key[:16]}").parent
    folder.mkdir(parents=True, exist_ok=True)
    _open_up(folder)
    return folder


def store(built, library):
    library.parent.mkdir(parents=True, exist_ok=True)
    tmp = library.with_name(f".{library.name}.{os.getpid()}")
    shutil.copy(built, tmp)
    os.replace(tmp, library)
    _open_up(library.parent)


def summarize_errors(log, limit=40):
    """The compiler lines that say what is wrong, for an agent or a person to act on first."""
    keep = [line for line in log.splitlines() if "error" in line.lower() or line.startswith("FAILED")]
    return "\n".join(keep[:limit])


def build_workspace(workspace, device=None, jail=None, timeout=None):
    """Build WORKSPACE unless cached. With JAIL, the compilers run jailed (as they do in evaluations)."""
    t0 = time.perf_counter()
    device = device or workspace_device(workspace)
    key = workspace_key(workspace, device)
    module_name = f"ks_{key[:16]}"
    library = _library_path(key, module_name)
    if library.exists():
        return BuildResult(str(library), module_name, key, True, time.perf_counter() - t0)
    argv = ["ninja", "-j", str(settings.MAX_JOBS)]
    if jail is not None:
        build_dir = jail.path("build")
        build_dir.mkdir()
        pch = prepare(workspace, build_dir, device)[3]
        if pch is not None:
            jail.expose(pch.parent)  # the precompiled header, and nothing else of the cache
        jail.own(build_dir)
        exit = jail.run(argv + ["-C", str(build_dir)], timeout or settings.TIMEOUT_S)
        code, output = (exit.returncode if not exit.timed_out else -1), exit.output
        if exit.timed_out:
            output = f"the build {exit.describe()}\n{output}"
        _finish(code, output, build_dir / f"{module_name}.so", library)
    else:
        with tempfile.TemporaryDirectory(prefix="ks-build-") as tmp:
            prepare(workspace, tmp, device)
            proc = subprocess.run(argv, cwd=tmp, capture_output=True, text=True)
            _finish(proc.returncode, proc.stdout + proc.stderr, Path(tmp) / f"{module_name}.so", library)
    return BuildResult(str(library), module_name, key, False, time.perf_counter() - t0)


def _finish(code, output, built, library):
    if code != 0:
        raise BuildError(summarize_errors(output) or "the build failed", output)
    store(built, library)


def import_library(library, module_name):
    """The module of a built library: torch.ops.<name> for a stable-ABI binding, else the Python module."""
    if module_name in _loaded:
        return _loaded[module_name]
    import torch

    if not _exports_python_module(library, module_name):
        torch.ops.load_library(str(library))
        _loaded[module_name] = getattr(torch.ops, module_name)
        return _loaded[module_name]
    loader = importlib.machinery.ExtensionFileLoader(module_name, str(library))
    spec = importlib.util.spec_from_file_location(module_name, str(library), loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    sys.modules[module_name] = _loaded[module_name] = module
    return module


def _exports_python_module(library, module_name):
    import ctypes

    # RTLD_LOCAL: an extension never enters the process's global symbol scope. There, its copies of C++ library
    # code would serve every library loaded after it (on the H100, cuDNN's engines called one extension's
    # std::ostream code and crashed once a second extension loaded cuDNN).
    try:
        ctypes.CDLL(str(library), mode=ctypes.RTLD_LOCAL)[f"PyInit_{module_name}"]
        return True
    except AttributeError:
        return False


def load_extension(path, device=None):
    """The compiled module of the workspace holding PATH (model_new.py or the folder); built if not cached.

    The device defaults to the evaluation's (KS_DEVICE, set by the harness), else what the sources imply.
    """
    import torch  # noqa: F401 -- libtorch must be loaded before the extension resolves its symbols

    workspace = Path(path).resolve()
    workspace = workspace if workspace.is_dir() else workspace.parent
    result = build_workspace(workspace, device or os.environ.get("KS_DEVICE") or None)
    return import_library(result.library, result.module_name)
