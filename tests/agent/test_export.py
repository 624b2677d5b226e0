"""The exported solution.py (issue 22): a plain KernelBench solution, its sources inline and built by load_inline,
importing nothing but torch: it runs in a fresh virtual environment that holds only torch, and the sandbox evaluates
it through its fast load_inline inside the jail."""

import ast
import importlib.metadata
import json
import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from agent.export import ExportError, kernelbench_solution, literal
from agent.workspace import solution_source

ROOT = Path(__file__).resolve().parents[2]
CPU_ADD_RELU = ROOT / "agent" / "reference" / "cpu_add_relu"


def workspace_files(folder):
    return {
        str(p.relative_to(folder)): p.read_text()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != "problem.py" and "__pycache__" not in p.parts
    }


def _requirements(name):
    """NAME and every distribution it requires (markers evaluated for this interpreter, no extras)."""
    seen, todo = set(), [name]
    while todo:
        dist = importlib.metadata.distribution(todo.pop())
        key = dist.metadata["Name"].lower().replace("_", "-")
        if key in seen:
            continue
        seen.add(key)
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return seen


def torch_only_python(root):
    """A fresh virtual environment whose only packages are torch and what it requires, linked from this one (no
    download): kernel-studio, numpy and everything else this environment holds are absent. Returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    purelib = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    here = Path(sysconfig.get_path("purelib"))
    for name in _requirements("torch"):
        dist = importlib.metadata.distribution(name)
        tops = {
            Path(str(f)).parts[0]
            for f in dist.files or []
            if not str(f).startswith("..") and Path(str(f)).parts[0] != "__pycache__"
        }
        for top in tops:
            if (here / top).exists() and not (purelib / top).exists():
                os.symlink(here / top, purelib / top)
    return python


RUN_EXPORTED = """
import importlib.util, json, sys
import torch

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

problem = load(sys.argv[1], "problem")
solution = load(sys.argv[2], "solution")
torch.manual_seed(0)
model = problem.Model(*problem.get_init_inputs())
torch.manual_seed(0)
model_new = solution.ModelNew(*problem.get_init_inputs())
errors = []
for batch in (128, 37):  # the problem's rows, and another count
    x, y = torch.randn(batch, 512), torch.randn(batch, 512)
    errors.append(float((model(x, y) - model_new(x, y)).abs().max()))
project = [m for m in sys.modules if m.split(".")[0] in ("sandbox", "agent", "training", "studio", "numpy")]
print(json.dumps({"errors": errors, "project_modules": project}))
"""


def test_an_exported_solution_runs_in_a_fresh_environment_with_only_torch(tmp_path):
    exported = tmp_path / "solution.py"
    exported.write_text(solution_source(workspace_files(CPU_ADD_RELU), "cpu add relu"))
    script = tmp_path / "run.py"
    script.write_text(RUN_EXPORTED)
    python = torch_only_python(tmp_path / "venv")
    # Nothing of this project or its other dependencies can be imported there.
    probe = subprocess.run(
        [str(python), "-c", "import sandbox"], check=False, capture_output=True, text=True, cwd=tmp_path
    )
    assert "No module named 'sandbox'" in probe.stderr
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KS_CACHE_DIR")}
    env["TORCH_EXTENSIONS_DIR"] = str(tmp_path / "torch_extensions")
    proc = subprocess.run(
        [str(python), str(script), str(CPU_ADD_RELU / "problem.py"), str(exported)],
        check=False,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["project_modules"] == []
    assert max(result["errors"]) < 1e-5, result


def test_the_sandbox_evaluates_an_exported_solution_through_its_fast_load_inline(tmp_path, fast_eval):
    from sandbox import evaluate

    exported = tmp_path / "solution.py"
    exported.write_text(solution_source(workspace_files(CPU_ADD_RELU)))
    v = evaluate(CPU_ADD_RELU / "problem.py", exported, fast_eval)
    assert v.status == "ok" and v.correct, (v.status, v.log[-3000:])
    builds = v.timing["extensions"]
    assert [b["via"] for b in builds] == ["native"], builds
    assert v.shape_general is True


def test_the_export_imports_nothing_but_torch(tmp_path):
    source = kernelbench_solution(workspace_files(CPU_ADD_RELU))
    tree = ast.parse(source)
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert {m.split(".")[0] for m in imported} == {"torch"}, imported
    assert "load_inline(" in source and "no_implicit_headers=True" in source and "load_extension" not in source


HEADERS = {
    "model_new.py": "from __future__ import annotations\nimport torch.nn as nn\nfrom sandbox.native import "
    "load_extension\n\nops = load_extension(__file__)\n\nclass ModelNew(nn.Module):\n    pass\n",
    "binding.cpp": "#include <torch/csrc/stable/library.h>\nSTABLE_TORCH_LIBRARY(KS_NAMESPACE, m) {}\n",
    "kernels/a.cu": '#include "common.cuh"\n#define BLOCK 256\n__global__ void a() {}\n',
    "kernels/b.cu": '#include "common.cuh"\n#ifndef BLOCK\n#define BLOCK 128\n#endif\n__global__ void b() {}\n',
    "kernels/common.cuh": '#pragma once\n#include "inner.cuh"\n#include <cstdint>\n',
    "kernels/inner.cuh": "#pragma once\nstruct Inner {};\n",
}


def _assigned(source, name):
    tree = ast.parse(source)
    return next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == name
    )


def test_local_headers_are_inlined_once_and_each_kernel_files_macros_stay_its_own():
    source = kernelbench_solution(HEADERS)
    cuda = _assigned(source, "CUDA_SOURCE")
    assert cuda.count("struct Inner {};") == 1 and cuda.count("#include <cstdint>") == 1
    assert "#pragma once" not in cuda and '#include "common.cuh"' not in cuda
    # a.cu's BLOCK is gone before b.cu, whose own default then holds.
    assert cuda.index("#undef BLOCK") < cuda.index('#line 1 "kernels/b.cu"')
    assert '#line 1 "kernels/a.cu"' in cuda and '#line 1 "kernels/inner.cuh"' in cuda
    cpp = _assigned(source, "CPP_SOURCE")
    name = _assigned(source, "NAME")
    assert cpp.startswith(f"#define KS_NAMESPACE {name}\n") and "STABLE_TORCH_LIBRARY(KS_NAMESPACE" in cpp
    # The future import still opens the module; the loader replaces load_extension.
    assert source.index("from __future__ import annotations") < source.index("import torch")
    assert "ops = getattr(torch.ops, NAME)" in source and "cuda_sources=[CUDA_SOURCE]" in source
    compile(source, "solution.py", "exec")


def test_a_model_that_uses_more_of_the_project_cannot_be_exported_plainly():
    files = dict(
        HEADERS,
        **{
            "model_new.py": "from sandbox.problem import make_inputs\nfrom sandbox.native import "
            "load_extension\nops = load_extension(__file__)\n"
        },
    )
    with pytest.raises(ExportError, match="line 1 imports sandbox.problem"):
        kernelbench_solution(files)
    # The episode's solution.py is still written, in the project's own form, saying why.
    fallback = solution_source(files, "a test")
    assert "cannot be a plain" in fallback and "solution: model_new.py line 1 imports sandbox.problem" in fallback
    assert "SOURCES = {" in fallback


@pytest.mark.parametrize(
    "text",
    [
        "plain",
        "ends with a quote'",
        "has ''' inside",
        "ends with \\",
        "cr\r\nlf",
        '#define A(x) \\\n  (x)\nconst char* s = "\\n\\t\'";\n',
    ],
)
def test_sources_are_written_as_exact_literals(text):
    assert ast.literal_eval(literal(text)) == text
    source = kernelbench_solution(dict(HEADERS, **{"kernels/a.cu": text}))
    assert text in _assigned(source, "CUDA_SOURCE")


def test_a_model_without_an_extension_is_exported_as_it_is():
    model = textwrap.dedent("""
        import torch.nn as nn


        class ModelNew(nn.Module):
            pass
        """)
    source = kernelbench_solution({"model_new.py": model})
    assert "load_inline" not in source and "class ModelNew(nn.Module)" in source
