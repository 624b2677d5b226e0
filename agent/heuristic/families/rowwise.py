"""The row-wise family, planning rule and kernels: reductions, the softmax family and layer, group and instance norms
over rows of R elements, with the elementwise operators before it fused as it reads and those after it as it writes
(templates/rowwise.cu, .cpp); a batch norm's channels are rows too, with kernels of their own (batch_norm.py)."""

import math
import re

from agent.heuristic.emit import CPP_PRELUDE, PARALLEL_ELEMENTS, op_function
from agent.heuristic.errors import Unsupported
from agent.heuristic.families import batch_norm
from agent.heuristic.families.common import BLOCK_REDUCE, cuda_prelude
from agent.heuristic.families.fuse import Builder, Plan, fuse_after, output_node, result_node
from agent.heuristic.families.ops import NORMS, ROW_OPS, canonical
from agent.heuristic.families.template import render, snippet

HEADERS = ()  # the C++ kernel is self-contained
SOFTMAX_FAMILY = {"softmax", "log_softmax", "logsumexp"}
# (initial value, step over v, final value) of the reductions, CUDA's and C++'s.
CUDA_REDUCTIONS = {
    "sum": ("0.f", "acc += v;", "acc"),
    "mean": ("0.f", "acc += v;", "acc / {reduce}.f"),
    "max": ("-INFINITY", "acc = fmaxf(acc, v);", "acc"),
    "min": ("INFINITY", "acc = fminf(acc, v);", "acc"),
    "norm": ("0.f", "acc += v * v;", "sqrtf(acc)"),
}
CPP_REDUCTIONS = {
    "sum": ("0.f", "acc += v;", "acc"),
    "mean": ("0.f", "acc += v;", "acc / {reduce}.f"),
    "max": ("-INFINITY", "acc = std::max(acc, v);", "acc"),
    "min": ("INFINITY", "acc = std::min(acc, v);", "acc"),
    "norm": ("0.f", "acc += v * v;", "std::sqrt(acc)"),
}
SUM = "[](float a, float b) { return a + b; }"
# A block per row (CUDA): (declaration, step over v, the block's reduction, the write), with {reduce}, {eps} and {scale}
# (the norm's affine transform) filled in; a normalization writes epi_op(row value, x) instead, the value taken from
# the write's epi_op call.
BLOCK_ROWS = {
    "sum": (
        "float acc = 0.f;",
        "acc += v;",
        f"acc = block_reduce(acc, {SUM});",
        "if (threadIdx.x == 0) out[row] = epi_op(acc);",
    ),
    "mean": (
        "float acc = 0.f;",
        "acc += v;",
        f"acc = block_reduce(acc, {SUM});",
        "if (threadIdx.x == 0) out[row] = epi_op(acc / {reduce}.f);",
    ),
    "max": (
        "float acc = -INFINITY;",
        "acc = fmaxf(acc, v);",
        "acc = block_reduce(acc, [](float a, float b) { return fmaxf(a, b); });",
        "if (threadIdx.x == 0) out[row] = epi_op(acc);",
    ),
    "norm": (
        "float acc = 0.f;",
        "acc += v * v;",
        f"acc = block_reduce(acc, {SUM});",
        "if (threadIdx.x == 0) out[row] = epi_op(sqrtf(acc));",
    ),
    "min": (
        "float acc = INFINITY;",
        "acc = fminf(acc, v);",
        "acc = block_reduce(acc, [](float a, float b) { return fminf(a, b); });",
        "if (threadIdx.x == 0) out[row] = epi_op(acc);",
    ),
    "softmax": (
        "KsMaxSum<float> acc = {-INFINITY, 0.f};",
        "acc = ks_online(acc, v);",
        "acc = block_reduce(acc, ks_merge<float>); const float inv = 1.f / acc.s;",
        "for (int64_t r = threadIdx.x; r < R; r += BLOCK) y[r] = epi_op(__expf(pre_op(x[r]) - acc.m) * inv);",
    ),
    "log_softmax": (
        "KsMaxSum<float> acc = {-INFINITY, 0.f};",
        "acc = ks_online(acc, v);",
        "acc = block_reduce(acc, ks_merge<float>); const float lse = acc.m + logf(acc.s);",
        "for (int64_t r = threadIdx.x; r < R; r += BLOCK) y[r] = epi_op(pre_op(x[r]) - lse);",
    ),
    "logsumexp": (
        "KsMaxSum<float> acc = {-INFINITY, 0.f};",
        "acc = ks_online(acc, v);",
        "acc = block_reduce(acc, ks_merge<float>);",
        "if (threadIdx.x == 0) out[row] = epi_op(acc.m + logf(acc.s));",
    ),
    "layer_norm": (
        "float2 acc = {0.f, 0.f};",
        "acc.x += v; acc.y += v * v;",
        f"acc.x = block_reduce(acc.x, {SUM}); acc.y = block_reduce(acc.y, {SUM});"
        " const float mean = acc.x / {reduce}.f;"
        " const float rstd = rsqrtf(fmaxf(acc.y / {reduce}.f - mean * mean, 0.f) + {eps}f);",
        "for (int64_t r = threadIdx.x; r < R; r += BLOCK) { float t = (pre_op(x[r]) - mean) * rstd; {scale}"
        "y[r] = epi_op(t); }",
    ),
}


def plan_stage(analysis, nodes, at, prefix="t"):
    """(plan, index of the next stage's operator or None) of the row-wise operator NODES[AT], the elementwise
    operators before it fused as it reads (its input only) and those after it as it writes; PREFIX names the operands
    of a stage after the first."""
    b = Builder(analysis, prefix)
    for node in nodes[:at]:
        if not b.elementwise(node):
            raise Unsupported(f"operator {node.get('target')} before the row-wise operation is not elementwise")
    row = nodes[at]
    op = canonical(row)
    if op not in ROW_OPS:
        raise Unsupported(f"operator {row.get('target')} ({row['name']}) is not a row-wise operation")
    src = row["args"][0]
    in_shape = b.nodes[src["node"]]["shape"]
    kw, attrs = row.get("kwargs") or {}, row.get("attrs") or {}
    groups = 0
    if op == "batch_norm":
        if row["op"] != "call_module":
            raise Unsupported(f"{row['target']} as a function (the heuristic reads nn.BatchNorm modules)")
        if attrs.get("track_running_stats", True) and attrs.get("momentum") is None:
            raise Unsupported(f"{row['target']} with momentum=None (a cumulative average of the statistics)")
        if len(in_shape) < 2:
            raise Unsupported(f"{row['target']} of a tensor without a channel dim")
        dims = [1]  # one row per channel, read with a stride (see Plan.running)
    elif op in ("group_norm", "instance_norm"):
        if row["op"] != "call_module":
            raise Unsupported(f"{row['target']} as a function (the heuristic reads nn.GroupNorm / nn.InstanceNorm)")
        if op == "instance_norm" and attrs.get("track_running_stats"):
            raise Unsupported(f"{row['target']} with track_running_stats=True (running statistics in eval mode)")
        if len(in_shape) < 2:
            raise Unsupported(f"{row['target']} of a tensor without a channel dim")
        groups = int(attrs["num_groups"]) if op == "group_norm" else in_shape[1]
        dims = list(range(1, len(in_shape)))  # each sample's groups are contiguous runs of these dims
    elif op == "layer_norm":
        norm = attrs.get(
            "normalized_shape", kw.get("normalized_shape", row["args"][1] if len(row["args"]) > 1 else None)
        )
        norm = [norm] if isinstance(norm, int) else list(norm)
        dims = list(range(len(in_shape) - len(norm), len(in_shape)))
    else:
        # torch.norm(x, p, dim, keepdim): the dim comes third; only the 2-norm (Frobenius over all) is written.
        position = 2 if op == "norm" else 1
        if op == "norm" and kw.get("p", row["args"][1] if len(row["args"]) > 1 else "fro") not in ("fro", 2, 2.0):
            raise Unsupported("torch.norm with p other than 2")
        dim = attrs.get("dim", kw.get("dim", row["args"][position] if len(row["args"]) > position else None))
        if dim is None:
            dims = list(range(len(in_shape)))
        else:
            dims = [dim] if isinstance(dim, int) else list(dim)
        dims = sorted(d % len(in_shape) for d in dims)
    if dims != list(range(dims[0], dims[-1] + 1)):
        raise Unsupported(f"{row['target']} over non-adjacent dims {dims}")
    outer = math.prod(in_shape[: dims[0]])
    reduce = math.prod(in_shape[dims[0] : dims[-1] + 1])
    inner = math.prod(in_shape[dims[-1] + 1 :])
    if groups:
        if in_shape[1] % groups:
            raise Unsupported(f"{row['target']}: {in_shape[1]} channels in {groups} groups")
        outer, reduce = outer * groups, reduce // groups
    if op == "batch_norm":
        outer, reduce, inner = in_shape[1], math.prod(in_shape) // in_shape[1], 1
    if inner != 1 and op not in ("sum", "mean", "max", "min", "norm", "softmax", "log_softmax", "logsumexp"):
        raise Unsupported(f"{row['target']} over a dim that is not the last one")
    if op in ("max", "min") and row.get("target") in ("max", "min") and output_node(analysis) == row["name"]:
        raise Unsupported(
            f"torch.{row['target']}(x, dim) returns values and indices; the heuristic computes values only"
        )
    main_expr = b.value(src)
    prologue, b.body = b.body, []
    # torch.max(x, dim) is a (values, indices) pair: its shape is that of the values taken from it.
    shape = row["shape"]
    if shape is None:
        taken = [n for n in nodes[at + 1 :] if n.get("target") == "getitem" and n["args"][0] == {"node": row["name"]}]
        shape = taken[0]["shape"] if taken else b.nodes[output_node(analysis)]["shape"]
    plan = Plan(
        "rowwise",
        shape,
        row_op=op,
        outer=outer,
        reduce=reduce,
        inner=inner,
        eps=float(attrs.get("eps", kw.get("eps", 1e-5))) if op in NORMS else 1e-5,
        groups=groups,
        channels=in_shape[1] if groups or op == "batch_norm" else 0,
        spatial=math.prod(in_shape[2:]) if groups or op == "batch_norm" else 1,
        momentum=float(attrs.get("momentum") or 0.1),
        describe=f"one row-wise {op} kernel (rows of {reduce})"
        + (f" with {at} fused operator(s) before it" if at else ""),
    )
    plan.prologue = prologue + [f"const float pre = {main_expr};"]
    if op in NORMS and row["op"] == "call_module":
        for pname in ("weight", "bias"):
            if pname in (row.get("params") or {}):
                full = f"{row['module']}.{pname}"
                plan.affine.append(b.operand("param", full, analysis["params"][full]))
    if op == "batch_norm" and attrs.get("track_running_stats", True):
        for buffer in ("running_mean", "running_var"):
            full = f"{row['module']}.{buffer}"
            plan.running.append(b.operand("buffer", full, analysis["params"][full]))
    b.values[row["name"]] = "ROW"
    stop = fuse_after(b, nodes, at + 1, row["target"])
    out = result_node(analysis, nodes, stop)
    plan.operands = list(b.operands.values())
    main = [o for o in plan.operands if "LOAD_" + o.name in " ".join(plan.prologue)]
    if len(main) != 1 or main[0].source != "input":
        raise Unsupported("the row-wise operation must read one input tensor")
    plan.main = main[0]
    plan.body = b.body + [f"const float result = {b.values[out]};"]
    plan.scalars = dict(b.scalars)
    if any("LOAD_" in line for line in plan.body):
        _normalization(plan, row, b, out)
    if any(o is not plan.main and o not in plan.affine and o not in plan.running for o in plan.operands):
        raise Unsupported("tensors other than the input around a row-wise operation")
    return plan, stop


def _normalization(plan, row, builder, out):
    """Accept an epilogue that reads the row's input again (a normalization), or say why not."""
    what = f"the result of {row['target']} combined with a tensor again"
    body = " ".join(plan.body)
    loads = set(re.findall(r"LOAD_(\w+)", body))
    if loads != {plan.main.name}:
        raise Unsupported(f"{what}: only the row's own input can be read again")
    defined = set(re.findall(r"const float (v_\w+)", body))
    if set(re.findall(r"\bv_\w+", body)) - defined:
        raise Unsupported(f"{what}: the epilogue reads a value computed before the reduction")
    position = 3 if plan.row_op == "norm" else 2
    keepdim = (row.get("kwargs") or {}).get("keepdim", row["args"][position] if len(row["args"]) > position else False)
    out_shape = builder.nodes[out]["shape"]
    everything = plan.outer == 1 and plan.inner == 1  # one number: it broadcasts whatever keepdim says
    if (
        plan.row_op not in ("sum", "mean", "max", "min", "norm")
        or not (keepdim or everything)
        or out_shape != plan.main.shape
    ):
        raise Unsupported(f"{what}: only sum, mean, max, min or norm with keepdim=True, in the input's shape")
    plan.normalize = True
    plan.out_shape = list(out_shape)
    plan.describe = plan.describe.replace("one row-wise", "one row-wise normalization by")


def _affine_index(plan, row):
    """C expression of the affine parameters' index for element r of row ROW: r for a layer norm, the channel for
    group and instance norms."""
    if not plan.groups:
        return "r"
    per_group = plan.channels // plan.groups
    within = "r" if plan.spatial == 1 else f"r / {plan.spatial}LL"
    return f"(({row}) % {plan.groups}LL) * {per_group}LL + {within}"


def _scale(plan, row):
    """The statement that applies a norm's weight and bias to t, element r of row ROW ('' without them)."""
    affine, index = [o.name for o in plan.affine], _affine_index(plan, row)
    if not affine:
        return ""
    return f"t = t * {affine[0]}[{index}]" + (f" + {affine[1]}[{index}]" if len(affine) > 1 else "") + ";"


def _fill(text, values):
    """TEXT with each {name} of VALUES replaced (C's braces stay as they are)."""
    for blank, value in values.items():
        text = text.replace(blank, value)
    return text


def _norm_op(plan):
    """The row operation the kernels write: group and instance norms are layer norms of their rows."""
    return "layer_norm" if plan.row_op in ("group_norm", "instance_norm") else plan.row_op


def _functions(plan, qualifier):
    """pre_op (of the row's input, as read) and epi_op (of the row's value, and of the input for a normalization)."""
    x = plan.main.name
    src = op_function("pre_op", ["LOAD_" + x], plan.prologue, "pre", qualifier)
    return src + op_function(
        "epi_op", ["ROW"] + (["LOAD_" + x] if plan.normalize else []), plan.body, qualifier=qualifier
    )


def cuda(plan, block):
    if plan.row_op == "batch_norm":
        return batch_norm.cuda(plan, block)
    op, x = _norm_op(plan), plan.main.name
    affine = [o.name for o in plan.affine]
    src = cuda_prelude(block) + BLOCK_REDUCE + _functions(plan, "__device__ __forceinline__ ")
    if plan.inner > 1:
        if op in SOFTMAX_FAMILY:
            loop = snippet("rowwise.cu", "strided_online_max_sum")
            write = snippet("rowwise.cu", f"strided_write_{op}")
        else:
            init, step, final = (part.format(reduce=plan.reduce) for part in CUDA_REDUCTIONS[op])
            loop = snippet("rowwise.cu", "strided_reduce", init=init, step=step)
            write = snippet(
                "rowwise.cu", "strided_write_normalized" if plan.normalize else "strided_write", value=final
            )
        return src + render("rowwise.cu", "strided", x=x, reduce=plan.reduce, inner=plan.inner, loop=loop, write=write)
    scale = _scale(plan, "row")
    filled = {"{reduce}": str(plan.reduce), "{eps}": repr(plan.eps), "{scale}": scale + " " if scale else ""}
    init, step, combine, write = (_fill(part, filled) for part in BLOCK_ROWS[op])
    if plan.normalize:
        value = write.split("epi_op(", 1)[1].rsplit(");", 1)[0]
        write = snippet("rowwise.cu", "rows_write_normalized", value=value)
    affine_pointers = "".join(f", const float* __restrict__ {a}" for a in affine)
    return src + render(
        "rowwise.cu",
        "rows",
        x=x,
        affine_pointers=affine_pointers,
        affine_args="".join(", " + a for a in affine),
        reduce=plan.reduce,
        init=init,
        step=step,
        combine=combine,
        write=write,
    )


def cpp(plan):
    if plan.row_op == "batch_norm":
        return batch_norm.cpp(plan)
    op, x = _norm_op(plan), plan.main.name
    src = CPP_PRELUDE + _functions(plan, "static inline ")
    R, inner = plan.reduce, plan.inner
    shape = {"x": x, "reduce": R, "inner": inner}
    if op in SOFTMAX_FAMILY and inner > 1:
        rows = {} if op == "logsumexp" else {"reduce": R}  # logsumexp writes one value per inner position
        write = snippet("rowwise.cpp", f"strided_write_{op}", **rows, inner=inner)
        return src + render(
            "rowwise.cpp", "strided_softmax", **shape, row_elements=R * inner, parallel=PARALLEL_ELEMENTS, write=write
        )
    if op in CPP_REDUCTIONS:
        init, step, final = (part.format(reduce=R) for part in CPP_REDUCTIONS[op])
        if plan.normalize:
            write = snippet("rowwise.cpp", "reduce_write_normalized", **shape, value=final)
        else:
            write = snippet("rowwise.cpp", "reduce_write", inner=inner, value=final)
        return src + render(
            "rowwise.cpp",
            "reduce",
            **shape,
            row_elements=R * inner,
            parallel=PARALLEL_ELEMENTS,
            init=init,
            step=step,
            write=write,
        )
    if op in SOFTMAX_FAMILY:
        # softmax keeps each exponential in the output row, so that it is computed once, not twice.
        keep = "y[r] = e;" if op == "softmax" else ""
        rows = {} if op == "logsumexp" else {"reduce": R}  # logsumexp writes one value per row
        write = snippet("rowwise.cpp", f"rows_write_{op}", **rows)
        core = snippet("rowwise.cpp", "rows_softmax", reduce=R, keep=keep, write=write)
    else:  # layer_norm
        core = snippet("rowwise.cpp", "rows_layer_norm", reduce=R, eps=repr(plan.eps), scale=_scale(plan, "o"))
    affine_pointers = "".join(f", const float* __restrict__ {o.name}" for o in plan.affine)
    return src + render(
        "rowwise.cpp", "rows", x=x, affine_pointers=affine_pointers, reduce=R, parallel=PARALLEL_ELEMENTS, core=core
    )
