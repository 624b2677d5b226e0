"""The chain's binding.cpp (templates/binding.cpp) and model_new.py: the op's tensors in order, their checks, the
stages' intermediates and calls, and the module that passes the model's inputs and parameters to the op."""

import math

from agent.heuristic.emit import (
    BATCH_DECLARATION,
    batch_prologue,
    binding_checks,
    model_new_source,
    scalar_checks,
)
from agent.heuristic.families import conv
from agent.heuristic.families.common import HEADER
from agent.heuristic.families.template import render


def _plan_args(plan):
    """The operands one plan's kernel function takes, in order (a tail's main input is its head's result)."""
    args = []
    if plan.kind in ("rowwise", "gemm", "conv", "pool"):
        args.append(plan.main)
    if plan.kind in ("gemm", "conv"):
        args.append(plan.weight)
    return args + (plan.affine + plan.running if plan.kind == "rowwise" else plan.operands)


def _takes_mode(plan):
    """Whether a stage's kernel is told the module's mode (batch norm: batch or running statistics)."""
    return plan.kind == "rowwise" and plan.row_op == "batch_norm"


def _all_args(plan):
    """The operands of a plan and of its tails (whose main inputs are intermediates, not arguments)."""
    return _plan_args(plan) + [o for tail in plan.tails for o in _plan_args(tail)[1:]]


def tensor_args(plan):
    """(C parameter name, Python expression, operand) of every tensor the op takes, in order."""
    params = _param_names(plan)

    def py(o):
        if o.source == "buffer":  # looked up each call: .to(device) replaces a buffer (a parameter stays)
            return f"self.get_buffer({o.ref!r})"
        return f"inputs[{o.ref}]" if o.source == "input" else f"self._ks_params[{params.index(o.ref)}]"

    return [(o.name, py(o), o) for o in _all_args(plan)]


def _checked(plan):
    """The binding's checks' arguments (batch.py): an input by its shape, a parameter or buffer by its element count
    (a bias is planned in the shape it broadcasts in, not its own)."""
    return [
        (name, f"input {o.ref}", list(o.shape), None)
        if o.source == "input"
        else (name, f"{o.source} {o.ref}", None, math.prod(o.shape))
        for name, _, o in tensor_args(plan)
    ]


def batch_argument(plan, inputs):
    """The C name of the op's first argument that is one of the model's INPUTS (those that scale with the batch)."""
    for name, _, o in tensor_args(plan):
        if o.source == "input" and o.ref in inputs:
            return name
    return None


def _launch(plan, device, space, ptrs, out):
    """(declaration, call) of PLAN's kernel function in namespace SPACE ('' for none), given its input pointers
    PTRS (C expressions) and OUT, the pointer it writes."""
    extent = {"elementwise": f", {math.prod(plan.out_shape)}LL", "rowwise": f", {plan.outer}LL"}.get(plan.kind, "")
    name = "launch_fused" if device == "cuda" else "run_fused"
    stream = ", cudaStream_t" if device == "cuda" else ""
    mode, mode_arg = (", bool", ", training") if _takes_mode(plan) else ("", "")
    decl = (
        f"void {name}({', '.join('const float*' for _ in ptrs)}, float*{', int64_t' if extent else ''}{mode}{stream});"
    )
    call = f"    {space + '::' if space else ''}{name}({', '.join(ptrs)}, {out}{extent}{mode_arg}" + (
        ", (cudaStream_t)stream);" if device == "cuda" else ");"
    )
    return (f"namespace {space} {{ {decl} }}" if space else decl), call


def binding(plan, device, batch=None, reason=None):
    """binding.cpp of PLAN: checks, intermediates, the stages' calls. BATCH: the C name of the input whose dim 0 the
    kernels read at run time (None: they keep the problem's shapes, for REASON)."""
    args = tensor_args(plan)
    params = ", ".join(f"Tensor {name}" for name, _, _ in args)
    definitions, checks = binding_checks(_checked(plan), reason)
    first = args[0][0]
    ptr = "(const float*){}.data_ptr()".format
    # Each stage writes an intermediate (mid0, mid1, ...) that the next one reads; the last writes `out`.
    stages = [plan] + plan.tails
    writes = [f"mid{i}" for i in range(len(plan.tails))] + ["out"]
    decls, calls, intermediates = [], [], ""
    for i, stage in enumerate(stages):
        space = "" if not plan.tails else "ks_head" if i == 0 else f"ks_tail{i - 1}"
        inputs = [ptr(o.name) for o in _plan_args(stage)]
        if i:
            inputs[0] = f"(const float*){writes[i - 1]}.data_ptr()"
        decl, call = _launch(stage, device, space, inputs, f"(float*){writes[i]}.data_ptr()")
        decls.append(decl)
        calls.append(call)
        if i < len(plan.tails):
            dims = ", ".join(str(d) for d in stage.out_shape)
            intermediates += render("binding.cpp", "intermediate", name=writes[i], first=first, dims=dims)
    call = "\n".join(calls)
    if device == "cuda":
        call = render("binding.cpp", "cuda_stream", first=first) + call
    schema = ", ".join(f"Tensor {name}" for name, _, _ in args)
    if any(_takes_mode(stage) for stage in stages):
        params, schema = params + ", bool training", schema + ", bool training"
    return HEADER.format(describe=plan.describe) + render(
        "binding.cpp",
        "binding",
        includes=render("binding.cpp", "cuda_includes") if device == "cuda" else "",
        batch_declaration=BATCH_DECLARATION if batch else "",
        declarations="\n".join(decls),
        definitions=definitions,
        params=params,
        prologue=batch_prologue(batch, f"input {batch_input(plan, batch)}") if batch else "",
        checks=checks,
        intermediates=intermediates,
        first=first,
        out_dims=", ".join(str(d) for d in plan.result_shape),
        calls=call,
        schema=schema,
        key="CUDA" if device == "cuda" else "CPU",
    )


def batch_input(plan, name):
    return next(o.ref for n, _, o in tensor_args(plan) if n == name)


def _param_names(plan):
    args = _all_args(plan)
    return list(dict.fromkeys(o.ref for o in args if o is not None and o.source == "param"))


def _mode_argument(plan):
    return ", self.training" if any(_takes_mode(stage) for stage in [plan] + plan.tails) else ""


def model_new(plan, problem_source, device="cpu"):
    # Parameters are contiguous by construction; only inputs need .contiguous() on every call.
    call = ", ".join(py if py.startswith("self.") else f"{py}.contiguous()" for _, py, _ in tensor_args(plan))
    names = _param_names(plan)
    checks = scalar_checks(plan.scalars)
    # Any convolution stage, the first or a later one (BatchNorm2d -> Conv2d died of SIGSEGV without the preload)
    convolves = any(stage.kind == "conv" for stage in [plan] + plan.tails)
    preload = conv.CUDNN_PRELOAD if convolves and device == "cuda" else ""
    mode = _mode_argument(plan)
    return model_new_source(plan.describe, preload, problem_source, names, checks, f"{call}{mode}")
