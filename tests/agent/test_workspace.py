"""Workspaces: the starter layout, path confinement, and the exported solution.py."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agent.tools import Tools
from agent.trajectory import ToolCall
from agent.workspace import PathOutsideWorkspace, Workspace, workspace_solution_source


@pytest.fixture
def ws(tmp_path, relu_problem):
    return Workspace.create(tmp_path / "ws", relu_problem, "cpu")


def test_workspace_starts_with_the_problem_the_skill_and_a_native_starter(tmp_path, relu_problem):
    cpu = Workspace.create(tmp_path / "cpu", relu_problem, "cpu")
    cuda = Workspace.create(tmp_path / "cuda", relu_problem, "cuda")
    library = {
        "cpu": [
            "ks_attention.h",
            "ks_blas.h",
            "ks_checks.h",
            "ks_conv.h",
            "ks_erfinv.h",
            "ks_gemm.h",
            "ks_math.h",
            "ks_rnn.h",
            "ks_rnn_cell.h",
            "ks_scatter.h",
            "ks_sort.h",
        ]
    }
    library["cuda"] = [
        "ks_attention.cuh",
        "ks_checks.h",
        "ks_common.cuh",
        "ks_cublas.cuh",
        "ks_rnn.cuh",
        "ks_rnn_cell.h",
        "ks_scatter.cuh",
        "ks_sort.cuh",
        "ks_sort.h",
    ]
    assert sorted(cpu.solution_files()) == ["binding.cpp", "kernels/copy.cpp"] + [
        f"kernels/{name}" for name in library["cpu"]
    ] + ["model_new.py"]
    assert sorted(cuda.solution_files()) == ["binding.cpp", "kernels/copy.cu"] + [
        f"kernels/{name}" for name in library["cuda"]
    ] + ["model_new.py"]
    assert cpu.holds_the_starter() and cuda.holds_the_starter()
    assert (cpu.root / "problem.py").read_text() == relu_problem.read_text()
    assert "No PyTorch fallbacks" in (cpu.root / "SKILL.md").read_text()
    assert "STABLE_TORCH_LIBRARY(KS_NAMESPACE" in cuda.solution_files()["binding.cpp"]
    assert "aoti_torch_get_current_cuda_stream" in cuda.solution_files()["binding.cpp"]
    with pytest.raises(FileExistsError):
        Workspace.create(tmp_path / "cpu", relu_problem, "cpu")


def test_tools_refuse_paths_outside_the_workspace(ws, tmp_path, fast_eval):
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    os.symlink(outside, ws.root / "link.txt")
    os.symlink(tmp_path, ws.root / "kernels" / "up")
    tools = Tools(ws, ws.problem, fast_eval)
    calls = [
        ToolCall("read_file", {"path": "../secret.txt"}),
        ToolCall("read_file", {"path": str(outside)}),
        ToolCall("read_file", {"path": "kernels/../../secret.txt"}),
        ToolCall("read_file", {"path": "link.txt"}),
        ToolCall("read_file", {"path": "kernels/up/secret.txt"}),
        ToolCall("read_file", {"path": "~/x"}),
        ToolCall("write_file", {"path": "/tmp/evil.txt", "content": "x"}),
        ToolCall("write_file", {"path": "kernels/up/evil.txt", "content": "x"}),
        ToolCall("edit_file", {"path": "../secret.txt", "old_string": "secret", "new_string": "gone"}),
        ToolCall("search", {"pattern": "secret", "path": "kernels/up"}),
        ToolCall("write_file", {"path": "reference/examples/x.cu", "content": "x"}),
    ]
    for call in calls:
        tools.run(call)
        assert call.observation.startswith("error:"), (call.describe(), call.observation)
        assert "secret" not in call.observation.split("error:", 1)[1].replace("secret.txt", "")
    assert outside.read_text() == "secret" and not (tmp_path / "evil.txt").exists()
    assert not os.path.exists("/tmp/evil.txt")
    with pytest.raises(PathOutsideWorkspace):
        ws.resolve("kernels/up")
    assert ws.resolve(str(ws.root / "kernels" / "copy.cpp")) == ws.root / "kernels" / "copy.cpp"


def test_reference_folder_is_readable(ws, fast_eval):
    tools = Tools(ws, ws.problem, fast_eval)
    listing, example = (
        ToolCall("read_file", {"path": "reference"}),
        ToolCall("read_file", {"path": "reference/examples/cuda_rowsum/kernels/rowsum.cu"}),
    )
    tools.run(listing)
    tools.run(example)
    assert "examples/" in listing.observation and "torch_stable/" in listing.observation
    assert "__shfl_down_sync" in example.observation


TRICKY = {
    "model_new.py": "import torch.nn as nn\n\nclass ModelNew(nn.Module):\n    pass\nX = '''quoted'''\n",
    "binding.cpp": '#define A(x) \\\n  (x)\nconst char* s = "\\n\\t\'";\n',
    "kernels/k.cpp": "char c = '\\\\';\n// ends with a quote'",
    "kernels/raw.h": "no newline at the end \\",
}


def test_the_workspace_form_of_solution_py_holds_the_sources_exactly(tmp_path):
    # The form a workspace is exported in where it cannot be a plain KernelBench solution (agent.export).
    source = workspace_solution_source(TRICKY, "a test", "a reason")
    path = tmp_path / "solution.py"
    path.write_text(source)
    code = textwrap.dedent(f"""
        import ast, json, sys
        tree = ast.parse(open({str(path)!r}).read())
        sources = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                       and node.targets[0].id == "SOURCES")
        print(json.dumps(ast.literal_eval(sources)))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    import json

    assert json.loads(out) == TRICKY
    assert "'binding.cpp': r'''" in source  # readable where exact


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_the_kernel_library_holds_every_header_its_headers_include(device):
    import re

    from agent.library import library_files

    files = library_files(device)
    for path, text in files.items():
        for name in re.findall(r'#include "([^"]+)"', text):
            assert f"kernels/{name}" in files, f"{path} includes {name}, which the {device} library lacks"
    assert all(
        f"`{path.removeprefix('kernels/')}`" in (Path(__file__).parents[2] / "agent/SKILL.md").read_text()
        for path in files
    )  # SKILL.md names each header
