"""Writing a package tree from a Plan: pyproject.toml, setup.py, csrc/, src/<module>/, tests/ and the README."""
import json
import pprint
from dataclasses import dataclass
from pathlib import Path

from sandbox.package import templates
from sandbox.reward import meaning


@dataclass
class Fake:
    """The fake implementation of one operator, and what it assumes (None: a placeholder to edit)."""
    params: str
    body: str
    assumption: str | None


def fake(op):
    """Outputs shaped like the first tensor argument: right for elementwise kernels and most others; every
    fake is checked against its kernel by the package's opcheck test, and the README lists the assumption."""
    params = _signature(op.params, annotated=False)
    tensors = [p.name for p in op.params if p.type == "torch.Tensor"]
    if not op.returns:
        written = ", ".join(f"`{n}`" for n in op.mutates) or "its arguments"
        return Fake(params, f"    # Writes into {written.replace('`', '')} and returns nothing.\n    return None",
                    f"returns nothing (writes into {written})")
    if tensors and all(r == "torch.Tensor" for r in op.returns):
        like = ", ".join(f"torch.empty_like({tensors[0]})" for _ in op.returns)
        shaped = "output is" if len(op.returns) == 1 else f"{len(op.returns)} outputs are"
        return Fake(params, f"    # Assumed: the {shaped} shaped like `{tensors[0]}` (the tests check it).\n"
                            f"    return {like}", f"like `{tensors[0]}`")
    return Fake(params, f"    # EDIT ME: return empty tensors of the shapes and dtypes this operator returns.\n"
                        f"    raise NotImplementedError(\"write the fake implementation of {op.full_name} "
                        f"in ops.py\")", None)


def _signature(params, annotated):
    parts, star = [], False
    for p in params:
        if p.kwarg_only and not star:
            parts.append("*")
            star = True
        text = f"{p.name}: {p.type}" if annotated else p.name
        parts.append(text + (f"={p.default}" if p.default is not None else ""))
    return ", ".join(parts)


def _return_annotation(returns):
    if not returns:
        return "None"
    return returns[0] if len(returns) == 1 else f"tuple[{', '.join(returns)}]"


def ops_module(plan):
    modules = sorted({e.module for e in plan.extensions})
    optional = any("Optional[" in t for op in plan.ops if op.function for t in [p.type for p in op.params] + op.returns)
    imports = ["from typing import Optional\n"] if optional else []
    imports += ["import torch\n\n", f"from . import {', '.join(modules)}  # noqa: F401 -- loading registers the ops"]
    body, exposed = [], set()
    for op in plan.ops:
        qualname = f"{plan.module}::{op.full_name}"
        if op.function:
            body.append(templates.CUSTOM_OP.substitute(
                qualname=qualname, mutates=repr(tuple(op.mutates)), name=op.name, module=op.module,
                function=op.function, returns=_return_annotation(op.returns),
                params=_signature(op.params, annotated=True), args=", ".join(p.name for p in op.params)))
        elif op.name not in exposed:
            body.append(templates.SCHEMA_OP.substitute(name=op.name, namespace=plan.module))
        exposed.add(op.name)
        f = fake(op)
        body.append(templates.FAKE.substitute(qualname=qualname, fake_name=op.full_name.replace(".", "_"),
                                              params=f.params, body=f.body))
    return templates.OPS.substitute(module=plan.module, imports="".join(imports), body="\n\n\n".join(body))


def _measured(plan):
    v = plan.verdict
    built = f"Packaged with torch {plan.torch_version} on {plan.hardware}."
    if v is None:
        return (f"No measurement was attached when this package was made. {built} Measure it with "
                f"`python -m sandbox evaluate PROBLEM.py SOLUTION --device {plan.device}` in Kernel Studio.")
    trials = f", {len(v.trials)} correctness trials" if v.trials else ""
    rows = [("status", f"{v.status}, reward {v.reward} ({meaning(v.reward_schedule, v.reward)}, "
                       f"{v.reward_schedule} schedule){trials}"), ("device", v.device or plan.device),
            ("this package's kernels", _ms(v.runtime_ms))]
    rows.append(("PyTorch eager", _ms(v.eager_ms) + _speedup(v.speedup_vs_eager)))
    rows.append(("torch.compile", _ms(v.compiled_ms) + _speedup(v.speedup_vs_compiled)))
    if v.max_abs_error is not None:
        rows.append(("max abs error vs Model", f"{v.max_abs_error:.3g}"))
    table = "\n".join(["| | |", "| --- | --- |"] + [f"| {k} | {val} |" for k, val in rows])
    return (f"Measured by Kernel Studio's sandbox (median of many timed calls; speedups are the baseline's time "
            f"over this package's):\n\n{table}\n\n{built}")


def _ms(value):
    return "not measured" if value is None else f"{value:.4f} ms"


def _speedup(value):
    return "" if value is None else f" (speedup {value:.2f}x)"


def readme(plan, sdist_name):
    rows, attention = [], []
    for op in plan.ops:
        f = fake(op)
        rows.append(f"| `torch.ops.{plan.module}.{op.full_name}` | `{op.schema}` | "
                    f"{f.assumption or '**placeholder: edit it**'} |")
        if f.assumption is None:
            attention.append(op.full_name)
    notes = [("Fake implementations are generated: unless marked otherwise they assume outputs shaped like the "
              "first tensor argument. If one is wrong, `test_operators_pass_opcheck` fails: edit it in "
              f"`src/{plan.module}/ops.py`.")]
    if any(op.function for op in plan.ops):
        notes.append("The solution's pybind11 functions are wrapped in `torch.library.custom_op`: each call goes "
                     "through the PyTorch dispatcher, which costs a few microseconds that the sandbox's "
                     "measurement, calling the binding directly, did not include. Autograd is not implemented.")
    if plan.device == "cpu":
        notes.append("The package compiles with -O3 but without -march=native (the sandbox used it), so that a "
                     "wheel runs on other CPUs of the same architecture.")
    notes.append("Wheels built here are tagged for this platform (linux_x86_64, not manylinux).")
    return templates.README.substitute(
        dist=plan.dist, device=plan.device, kind="CUDA" if plan.device == "cuda" else "CPU", problem=plan.problem_name,
        module=plan.module, sdist=sdist_name,
        cuda_needs=", and the CUDA toolkit matching your torch" if plan.device == "cuda" else "",
        cuda_arch=(" Set `TORCH_CUDA_ARCH_LIST` (for example `9.0`) to build for GPUs other than the ones present."
                   if plan.device == "cuda" else ""),
        op_rows="\n".join(rows),
        attention=(f"\n**Needs your attention:** the fake implementation of {', '.join(attention)} is a "
                   f"placeholder that raises; write it in `src/{plan.module}/ops.py` before using torch.compile.\n"
                   if attention else ""),
        measured=_measured(plan), notes="\n".join(f"- {n}" for n in notes))


def render(plan, dest):
    """Write the package tree of PLAN into DEST (created); returns DEST."""
    dest = Path(dest)
    files = {
        "pyproject.toml": templates.PYPROJECT.substitute(
            dist=plan.dist, version=plan.version, module=plan.module,
            build_requires=json.dumps(["setuptools>=64", "torch", "ninja"] + plan.blas_requirement),
            dependencies=json.dumps([plan.torch_requirement] + plan.blas_requirement),
            description=json.dumps(f"Kernel Studio's kernels for {plan.problem_name}, as PyTorch operators")),
        "setup.py": templates.SETUP.substitute(
            module=plan.module, extensions=pprint.pformat([e.setup_spec() for e in plan.extensions], width=100,
                                                          sort_dicts=False),
            options='{"bdist_wheel": {"py_limited_api": "cp39"}}' if all(e.limited_api for e in plan.extensions)
            else "{}"),
        "MANIFEST.in": templates.MANIFEST,
        "README.md": readme(plan, f"{plan.module}-{plan.version}.tar.gz"),
        f"src/{plan.module}/__init__.py": templates.INIT.substitute(module=plan.module, problem=plan.problem_name,
                                                                     version=plan.version),
        f"src/{plan.module}/ops.py": ops_module(plan),
        f"src/{plan.module}/model.py": plan.model_source,
        "tests/reference.py": plan.problem_source,
        f"tests/test_{plan.module}.py": templates.TESTS.substitute(module=plan.module, device=plan.device),
    }
    for extension in plan.extensions:
        files.update(extension.files)
    for rel, content in files.items():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content if isinstance(content, bytes) else content.encode())
    return dest
