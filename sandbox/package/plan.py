"""What goes into a package: its names, compiled modules, operators and rewritten ModelNew, from a problem and a
solution (KernelBench-style load_inline file or native workspace)."""

import ast
import keyword
import platform
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from sandbox.errors import InvalidProblem, PackagingError
from sandbox.native.build import binding_style, workspace_device, workspace_files
from sandbox.package import cpp, templates
from sandbox.package.extract import inline_calls, rewrite_model
from sandbox.problem import Problem
from sandbox.solution import Solution

VERSION = "0.1.0"
_COMPILED = (".cu", ".cpp", ".cc", ".c")
_RESERVED = {"torch", "aten", "prim", "prims", "sandbox", "test", "tests"}


@dataclass
class ExtensionModule:
    """One compiled module of the package (`<package>.<module>`) and how setuptools builds it."""

    module: str
    files: dict  # path in the package tree -> bytes
    sources: list
    cuda: bool
    limited_api: bool
    cxx: list = field(default_factory=list)
    nvcc: list = field(default_factory=list)
    link: list = field(default_factory=list)
    include_dirs: list = field(default_factory=list)
    blas: bool = False  # its kernels call OpenBLAS from the scipy-openblas32 wheel, as the sandbox's CPU build links

    def setup_spec(self):
        return {
            "module": self.module,
            "sources": self.sources,
            "cuda": self.cuda,
            "limited_api": self.limited_api,
            "include_dirs": self.include_dirs,
            "cxx": self.cxx,
            "nvcc": self.nvcc,
            "link": self.link,
            "blas": self.blas,
        }


@dataclass
class Plan:
    dist: str  # the distribution name: ks-relu
    module: str  # the import name, which is also the operators' namespace: ks_relu
    version: str
    device: str
    kind: str  # "inline" or "workspace", as sandbox.solution.Solution
    problem_name: str
    problem_source: str
    model_source: str
    extensions: list
    ops: list
    torch_version: str
    hardware: str
    verdict: object = None  # a sandbox.verdict.Verdict, or None
    fakes: dict = field(default_factory=dict)  # op.full_name -> sandbox.package.shapes.Fake
    variants: list = field(default_factory=list)  # the batch variants the probe ran ModelNew at, passed or not
    notes: list = field(default_factory=list)  # what the probe found that the user should know

    @property
    def no_variant(self):
        """Why the package's tests run at no other batch size ('' where they do)."""
        if any(v["ok"] for v in self.variants):
            return ""
        failed = [v for v in self.variants if not v["ok"]]
        if failed:
            return (
                f"ModelNew is specialized to the problem's batch size: at {failed[0]['label']} it gave "
                f"{failed[0]['why']}"
            )
        return "Model takes no other batch size of the problem's inputs (or they have no batch dimension)"

    @property
    def torch_requirement(self):
        minor = ".".join(self.torch_version.split("+")[0].split(".")[:2])
        # The stable ABI holds across later torch releases; a classic binding needs the torch it was built with.
        return f"torch>={minor}" if all(e.limited_api for e in self.extensions) else f"torch=={minor}.*"

    @property
    def blas_requirement(self):
        return ["scipy-openblas32"] if any(e.blas for e in self.extensions) else []


def names(name, problem_name):
    """(distribution name, import name) from --name, or from the problem's file name."""
    dist = re.sub(r"[-_.\s]+", "-", name or f"ks-{problem_name}").lower().strip("-")
    module = dist.replace("-", "_")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", module) or keyword.iskeyword(module) or module in _RESERVED:
        raise PackagingError(
            f"cannot name a package {name or dist!r}: use letters, digits and dashes, starting with "
            f"a letter (it becomes the import name {module!r} and the operator namespace), and "
            f"none of {', '.join(sorted(_RESERVED))}"
        )
    return dist, module


def make_plan(problem_path, solution_path, name=None, verdict=None):
    import torch

    problem = Problem.read(problem_path)
    _check_problem(problem)
    solution = Solution.read(solution_path)
    dist, module = names(name, problem.name)
    if solution.kind == "workspace":
        device, extensions, ops, model = _workspace(Path(solution.path), module)
    else:
        device, extensions, ops, model = _inline(solution, module)
    return Plan(
        dist=dist,
        module=module,
        version=f"{VERSION}+g{solution.sha256[:8]}",
        device=device,
        kind=solution.kind,
        problem_name=problem.name,
        problem_source=problem.source,
        model_source=model,
        extensions=extensions,
        ops=ops,
        torch_version=torch.__version__,
        hardware=_hardware(device),
        verdict=verdict,
    )


def _check_problem(problem):
    defined = {n.name for n in ast.parse(problem.source).body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if n not in defined]
    if missing:
        raise InvalidProblem(
            f"problem file {problem.path} does not define {', '.join(missing)}: the package's "
            f"tests compare ModelNew with Model on get_inputs()"
        )


def _workspace(folder, namespace):
    files = workspace_files(folder)
    binding = files["binding.cpp"]
    stable = binding_style(binding) == "stable"
    device = workspace_device(folder)
    tree = {f"csrc/{rel}": data for rel, data in files.items()}
    sources = [f"csrc/{rel}" for rel in files if Path(rel).suffix in _COMPILED]
    if b"PYBIND11_MODULE" not in binding:
        tree["csrc/_module.cpp"] = templates.MODULE_INIT.encode()
        sources.append("csrc/_module.cpp")
    cxx = ["-O3", f"-DKS_NAMESPACE={namespace}"]
    if device == "cuda":
        # USE_CUDA exposes the shim's CUDA entry points (aoti_torch_get_current_cuda_stream), as the sandbox does.
        cxx += ["-DKS_CUDA"] + (["-DUSE_CUDA"] if stable else [])
    else:
        cxx += ["-fopenmp"]
    extension = ExtensionModule(
        "_C",
        tree,
        sources,
        cuda=device == "cuda",
        limited_api=stable,
        cxx=cxx,
        nvcc=["-O3", "-lineinfo"],
        link=[] if device == "cuda" else ["-fopenmp"],
        include_dirs=["csrc"],
        blas=device == "cpu" and any(b"<cblas.h>" in data for data in files.values()),
    )
    ops = cpp.operators(binding.decode(), "_C", f"{folder / 'binding.cpp'}")
    model = rewrite_model((folder / "model_new.py").read_text(), folder / "model_new.py")
    return device, [extension], ops, model


def _inline(solution, namespace):
    text = solution.files["solution.py"].decode()
    calls = inline_calls(text, solution.path)
    extensions, ops, seen = [], [], {}
    for call in calls:
        if seen.setdefault(call.name, call) is not call:
            raise PackagingError(
                f"{solution.path}:{call.line}: two load_inline calls are named {call.name!r}; "
                f"give each extension its own name"
            )
        module = "_C" if len(calls) == 1 else f"_C_{call.name}"
        units = call.files()
        tree = {f"csrc/{call.name}/{unit}": body.encode() for unit, body in units.items()}
        extensions.append(
            ExtensionModule(
                module,
                tree,
                list(tree),
                cuda=bool(call.cuda_sources),
                limited_api=False,
                cxx=call.extra_cflags,
                nvcc=call.extra_cuda_cflags,
                link=call.extra_ldflags,
                include_dirs=call.extra_include_paths,
            )
        )
        ops += cpp.operators("\n".join(units.values()), module, f"{solution.path}:{call.line} load_inline({call.name})")
    clash = {op.name for op in ops if sum(o.name == op.name for o in ops) > 1}
    if clash:
        raise PackagingError(
            f"{solution.path}: {', '.join(sorted(clash))} defined by more than one load_inline "
            f"call; the package puts all operators in one namespace, so rename one"
        )
    device = "cuda" if any(e.cuda for e in extensions) else "cpu"
    return device, extensions, ops, rewrite_model(text, solution.path)


def _hardware(device):
    """What this machine is, for the README: the GPU's name, or the CPU's model."""
    if device == "cuda":
        try:
            names = subprocess.run(
                ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True, timeout=30
            ).stdout.split("\n")
            if names[0].strip():
                return names[0].strip()
        except (OSError, subprocess.TimeoutExpired):
            pass
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
