"""The online softmax: a row's max and its sum of exp(x - max), which the graph reduces in two passes (amax, then the
sum of exp(x - amax)), computed in one pass over the row by one "maxsum" node, its kernel and the rewrite that makes it.

softmax, log_softmax, cross entropy (log_softmax, then the target's element) and logsumexp (whose decomposition centers
the row on its max made finite) all read a row this way, as torch decomposes them or as users write them. The pass
keeps a running pair (m, s) per thread, s rescaled by exp(m_old - m_new) whenever the max grows; on CUDA a block's
threads then merge their pairs (ks_merge, templates/common.cuh). A row of -inf alone keeps m = -inf and s = 0, never
exp(-inf - -inf); what reads the pair downstream is the graph's own (softmax's NaN for such a row, as eager's).
"""

from agent.heuristic.dag.cexpr import Scope
from agent.heuristic.dag.ir import FLOATS, T, contiguous_strides
from agent.heuristic.dag.rewrite import constant_value, replace, walk

CHUNK = 256  # elements of a row a C++ thread takes at a time: their max, then their exps (both loops vectorize)


def fuse_online_softmax(graph):
    """GRAPH (in place) with each sum of exp(x - amax(x)) over amax's dims read, with that amax, from one maxsum node:
    the pair (max, sum) of every row side by side in one buffer; returns what was rewritten, one line each."""
    done, live = [], walk([node for node, _, _ in graph.outputs])
    for total in list(graph.nodes):
        found = _sum_of_exp(total) if total.name in live else None
        if found is None:
            continue
        top, finite = found
        pair = T(
            f"{total.name}_ms",
            "maxsum",
            list(top.shape) + [2],
            total.dtype,
            [top.args[0]],
            {"dims": list(top.attrs["dims"]), "finite": finite},
        )
        at = graph.nodes.index(top)
        graph.nodes[at:at] = [pair]
        for reduction, offset in ((top, 0), (total, 1)):
            half = _half(pair, reduction, offset)
            graph.nodes.insert(at + 1 + offset, half)
            replace(graph, reduction, half)
        done.append(f"{top.name}, {total.name}: a row's max and sum of exp(x - max) in one pass")
    return done  # the two reductions, now read by nothing, are left to the scheduler, which skips dead nodes


def _half(pair, reduction, offset):
    """The view of PAIR's buffer that holds REDUCTION's values: every row's element OFFSET (0: max, 1: sum)."""
    strides = [2 * s for s in contiguous_strides(reduction.shape)]
    attrs = {"base": pair, "strides": strides, "offset": offset}
    return T(f"{reduction.name}_{('max', 'sum')[offset]}", "view", list(reduction.shape), pair.dtype, [pair], attrs)


def _sum_of_exp(total):
    """(the amax, whether the row is centered on it made finite) when TOTAL sums exp(x - amax(x)) over amax's dims,
    x and both reductions of one floating dtype; else None."""
    if total.kind != "reduce" or total.attrs["op"] != "sum" or total.dtype not in FLOATS:
        return None
    e = total.args[0]
    if e.kind != "pointwise" or e.attrs["op"] != "exp" or e.dtype != total.dtype:
        return None
    centered = e.args[0]
    if centered.kind != "pointwise" or centered.attrs["op"] != "sub" or centered.dtype != total.dtype:
        return None
    x, center = centered.args
    if x.shape != centered.shape or x.dtype != total.dtype:
        return None
    for finite, top in ((False, _max_of(center, x)), (True, _finite_max_of(center, x))):
        if top is not None and top.attrs["dims"] == total.attrs["dims"] and top.shape == total.shape:
            return top, finite
    return None


def _unviewed(node):
    """The node NODE reads element for element, through reshapes that only add or drop dims of 1 (a keepdim=False
    reduction unsqueezed back); NODE itself when it is no such view."""
    padded = [d for d in node.shape if d != 1]
    while node.kind == "view":
        base = node.attrs["base"]
        pure = node.attrs["offset"] == 0 and node.attrs["strides"] == contiguous_strides(node.shape)
        if not pure or [d for d in base.shape if d != 1] != padded:
            break
        node = base
    return node


def _max_of(center, x):
    """The amax of X that CENTER reads, broadcast along its reduced dims, or None."""
    top = _unviewed(center)
    rank = len(top.shape)
    broadcast = rank == len(x.shape) and [1] * (rank - len(center.shape)) + list(center.shape) == list(top.shape)
    if top.kind == "reduce" and top.attrs["op"] == "max" and top.args[0] is x and broadcast:
        return top
    return None


def _finite_max_of(center, x):
    """The amax m of X when CENTER is where(|m| == inf, 0, m), as logsumexp's decomposition centers the row; or None."""
    chosen = _unviewed(center)
    if chosen.kind != "pointwise" or chosen.attrs["op"] != "where" or constant_value(chosen.args[1]) != 0:
        return None
    top = _max_of(chosen.args[2], x)
    infinite = chosen.args[0]
    if top is None or infinite.kind != "pointwise" or chosen.shape != top.shape:
        return None
    if infinite.attrs["op"] == "isinf" and _unviewed(infinite.args[0]) is top:
        return top
    if infinite.attrs["op"] == "eq" and constant_value(infinite.args[1]) == float("inf"):
        magnitude = _unviewed(infinite.args[0])
        if magnitude.kind == "pointwise" and magnitude.attrs["op"] == "abs" and _unviewed(magnitude.args[0]) is top:
            return top
    return None


# -- the kernel ------------------------------------------------------------------------------------------------------
def statistics(emitter, scope, node, index, device, block):
    """Lines writing row INDEX's pair of maxsum NODE: out[2 * INDEX] its max, out[2 * INDEX + 1] its sum of
    exp(x - max) (+inf where a finite center's max is +inf: exp(x - 0) overflows there). BLOCK: the CUDA block's
    threads share the row."""
    x = node.args[0]
    count, element = emitter.row(scope, x, node.attrs["dims"], node.shape[:-1], index)
    if device == "cpu":
        m, s = _cpp_pass(emitter, scope, x, count, element)
    else:
        m, s = _cuda_pass(emitter, scope, x, count, element, block)
    total = f"{m} == INFINITY ? ({x.ctype})INFINITY : ({x.ctype}){s}" if node.attrs["finite"] else f"({x.ctype}){s}"
    stores = [f"out[2 * {index}] = {m};", f"out[2 * {index} + 1] = {total};"]
    scope.lines += [f"if (threadIdx.x == 0) {{ {' '.join(stores)} }}"] if block else stores


def _cpp_pass(emitter, scope, x, count, element):
    """C++: the row in chunks, each chunk's values kept while its max rescales the running sum, then their exps
    summed; the sum of float32 exps in double. Returns the C names of (max, sum)."""
    t = x.ctype
    acc = "double" if emitter.double or t == "double" else t
    exp = "expf" if t == "float" else "std::exp"
    m, s, c, n, k, r, w, top = (emitter.fresh(p) for p in ("m", "s", "c", "n", "k", "r", "w", "top"))
    emitter.bounded(r, 0, count - 1)  # within the row: a row of a view's flat index divides away, not per element
    inner = Scope(scope)
    inner.lines.append(f"const int64_t {r} = {c} + {k};")
    v = element(inner, r)
    inner.lines.append(f"{w}[{k}] = {v}; {top} = {v} > {top} ? {v} : {top};")
    scope.lines += [
        f"{t} {m} = (-INFINITY); {acc} {s} = 0;",
        f"for (int64_t {c} = 0; {c} < {count}LL; {c} += {CHUNK}) {{",
        f"    const int64_t {n} = {count}LL - {c} < {CHUNK} ? {count}LL - {c} : {CHUNK};",
        f"    {t} {w}[{CHUNK}]; {t} {top} = (-INFINITY);",
        f"    #pragma omp simd reduction(max:{top})",
        f"    for (int64_t {k} = 0; {k} < {n}; ++{k}) {{",
        *("        " + line for line in inner.lines),
        "    }",
        f"    if ({top} > {m}) {{ {s} *= std::exp(({acc}){m} - ({acc}){top}); {m} = {top}; }}",
        f"    if ({m} == -INFINITY) continue;  // a row of -inf so far: its sum stays 0",
        f"    #pragma omp simd reduction(+:{s})",
        f"    for (int64_t {k} = 0; {k} < {n}; ++{k}) {s} += ({acc}){exp}({w}[{k}] - {m});",
        "}",
    ]
    return m, s


def _cuda_pass(emitter, scope, x, count, element, block):
    """CUDA: each thread's elements of the row pushed into its pair (ks_online), the block's pairs merged when BLOCK.
    Returns the C names of (max, sum)."""
    t = x.ctype
    acc, r = emitter.fresh("acc"), emitter.fresh("r")
    inner = Scope(scope)
    v = element(inner, r)
    inner.lines.append(f"{acc} = ks_online({acc}, ({t}){v});")
    start, step = ("threadIdx.x", "BLOCK") if block else ("0", "1")
    scope.lines += [
        f"KsMaxSum<{t}> {acc} = {{-INFINITY, 0}};",
        f"for (int64_t {r} = {start}; {r} < {count}LL; {r} += {step}) {{",
        *("    " + line for line in inner.lines),
        "}",
    ]
    if block:
        pair = f"KsMaxSum<{t}>"
        scope.lines.append(f"{acc} = block_reduce({acc}, []({pair} a, {pair} b) {{ return ks_merge(a, b); }});")
    return f"{acc}.m", f"{acc}.s"
