"""Writing a package tree from a Plan: pyproject.toml, setup.py, csrc/, src/<module>/, tests/ and the README."""

import json
import pprint
from pathlib import Path

from sandbox.package import templates
from sandbox.package.shapes import signature
from sandbox.reward import meaning


def _return_annotation(returns):
    if not returns:
        return "None"
    return returns[0] if len(returns) == 1 else f"tuple[{', '.join(returns)}]"


def op_source(op, namespace, fake):
    """OP's code in ops.py: its custom operator (a pybind11 function) or name (a library schema), and its fake."""
    qualname = f"{namespace}::{op.full_name}"
    if op.function:
        head = templates.CUSTOM_OP.substitute(
            qualname=qualname,
            mutates=repr(tuple(op.mutates)),
            name=op.name,
            module=op.module,
            function=op.function,
            returns=_return_annotation(op.returns),
            params=signature(op.params, annotated=True),
            args=", ".join(p.name for p in op.params),
        )
    else:
        head = templates.SCHEMA_OP.substitute(name=op.name, namespace=namespace)
    return (
        head
        + "\n\n\n"
        + templates.FAKE.substitute(
            qualname=qualname, fake_name=op.full_name.replace(".", "_"), params=fake.params, body=fake.body
        )
    )


def ops_module(plan):
    modules = sorted({e.module for e in plan.extensions})
    optional = any("Optional[" in t for op in plan.ops if op.function for t in [p.type for p in op.params] + op.returns)
    imports = ["from typing import Optional\n"] if optional else []
    imports += ["import torch\n\n", f"from . import {', '.join(modules)}  # noqa: F401 -- loading registers the ops"]
    body = [op_source(op, plan.module, plan.fakes[op.full_name]) for op in plan.ops]
    return templates.OPS.substitute(module=plan.module, imports="".join(imports), body="\n\n\n".join(body))


def _measured(plan):
    v = plan.verdict
    built = f"Packaged with torch {plan.torch_version} on {plan.hardware}."
    if v is None:
        return (
            f"No measurement was attached when this package was made. {built} Measure it with "
            f"`python -m sandbox evaluate PROBLEM.py SOLUTION --device {plan.device}` in Kernel Studio."
        )
    trials = f", {len(v.trials)} correctness trials" if v.trials else ""
    rows = [
        (
            "status",
            f"{v.status}, reward {v.reward} ({meaning(v.reward_schedule, v.reward)}, "
            f"{v.reward_schedule} schedule){trials}",
        ),
        ("device", v.device or plan.device),
        ("this package's kernels", _ms(v.runtime_ms)),
    ]
    rows.append(("PyTorch eager", _ms(v.eager_ms) + _speedup(v.speedup_vs_eager)))
    rows.append(("torch.compile", _ms(v.compiled_ms) + _speedup(v.speedup_vs_compiled)))
    if v.max_abs_error is not None:
        rows.append(("max abs error vs Model", f"{v.max_abs_error:.3g}"))
    table = "\n".join(["| | |", "| --- | --- |"] + [f"| {k} | {val} |" for k, val in rows])
    return (
        f"Measured by Kernel Studio's sandbox (median of many timed calls; speedups are the baseline's time "
        f"over this package's):\n\n{table}\n\n{built}"
    )


def _ms(value):
    return "not measured" if value is None else f"{value:.4f} ms"


def _speedup(value):
    return "" if value is None else f" (speedup {value:.2f}x)"


def readme(plan, sdist_name):
    rows, attention = [], []
    for op in plan.ops:
        f = plan.fakes[op.full_name]
        rows.append(
            f"| `torch.ops.{plan.module}.{op.full_name}` | `{op.schema}` | "
            f"{f.assumption or '**not inferred: write it**'} |"
        )
        if f.assumption is None:
            attention.append(f"`{op.full_name}` ({f.why})")
    notes = [
        (
            "Fake implementations were inferred by running the solution on the problem's inputs, at other batch "
            "sizes and with each size of every operator's arguments grown, and checked with "
            "`torch.library.opcheck`; each output's sizes are expressions of the arguments' sizes, so "
            "`torch.compile(dynamic=True)` traces them. `test_operators_pass_opcheck` checks them again."
        )
    ]
    notes += plan.notes
    if any(op.function for op in plan.ops):
        notes.append(
            "The solution's pybind11 functions are wrapped in `torch.library.custom_op`: each call goes "
            "through the PyTorch dispatcher, which costs a few microseconds that the sandbox's "
            "measurement, calling the binding directly, did not include. Autograd is not implemented."
        )
    if plan.device == "cpu":
        notes.append(
            "The package compiles with -O3 but without -march=native (the sandbox used it), so that a "
            "wheel runs on other CPUs of the same architecture."
        )
    notes.append("Wheels built here are tagged for this platform (linux_x86_64, not manylinux).")
    return templates.README.substitute(
        dist=plan.dist,
        device=plan.device,
        kind="CUDA" if plan.device == "cuda" else "CPU",
        problem=plan.problem_name,
        module=plan.module,
        sdist=sdist_name,
        cuda_needs=", and the CUDA toolkit matching your torch" if plan.device == "cuda" else "",
        cuda_arch=(
            " Set `TORCH_CUDA_ARCH_LIST` (for example `9.0`) to build for GPUs other than the ones present."
            if plan.device == "cuda"
            else ""
        ),
        op_rows="\n".join(rows),
        attention=(
            f"\n**Needs your attention:** no rule was found for the fake implementation of "
            f"{'; '.join(attention)}: it raises; write it in `src/{plan.module}/ops.py` before using "
            f"torch.compile.\n"
            if attention
            else ""
        ),
        measured=_measured(plan),
        notes="\n".join(f"- {n}" for n in notes),
    )


def _literal_list(items):
    return "[" + "".join(f"\n    {item!r}," for item in items) + ("\n]" if items else "]")


def render(plan, dest):
    """Write the package tree of PLAN into DEST (created); returns DEST."""
    dest = Path(dest)
    files = {
        "pyproject.toml": templates.PYPROJECT.substitute(
            dist=plan.dist,
            version=plan.version,
            module=plan.module,
            build_requires=json.dumps(["setuptools>=64", "torch", "ninja"] + plan.blas_requirement),
            dependencies=json.dumps([plan.torch_requirement] + plan.blas_requirement),
            description=json.dumps(f"Kernel Studio's kernels for {plan.problem_name}, as PyTorch operators"),
        ),
        "setup.py": templates.SETUP.substitute(
            module=plan.module,
            extensions=pprint.pformat([e.setup_spec() for e in plan.extensions], width=100, sort_dicts=False),
            options='{"bdist_wheel": {"py_limited_api": "cp39"}}'
            if all(e.limited_api for e in plan.extensions)
            else "{}",
        ),
        "MANIFEST.in": templates.MANIFEST,
        "README.md": readme(plan, f"{plan.module}-{plan.version}.tar.gz"),
        f"src/{plan.module}/__init__.py": templates.INIT.substitute(
            module=plan.module, problem=plan.problem_name, version=plan.version
        ),
        f"src/{plan.module}/ops.py": ops_module(plan),
        f"src/{plan.module}/model.py": plan.model_source,
        "tests/reference.py": plan.problem_source,
        f"tests/test_{plan.module}.py": templates.TESTS.substitute(
            module=plan.module,
            device=plan.device,
            no_variant=repr(plan.no_variant),
            variants=_literal_list([{k: v[k] for k in ("label", "scale", "inputs")} for v in plan.variants if v["ok"]]),
        ),
    }
    for extension in plan.extensions:
        files.update(extension.files)
    for rel, content in files.items():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content if isinstance(content, bytes) else content.encode())
    return dest
