"""The scatter family (scatter, scatter_add, scatter_reduce, index_put, index_add): its lowering and its kernels.

The output starts as the self operand; then each source element is combined into the element its index picks (an
assignment, a sum, product, max or min; a mean is a sum over a count). The source elements split into lines: those
that differ off the indexed dims never meet, and a line's elements are combined in order. In C++ a thread takes a
contiguous block of whole lines and walks those of one row side by side (an `omp simd` loop where their targets are
contiguous too, as index_add's), so a sum adds its terms in torch's own order; on CUDA a thread takes one element and
updates atomically. An out-of-range index raises as torch's does, after the kernel, and its element is never written.
A plain scatter (or index_put without accumulate) with duplicate indices keeps one of the values, as torch leaves it
unspecified: in C++ the last in the source's order (as torch's CPU kernel), on CUDA any of them.
"""

import math

import torch

from agent.heuristic.dag.cexpr import Scope, coord, literal
from agent.heuristic.dag.ir import FLOATS, T, contiguous_strides
from agent.heuristic.errors import Unsupported

# torch's names of the reductions -> the kernels' (scatter's reduce= "add" / "multiply", scatter_reduce's the others)
REDUCES = {"sum": "sum", "add": "sum", "prod": "prod", "multiply": "prod", "amax": "max", "amin": "min", "mean": "mean"}
INDEX_DTYPES = ("int64", "int32", "int16", "int8", "uint8")
# The lowest and highest value of each integral type: the start of an integral max or min over the sources alone.
LIMITS = {
    "int64": ("(-9223372036854775807LL - 1)", "9223372036854775807LL"),
    "int32": ("(-2147483647 - 1)", "2147483647"),
    "int16": ("((int16_t)-32768)", "((int16_t)32767)"),
    "int8": ("((int8_t)-128)", "((int8_t)127)"),
    "uint8": ("((uint8_t)0)", "((uint8_t)255)"),
    "bool": ("false", "true"),
}


# -- lowering ----------------------------------------------------------------------------------------------------------
def scatter(lowering, node, x, dim, index, src, reduce="none", include_self=True):
    """The node of x.scatter(dim, index, src) combined by REDUCE (none, or one of REDUCES' names); SRC a node or a
    number. Like torch, the index picks along DIM, its other coordinates its own, and a larger source is read at the
    index's coordinates."""
    rank = len(x.shape)
    if rank == 0 or len(index.shape) != rank:
        raise Unsupported(
            f"{node['target']} ({node['name']}) of a tensor of rank {rank} by an index of rank {len(index.shape)}"
        )
    _check_index(node, index)
    dim %= rank
    domain = list(index.shape)
    if isinstance(src, T):
        for d, size in enumerate(domain):
            if src.shape[d] != size:
                src = lowering.view(src, ("slice", "Tensor"), d, 0, size)
    else:
        src = lowering.scalar_broadcast(src, domain, node["dtype"])
    return _combined(lowering, node, x, src, [index], "scatter", [dim], domain, _reduce(node, reduce), include_self)


def index_put(lowering, node, x, indices, values, accumulate):
    """The node of x.index_put(indices, values, accumulate): the index tensors (None for a dim taken whole) broadcast
    together pick one element of x per position, as x[indices] reads them (cexpr's multi_index)."""
    dims = [d for d, i in enumerate(indices) if i is not None]
    if not dims:
        raise Unsupported(f"{node['target']} ({node['name']}) without an index tensor")
    ids = [lowering.arg(indices[d]) for d in dims]
    for i in ids:
        _check_index(node, i)
    picked = list(torch.broadcast_shapes(*[torch.Size(i.shape) for i in ids]))
    rest = [size for d, size in enumerate(x.shape) if d not in dims]
    if dims == list(range(dims[0], dims[0] + len(dims))):  # adjacent: the picked positions take the dims' place
        domain = list(x.shape[: dims[0]]) + picked + list(x.shape[dims[-1] + 1 :])
    else:
        domain = picked + rest
    if values.shape != domain:
        values = lowering.view(values, ("expand", "default"), domain)
    reduce = "sum" if accumulate else "none"
    return _combined(lowering, node, x, values, ids, "index", dims, domain, reduce, True)


def _check_index(node, index):
    if index.dtype == "bool":
        raise Unsupported(f"{node['target']} ({node['name']}) with a boolean mask: its size depends on the data")
    if index.dtype not in INDEX_DTYPES:
        raise Unsupported(f"{node['target']} ({node['name']}) with a {index.dtype} index")


def _reduce(node, reduce):
    if reduce == "none":
        return reduce
    if reduce not in REDUCES:
        raise Unsupported(f"{node['target']} ({node['name']}) with reduce={reduce!r}")
    return REDUCES[reduce]


def _combined(lowering, node, x, src, ids, mode, dims, domain, reduce, include_self):
    dtype = node["dtype"]
    x, src = lowering.cast(x, dtype), lowering.cast(src, dtype)
    what = node["target"].split(".")[1] if node["target"].startswith("aten.") else node["target"]
    if reduce != "mean":
        return lowering.add(
            "scatter",
            x.shape,
            dtype,
            [x, src, *ids],
            mode=mode,
            dims=dims,
            domain=domain,
            reduce=reduce,
            include_self=bool(include_self),
            what=what,
        )
    # the sum over the count of its terms (self among them where included); an element no source reaches keeps self:
    # with include_self=False its sum is self and its count 0, divided by 1. Integers divide rounding down, as torch.
    total = _combined(lowering, node, x, src, ids, mode, dims, domain, "sum", include_self)
    ones = lowering.scalar_broadcast(1, domain, dtype)
    start = lowering.scalar_broadcast(1 if include_self else 0, x.shape, dtype)
    count = _combined(lowering, node, start, ones, ids, mode, dims, domain, "sum", True)
    count = lowering.pointwise("maximum", [count, lowering.scalar(1, dtype)], dtype)
    return lowering.pointwise("div", [total, count], dtype, **({} if dtype in FLOATS else {"mode": "floor"}))


# -- kernels -------------------------------------------------------------------------------------------------------
def _lines(node):
    """(outer, length, inner): the source elements as [outer, length, inner], a line the middle dim. Two elements of
    different lines have different coordinates off the indexed dims, so never the same target."""
    domain, dims = node.attrs["domain"], node.attrs["dims"]
    if node.attrs["mode"] == "scatter":
        first, rank = dims[0], 1
    else:
        rank = max(len(i.shape) for i in node.args[2:])
        first = dims[0] if dims == list(range(dims[0], dims[0] + len(dims))) else 0
    return math.prod(domain[:first]), math.prod(domain[first : first + rank]), math.prod(domain[first + rank :])


def _target(emitter, scope, node, e, bad):
    """The flat index into the output of source element E, computed in SCOPE, whose lines skip the element (continue)
    when an index is out of range, after BAD(raw index, dim, size) records it."""
    shape, domain, dims = node.shape, node.attrs["domain"], node.attrs["dims"]
    if node.attrs["mode"] == "scatter":  # torch's scatter takes no negative index
        raw = emitter.define(scope, "int64_t", f"(int64_t)({emitter.value(scope, node.args[2], e)})")
        coords = [raw if d == dims[0] else coord(e, domain, d) for d in range(len(shape))]
        picks = [(raw, raw, dims[0])]
    else:
        coords, picks = emitter.multi_index(scope, shape, dims, node.args[2:], domain, e)
    for raw, at, d in picks:
        scope.lines.append(
            f"if ({at} < 0 || {at} >= {shape[d]}LL) {{ {bad(f'(int64_t)({raw})', d, shape[d])} continue; }}"
        )
    strides = contiguous_strides(shape)
    terms = [c if s == 1 else f"{c} * {s}LL" for c, s in zip(coords, strides) if c != "0"]
    return emitter.index(scope, " + ".join(terms) or "0")


def _combine(reduce, cur, v, ctype):
    """C expression of output element CUR combined with V: NaN wins a max or min, as in torch."""
    if reduce == "sum":
        return f"({ctype})({cur} + {v})"
    if reduce == "prod":
        return f"({ctype})({cur} * {v})"
    if reduce in ("max", "min"):
        return f"(({v}) != ({v}) || ({v}) {'>' if reduce == 'max' else '<'} ({cur}) ? ({v}) : ({cur}))"
    return v


def _identity(reduce, dtype):
    """Where include_self=False: what a target starts from, so that only the sources count."""
    if reduce in ("sum", "prod"):
        return literal(0 if reduce == "sum" else 1, dtype)
    if dtype in FLOATS:
        return literal(-math.inf if reduce == "max" else math.inf, dtype)
    return LIMITS[dtype][0 if reduce == "max" else 1]


def source(node, emitter, device, pointers, params):
    """(function name, buffers read, C source, headers) of the kernels writing scatter NODE."""
    a, ctype = node.attrs, node.ctype
    emitter.computing = node.name
    reduce, name = a["reduce"], f"k_{node.name}"
    symbol = f"ks_bad_{node.name}"  # CUDA: the kernels' record of an out-of-range index
    record = "bad.record(" if device == "cpu" else f"ks_record_bad_index({symbol}, "

    def bad(raw, d, size):
        return f"{record}{raw}, {d}, {size});"

    init = Scope()
    init.lines.append(f"out[i] = ({ctype})({emitter.value(init, node.args[0], 'i')});")
    rows = device == "cpu" and _contiguous_lines(node)

    def targeted(line):
        """A pass: (lines computing source element e's target, then LINE(target, element, scope) of the element; in
        rows, None) or, where a line is contiguous in the output, (those of the target of e = the line's element at
        in = 0, those of the elements ev = e + in, which the target + in holds)."""
        head = Scope()
        t = _target(emitter, head, node, "e", bad)
        if not rows:
            head.lines.append(line(t, "e", head))
            return head, None
        body = Scope(head)
        body.lines.append("const int64_t ev = e + in;")
        body.lines.append(line(f"{t} + in", "ev", body))
        return head, body

    def update(t, element, scope):
        v = f"({ctype})({emitter.value(scope, node.args[1], element)})"
        if device == "cpu" or reduce == "none":
            return f"out[{t}] = {_combine(reduce, f'out[{t}]', v, ctype)};"
        if reduce == "sum":
            return f"ks_atomic_add(out + {t}, {v});"
        combine = _combine(reduce, "a", "b", ctype)
        return f"ks_atomic_apply(out + {t}, {v}, []({ctype} a, {ctype} b) {{ return {combine}; }});"

    passes = []
    if not a["include_self"] and reduce != "none":
        passes.append(targeted(lambda t, element, scope: f"out[{t}] = {_identity(reduce, node.dtype)};"))
    passes.append(targeted(update))
    lines = init.lines + [line for p in passes for s in p if s for line in s.lines]
    reads = pointers("\n".join(lines), "")
    numel, domain = node.numel, math.prod(a["domain"])
    if device == "cpu":
        outer, length, inner = _lines(node)
        loops = "".join(_cpu_lines(head.lines, body and body.lines, outer, length, inner) for head, body in passes)
        text = (
            '#include "ks_scatter.h"\n'
            f"void {name}({params(reads, ctype)}) {{\n"
            f"    #pragma omp parallel for schedule(static) if({numel}LL >= 65536LL)\n"
            f"    for (int64_t i = 0; i < {numel}LL; ++i) {{\n{_indent(init.lines, 8)}    }}\n"
            f"    KsBadIndex bad;\n{loops}"
            f'    bad.raise("{a["what"]}");\n}}\n'
        )
        return name, reads, text, ["ks_scatter.h"]
    kernels = [(f"g_{node.name}_init", init, numel, "i")]
    if len(passes) == 2:
        kernels.append((f"g_{node.name}_mark", passes[0][0], domain, "e"))
    kernels.append((f"g_{node.name}", passes[-1][0], domain, "e"))
    args = "".join(r + ", " for r in reads) + "out"
    text = f'#include "ks_scatter.cuh"\nstatic __device__ unsigned long long {symbol}[4];\n'
    launches = ""
    for kernel, scope, n, var in kernels:
        text += (
            f"__global__ void {kernel}({params(reads, ctype)}) {{\n"
            f"    for (int64_t {var} = blockIdx.x * (int64_t)BLOCK + threadIdx.x; {var} < {n}LL; "
            f"{var} += (int64_t)gridDim.x * BLOCK) {{\n{_indent(scope.lines, 8)}    }}\n}}\n"
        )
        launches += (
            f"    {{\n        const int64_t wanted = ({n}LL + BLOCK - 1) / BLOCK;\n"
            f"        const int blocks = (int)(wanted < ks_grid_limit() ? wanted : ks_grid_limit());\n"
            f"        if (blocks > 0) {kernel}<<<blocks, BLOCK, 0, stream>>>({args});\n    }}\n"
        )
    text += (
        f"void {name}({params(reads, ctype, '')}, cudaStream_t stream) {{\n{launches}"
        f'    ks_check_indices({symbol}, stream, "{a["what"]}");\n}}\n'
    )
    return name, reads, text, ["ks_scatter.cuh"]


def _contiguous_lines(node):
    """Whether the elements of a line at one position c (see _lines) have contiguous targets: index_put's and
    index_add's with adjacent index dims, whose trailing dims are the output's own."""
    dims = node.attrs["dims"]
    return node.attrs["mode"] == "index" and dims == list(range(dims[0], dims[0] + len(dims)))


def _cpu_lines(head, body, outer, length, inner):
    """A C++ loop running HEAD for each source element e, then BODY (where not None) for each of the elements e + in
    of the lines that pass through it. The lines (see _lines), numbered o * INNER + in, are shared out to the threads
    in contiguous blocks (ks_share); a thread walks its lines of one o together, position c after position c, so
    that it reads the source's rows contiguously and each line still takes its elements in order. With a BODY, HEAD
    runs once per position (at in = 0) and BODY is an `omp simd` loop over the lines."""
    if body is None:
        loop = (
            f"                for (int64_t in = in0; in < in1; ++in) {{\n"
            f"                    const int64_t e = (o * {length}LL + c) * {inner}LL + in;\n"
            f"{_indent(head, 20)}                }}\n"
        )
    else:
        loop = (
            f"                const int64_t e = (o * {length}LL + c) * {inner}LL;\n{_indent(head, 16)}"
            f"                #pragma omp simd\n"
            f"                for (int64_t in = in0; in < in1; ++in) {{\n{_indent(body, 20)}                }}\n"
        )
    # a vectorized row costs about a tenth of an element in the general loop: threads pay for themselves later
    threshold = 65536 if body is None else 1 << 20
    return (
        f"    #pragma omp parallel if({outer * length * inner}LL >= {threshold}LL)\n"
        f"    {{\n"
        f"        int64_t first, last;\n"
        f"        ks_share({outer * inner}LL, first, last);\n"
        f"        for (int64_t t = first, in0, in1; t < last; t += in1 - in0) {{\n"
        f"            const int64_t o = t / {inner}LL;\n"
        f"            in0 = t % {inner}LL;\n"
        f"            in1 = {inner}LL - in0 < last - t ? {inner}LL : in0 + (last - t);\n"
        f"            for (int64_t c = 0; c < {length}LL; ++c) {{\n{loop}            }}\n        }}\n    }}\n"
    )


def _indent(lines, depth):
    return "".join(" " * depth + line + "\n" for line in lines)
