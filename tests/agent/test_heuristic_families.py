"""The chain planner's kernel families (agent/heuristic/families): their template files load, every blank of a section
is filled when a family writes its kernels, and a template and the code filling it cannot drift apart silently."""

import pytest

from agent.heuristic.analyze import analyze
from agent.heuristic.codegen import CUDA_PRELUDE, workspace_files
from agent.heuristic.families import FAMILIES, template
from agent.heuristic.families.common import cuda_prelude
from agent.heuristic.families.template import TemplateError, as_format, render, sections
from agent.heuristic.plan import make_plan

MODULE = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        {init}

    def forward(self, x):
        return {forward}

def get_inputs():
    return [torch.randn({shape})]

def get_init_inputs():
    return []
"""
# (module's __init__ line, forward's expression, input shape, the plan's kinds: the first stage's, then its tails')
PROBLEMS = {
    "elementwise": ("pass", "torch.sigmoid(x) * 2.0 + 1.0", "8, 64", ["elementwise"]),
    "softmax_over_channels": ("pass", "torch.softmax(x, dim=1)", "2, 8, 16", ["rowwise"]),
    "normalization": ("pass", "x / x.abs().sum(dim=-1, keepdim=True)", "8, 64", ["rowwise"]),
    "layer_norm": ("self.norm = nn.LayerNorm(32)", "torch.relu(self.norm(x))", "8, 32", ["rowwise"]),
    "batch_norm": ("self.bn = nn.BatchNorm2d(4)", "self.bn(x) * 2.0", "2, 4, 6, 6", ["rowwise"]),
    "linear_then_sum": (
        "self.fc = nn.Linear(32, 16)",
        "torch.relu(self.fc(x)).sum(dim=1)",
        "8, 32",
        ["gemm", "rowwise"],
    ),
    "conv_then_pool": (
        "self.conv = nn.ConvTranspose2d(3, 4, 3)",
        "nn.functional.max_pool2d(torch.relu(self.conv(x)), 2)",
        "2, 3, 8, 8",
        ["conv", "pool"],
    ),
}


def test_every_template_file_loads_into_sections_whose_blanks_are_fields():
    files = sorted(path.name for path in template.FOLDER.iterdir())
    assert {"common.cuh", "binding.cpp"} <= set(files)
    for name in files:
        parts = sections(name)
        assert parts, f"{name} has no section"
        for section, text in parts.items():
            assert text.strip(), f"{name}, section {section!r} is empty"
            assert "$" not in text.replace("${", ""), f"{name}, section {section!r}: a `$` outside a blank"


def test_every_family_writes_both_targets_from_its_templates():
    for kind, family in FAMILIES.items():
        assert callable(family.cuda) and callable(family.cpp), kind
        own = {f"{kind}.cu", f"{kind}.cpp"}
        assert own <= {path.name for path in template.FOLDER.iterdir()}, f"{kind}: its templates are {own}"


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_a_familys_kernels_leave_no_blank_unfilled_on_either_target(tmp_path, name):
    init, forward, shape, kinds = PROBLEMS[name]
    source = MODULE.format(init=init, forward=forward, shape=shape)
    problem = tmp_path / "problem.py"
    problem.write_text(source)
    plan = make_plan(analyze(str(problem)))
    assert [plan.kind] + [tail.kind for tail in plan.tails] == kinds
    for device in ("cuda", "cpu"):
        files = workspace_files(plan, device, source)
        kernel = files["kernels/fused.cu" if device == "cuda" else "kernels/fused.cpp"]
        assert "run_fused(" in kernel or "launch_fused(" in kernel
        for path, text in files.items():
            assert "${" not in text, f"{name}, {device}: a blank left in {path}"


def test_render_refuses_a_blank_without_a_value_and_a_value_without_a_blank(tmp_path, monkeypatch):
    (tmp_path / "toy.cu").write_text(
        "// A toy.\n//@ kernel\n__global__ void ${name}(float* out) { out[0] = ${value}; }\n"
    )
    monkeypatch.setattr(template, "FOLDER", tmp_path)
    template.sections.cache_clear()
    try:
        assert (
            render("toy.cu", "kernel", name="k", value="1.0f") == "__global__ void k(float* out) { out[0] = 1.0f; }\n"
        )
        with pytest.raises(TemplateError, match=r"no value for \['value'\]"):
            render("toy.cu", "kernel", name="k")
        with pytest.raises(TemplateError, match=r"no blank for \['extra'\]"):
            render("toy.cu", "kernel", name="k", value="1.0f", extra=2)
        with pytest.raises(TemplateError, match="no section 'launch'"):
            render("toy.cu", "launch")
    finally:
        template.sections.cache_clear()


def test_a_dollar_that_is_not_a_blank_is_refused_when_the_file_loads(tmp_path, monkeypatch):
    (tmp_path / "bad.cpp").write_text("//@ run\nint x = $ 1;\n")
    monkeypatch.setattr(template, "FOLDER", tmp_path)
    template.sections.cache_clear()
    try:
        with pytest.raises(TemplateError, match="not a"):
            sections("bad.cpp")
    finally:
        template.sections.cache_clear()


def test_the_prelude_as_a_format_string_keeps_the_c_braces_for_the_dag_planner():
    assert CUDA_PRELUDE.format(block=128) == cuda_prelude(128)
    assert as_format("common.cuh", "prelude").count("{block}") == 1
    assert "cudaDevAttrMultiProcessorCount" in cuda_prelude(256)  # the SM count is asked of the device
