"""The pool family, planning rule and kernels: a max or average pool over the spatial dims of [N, C, *spatial], the
elementwise operators before it fused as it reads and those after it as it writes (templates/pool.cu, .cpp)."""

import math

from agent.heuristic.emit import CPP_PRELUDE, PARALLEL_ELEMENTS, offset, op_function
from agent.heuristic.errors import Unsupported
from agent.heuristic.families.common import cuda_prelude, pointers
from agent.heuristic.families.fuse import Builder, Plan, fuse_after, per_dim, result_node
from agent.heuristic.families.ops import canonical
from agent.heuristic.families.template import render, snippet

HEADERS = ()  # the C++ kernel is self-contained


def plan_stage(analysis, nodes, at, prefix="t"):
    """A max or average pool over the spatial dims of [N, C, *spatial], the elementwise operators before it fused
    as it reads (its input only) and those after it as it writes."""
    b = Builder(analysis, prefix)
    pool = nodes[at]
    for node in nodes[:at]:
        if not b.elementwise(node):
            raise Unsupported(f"operator {node.get('target')} before {pool['target']} is not elementwise")
    op = canonical(pool)
    src, args = pool["args"][0], pool["args"]
    kw, attrs = pool.get("kwargs") or {}, pool.get("attrs") or {}
    in_shape, pool_shape = b.nodes[src["node"]]["shape"], pool["shape"]
    dims = len(in_shape or []) - 2
    if dims not in (1, 2, 3) or pool_shape is None:
        raise Unsupported(f"{pool['target']} of a tensor that is not [N, C, *spatial] with 1-3 spatial dims")

    def arg(name, position, default):  # the module's attribute, or F.*_pool's keyword or positional argument
        return attrs[name] if name in attrs else kw.get(name, args[position] if len(args) > position else default)

    kernel = per_dim(arg("kernel_size", 1, 1), dims)
    stride = arg("stride", 2, None)
    stride = kernel if stride in (None, [], ()) else per_dim(stride, dims)
    padding = per_dim(arg("padding", 3, 0), dims)
    if op == "max_pool":
        dilation, count_include_pad = per_dim(arg("dilation", 4, 1), dims), True
        if arg("return_indices", 6, False):
            raise Unsupported(f"{pool['target']} with return_indices=True (int64 indices)")
    else:
        dilation, count_include_pad = [1] * dims, bool(arg("count_include_pad", 5, True))
        if arg("ceil_mode", 4, False):
            raise Unsupported(f"{pool['target']} with ceil_mode=True")
        if arg("divisor_override", 6, None) is not None:
            raise Unsupported(f"{pool['target']} with divisor_override")
    main_expr = b.value(src)
    prologue, b.body = b.body, []
    b.values[pool["name"]] = "POOL"
    stop = fuse_after(b, nodes, at + 1, pool["target"])
    out = result_node(analysis, nodes, stop)
    window = "x".join(map(str, kernel))
    plan = Plan(
        "pool",
        b.nodes[out]["shape"],
        row_op=op,
        scalars=dict(b.scalars),
        describe=f"one {op.replace('_', ' ')} kernel ({window} windows)"
        + (f" with {at} fused operator(s) before it" if at else ""),
    )
    plan.pool = {
        "dims": dims,
        "in_shape": list(in_shape),
        "pool_shape": list(pool_shape),
        "kernel": kernel,
        "stride": stride,
        "padding": padding,
        "dilation": dilation,
        "count_include_pad": count_include_pad,
    }
    plan.prologue = prologue + [f"const float pre = {main_expr};"]
    operands = list(b.operands.values())
    read_first = [o for o in operands if "LOAD_" + o.name in " ".join(plan.prologue)]
    if len(read_first) != 1 or read_first[0].source != "input":
        raise Unsupported(f"{pool['target']} must read one input tensor")
    plan.main = read_first[0]
    plan.body = b.body + [f"const float result = {b.values[out]};"]
    if "LOAD_" + plan.main.name in " ".join(plan.body):
        raise Unsupported(f"the input of {pool['target']} read again after it")
    plan.operands = [o for o in operands if o is not plan.main]  # the epilogue's, broadcast to the pool's output
    if list(plan.out_shape) != list(pool_shape):
        raise Unsupported(f"an epilogue that changes the shape {pool_shape} of {pool['target']}'s output")
    return plan, stop


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
