"""The row-wise family: reductions, the softmax family and layer, group and instance norms over rows of R elements,
with the elementwise operators before it fused as it reads and those after it as it writes (templates/rowwise.cu,
.cpp); a batch norm's channels are rows too, with kernels of their own (batch_norm.py)."""

from agent.heuristic.emit import CPP_PRELUDE, PARALLEL_ELEMENTS, op_function
from agent.heuristic.families import batch_norm
from agent.heuristic.families.common import BLOCK_REDUCE, cuda_prelude
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
        "MaxSum acc = {-INFINITY, 0.f};",
        "acc = combine(acc, MaxSum{v, 1.f});",
        "acc = block_reduce(acc, combine); const float inv = 1.f / acc.s;",
        "for (int64_t r = threadIdx.x; r < R; r += BLOCK) y[r] = epi_op(__expf(pre_op(x[r]) - acc.m) * inv);",
    ),
    "log_softmax": (
        "MaxSum acc = {-INFINITY, 0.f};",
        "acc = combine(acc, MaxSum{v, 1.f});",
        "acc = block_reduce(acc, combine); const float lse = acc.m + logf(acc.s);",
        "for (int64_t r = threadIdx.x; r < R; r += BLOCK) y[r] = epi_op(pre_op(x[r]) - lse);",
    ),
    "logsumexp": (
        "MaxSum acc = {-INFINITY, 0.f};",
        "acc = combine(acc, MaxSum{v, 1.f});",
        "acc = block_reduce(acc, combine);",
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
