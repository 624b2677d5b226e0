"""The pool family: a max or average pool over the spatial dims of [N, C, *spatial], the elementwise operators before
it fused as it reads and those after it as it writes (templates/pool.cu, .cpp)."""

import math

from agent.heuristic.emit import CPP_PRELUDE, PARALLEL_ELEMENTS, offset, op_function
from agent.heuristic.families.common import cuda_prelude, pointers
from agent.heuristic.families.template import render, snippet

HEADERS = ()  # the C++ kernel is self-contained


def _geometry(plan):
    """The pool's shapes and window padded to three spatial dims (missing ones of size 1)."""
    p = plan.pool
    pad = 3 - p["dims"]
    ins = p["in_shape"][2:]
    outs = p["pool_shape"][2:]
    return (
        [1] * pad + ins,
        [1] * pad + outs,
        [1] * pad + p["kernel"],
        [1] * pad + p["stride"],
        [0] * pad + p["padding"],
        [1] * pad + p["dilation"],
    )


def _window(plan):
    """The loop over one output's window (C, shared by the CUDA and C++ kernels): reads xc, leaves `pooled`."""
    ins, outs, kernel, stride, padding, dilation = _geometry(plan)
    # The template's names: d_in, h_in, w_in and d_out, h_out, w_out; kd, kh, kw (kernel), sd.. (stride), pd..
    # (padding), dd.. (dilation).
    fields = {f"{dim}_{of}": size for of, sizes in (("in", ins), ("out", outs)) for dim, size in zip("dhw", sizes)}
    for letter, sizes in zip("kspd", (kernel, stride, padding, dilation)):
        fields.update({letter + dim: size for dim, size in zip("dhw", sizes)})
    (d_in, h_in, w_in), (d_out, h_out, w_out) = ins, outs
    is_max = plan.row_op == "max_pool"
    counted = not is_max and not plan.pool["count_include_pad"]  # the divisor is the window's elements inside
    return snippet(
        "pool.cpp",
        "window",
        **fields,
        hw_out=w_out * h_out,
        dhw_out=w_out * h_out * d_out,
        dhw_in=d_in * h_in * w_in,
        init="-INFINITY" if is_max else "0.f",
        count=" int count = 0;" if counted else "",
        step="acc = fmaxf(acc, v);" if is_max else "acc += v;" + (" ++count;" if counted else ""),
        final="acc" if is_max else ("acc / (float)count" if counted else f"acc / {math.prod(kernel)}.0f"),
    )


def _functions(plan, qualifier):
    """pre_op (of the pooled input, as read) and epi_op (of the pooled value and the epilogue's operands)."""
    names = [o.name for o in plan.operands]
    src = op_function("pre_op", ["LOAD_" + plan.main.name], plan.prologue, "pre", qualifier)
    return src + op_function("epi_op", ["POOL"] + [f"LOAD_{n}" for n in names], plan.body, qualifier=qualifier)


def _fields(plan):
    return {
        "pointers": pointers([o.name for o in plan.operands]),
        "total": math.prod(plan.out_shape),
        "window": _window(plan),
        "loads": "".join(f", {o.name}[{offset(o.shape, plan.out_shape, 'i')}]" for o in plan.operands),
    }


def cpp(plan):
    fields = _fields(plan)
    return (
        CPP_PRELUDE
        + _functions(plan, "static inline ")
        + render("pool.cpp", "run", **fields, parallel=PARALLEL_ELEMENTS)
    )


def cuda(plan, block):
    args = "".join(o.name + ", " for o in plan.operands)
    return (
        cuda_prelude(block)
        + _functions(plan, "__device__ __forceinline__ ")
        + render("pool.cu", "kernel", **_fields(plan), args=args)
    )
