"""The episode's workspace: a folder with the problem, SKILL.md and a native kernel layout, and path confinement."""

import logging
import os
import shutil
from pathlib import Path

from agent.export import ExportError, kernelbench_solution, literal
from agent.library import library_files

log = logging.getLogger(__name__)

SKILL = Path(__file__).with_name("SKILL.md")
EXAMPLES = Path(__file__).with_name("reference")
# What the sandbox builds and evaluates; everything else in the workspace is the agent's scratch.
SOLUTION_FILES = ("model_new.py", "binding.cpp")
SOLUTION_FOLDER = "kernels"
SOURCE_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".c", ".h", ".hpp")
MAX_FILE_BYTES = 1 << 20


class PathOutsideWorkspace(ValueError):
    """A tool was given a path that leaves the workspace (absolute, `..`, or a symlink pointing out)."""


def reference_roots():
    """Read-only folders the agent may read and search, by the name they have under `reference/`."""
    import torch

    roots = {"examples": EXAMPLES}
    stable = Path(torch.__file__).parent / "include" / "torch" / "csrc" / "stable"
    if stable.is_dir():
        roots["torch_stable"] = stable
    return roots


MODEL_NEW = """import torch
import torch.nn as nn

from sandbox.native import load_extension

# Builds binding.cpp and kernels/ (cached by content) and returns the ops registered in binding.cpp.
ext = load_extension(__file__)


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        # Take Model's constructor arguments and create the same parameters, with the same names and in the
        # same order: the sandbox seeds both constructors alike, so equal parameters come out equal.
        super().__init__()

    def forward(self, *inputs):
        raise NotImplementedError(
            "ModelNew.forward is not written yet: compute Model's output with your kernels, through ext "
            "(see SKILL.md; ext.copy is the starter's example op)")
"""

BINDING_CPU = """#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>

using torch::stable::Tensor;

// Implemented in kernels/copy.cpp (plain C++, no torch headers).
void copy_forward(const float* x, float* y, int64_t n);

// The starter's example op: a float32 copy. Replace it with the ops your ModelNew needs.
Tensor copy(Tensor x) {
    Tensor y = torch::stable::empty_like(x);
    copy_forward(reinterpret_cast<const float*>(x.data_ptr()), reinterpret_cast<float*>(y.data_ptr()), x.numel());
    return y;
}

STABLE_TORCH_LIBRARY(KS_NAMESPACE, m) { m.def("copy(Tensor x) -> Tensor"); }
STABLE_TORCH_LIBRARY_IMPL(KS_NAMESPACE, CPU, m) { m.impl("copy", TORCH_BOX(&copy)); }
"""

KERNEL_CPU = """#include <cstdint>

void copy_forward(const float* x, float* y, int64_t n) {
    #pragma omp parallel for
    for (int64_t i = 0; i < n; ++i) y[i] = x[i];
}
"""

BINDING_CUDA = """#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>

#include <cuda_runtime.h>

using torch::stable::Tensor;

// Implemented in kernels/copy.cu (CUDA headers only, compiled by nvcc).
void copy_launch(const float* x, float* y, int64_t n, cudaStream_t stream);

// The starter's example op: a float32 copy on the current stream. Replace it with the ops your ModelNew needs.
Tensor copy(Tensor x) {
    Tensor y = torch::stable::empty_like(x);
    void* stream = nullptr;
    aoti_torch_get_current_cuda_stream(x.get_device(), &stream);
    copy_launch(reinterpret_cast<const float*>(x.data_ptr()), reinterpret_cast<float*>(y.data_ptr()), x.numel(),
                static_cast<cudaStream_t>(stream));
    return y;
}

STABLE_TORCH_LIBRARY(KS_NAMESPACE, m) { m.def("copy(Tensor x) -> Tensor"); }
STABLE_TORCH_LIBRARY_IMPL(KS_NAMESPACE, CUDA, m) { m.impl("copy", TORCH_BOX(&copy)); }
"""

KERNEL_CUDA = """#include <cstdint>
#include <cuda_runtime.h>

__global__ void copy_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = x[i];
}

void copy_launch(const float* x, float* y, int64_t n, cudaStream_t stream) {
    if (n == 0) return;
    int threads = 256;
    int blocks = (int)((n + threads - 1) / threads);
    if (blocks > 65535) blocks = 65535;
    copy_kernel<<<blocks, threads, 0, stream>>>(x, y, n);
}
"""


def starter_files(device):
    """{relative path: text} of the solution files a fresh workspace starts with: the example op and the kernel
    library's headers (agent/library.py)."""
    cuda = device == "cuda"
    return {
        "model_new.py": MODEL_NEW,
        "binding.cpp": BINDING_CUDA if cuda else BINDING_CPU,
        f"{SOLUTION_FOLDER}/{'copy.cu' if cuda else 'copy.cpp'}": KERNEL_CUDA if cuda else KERNEL_CPU,
        **library_files("cuda" if cuda else "cpu"),
    }


class Workspace:
    """A folder the agent works in: problem.py and SKILL.md (read-only by convention) and the solution files."""

    def __init__(self, root, device, references=None):
        self.root = Path(root).resolve()
        self.device = device
        self.references = {
            name: Path(p).resolve() for name, p in (reference_roots() if references is None else references).items()
        }

    @property
    def problem(self):
        return self.root / "problem.py"

    @classmethod
    def create(cls, root, problem, device, references=None):
        """Lay out a fresh workspace for PROBLEM (a KernelBench file) and DEVICE ('cuda' or 'cpu')."""
        root = Path(root)
        if root.exists() and any(root.iterdir()):
            raise FileExistsError(f"{root} is not empty: give the episode a fresh folder")
        (root / SOLUTION_FOLDER).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(problem, root / "problem.py")
        shutil.copyfile(SKILL, root / "SKILL.md")
        for name, text in starter_files(device).items():
            (root / name).write_text(text)
        return cls(root, device, references)

    def holds_the_starter(self):
        """Whether the solution files are still exactly the starter's: nothing to evaluate was written."""
        return self.solution_files() == starter_files(self.device)

    def resolve(self, path, write=False):
        """The real path of PATH (relative to the workspace, or `reference/NAME/...`), or PathOutsideWorkspace."""
        text = str(path).strip()
        if not text:
            raise PathOutsideWorkspace("the path is empty: give a path relative to the workspace, e.g. kernels/k.cu")
        parts = Path(text).parts
        if ".." in parts:
            raise PathOutsideWorkspace(f"{text!r} contains '..': paths must stay inside the workspace")
        if os.path.isabs(text) or text.startswith("~"):
            inside = Path(text).resolve()
            if os.path.isabs(text) and (inside == self.root or self.root in inside.parents):
                return inside
            raise PathOutsideWorkspace(
                f"{text!r} is outside the workspace: give a path relative to it, e.g. kernels/k.cu"
            )
        base = self.root
        if parts and parts[0] == "reference":
            if write:
                raise PathOutsideWorkspace(f"{text!r} is in the read-only reference folder: write in the workspace")
            if len(parts) == 1:
                return self.root / "reference"
            if parts[1] not in self.references:
                raise PathOutsideWorkspace(f"{text!r}: reference/ holds {', '.join(sorted(self.references))}")
            base, parts = self.references[parts[1]], parts[2:]
        real = base.joinpath(*parts).resolve()
        if real != base and base not in real.parents:
            raise PathOutsideWorkspace(f"{text!r} leads outside the workspace (through a symlink)")
        return real

    def relative(self, real):
        """How the agent names REAL: relative to the workspace, or under reference/."""
        real = Path(real)
        for name, base in self.references.items():
            if real == base or base in real.parents:
                return str(Path("reference", name, real.relative_to(base)))
        return str(real.relative_to(self.root))

    def solution_files(self):
        """{relative path: text} of what the sandbox evaluates: model_new.py, binding.cpp and kernels/ sources."""
        files = {}
        for name in SOLUTION_FILES:
            path = self.root / name
            if path.is_file() and not path.is_symlink():
                files[name] = path.read_text(errors="replace")
        kernels = self.root / SOLUTION_FOLDER
        if kernels.is_dir():
            for path in sorted(kernels.rglob("*")):
                if (
                    path.suffix in SOURCE_SUFFIXES
                    and path.is_file()
                    and not path.is_symlink()
                    and path.stat().st_size <= MAX_FILE_BYTES
                ):
                    files[str(path.relative_to(self.root))] = path.read_text(errors="replace")
        return files

    def listing(self):
        """The workspace's files with their sizes, for the task message."""
        lines = []
        for path in sorted(self.root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                lines.append(f"{path.relative_to(self.root)}  ({path.stat().st_size} bytes)")
        return "\n".join(lines)


def write_files(folder, files):
    """Write {relative path: text} into FOLDER (a snapshot to evaluate, or the best solution kept)."""
    folder = Path(folder)
    for rel, text in files.items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return folder


WORKSPACE_SOLUTION_PY = '''"""{title}

Exported by Kernel Studio from a native workspace in the project's own form, since it cannot be a plain KernelBench
solution: {why}. The workspace's sources below are written to a folder named by their hash and built by sandbox.native
(kernel-studio must be installed); ModelNew is the class of the workspace's model_new.py, loaded from that folder.
"""
import hashlib
import importlib.util
import json
import tempfile
from pathlib import Path

SOURCES = {{
{sources}
}}


def _workspace():
    digest = hashlib.sha256(json.dumps(SOURCES, sort_keys=True).encode()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / f"ks-solution-{{digest}}"
    for rel, text in SOURCES.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
    return folder, digest


_folder, _digest = _workspace()
_spec = importlib.util.spec_from_file_location(f"ks_model_new_{{_digest}}", _folder / "model_new.py")
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
ModelNew = _module.ModelNew
'''


def solution_source(files, title="A Kernel Studio solution"):
    """A self-contained solution.py of the workspace FILES (model_new.py, binding.cpp, kernels/): a plain KernelBench
    solution built by load_inline, importing nothing but torch (agent.export); where the workspace cannot take that
    form, the project's own (workspace_solution_source), whose docstring says why."""
    try:
        return kernelbench_solution(files, title)
    except ExportError as why:
        if "model_new.py" not in files:
            raise
        log.warning("%s is exported in the workspace form: %s", title, why)
        return workspace_solution_source(files, title, str(why))


def workspace_solution_source(files, title, why):
    """solution.py holding the workspace FILES verbatim, built by sandbox.native at import (needs kernel-studio)."""
    sources = "\n".join(f"    {rel!r}: {literal(text)}," for rel, text in sorted(files.items()))
    return WORKSPACE_SOLUTION_PY.format(title=title, why=why.rstrip("."), sources=sources)
