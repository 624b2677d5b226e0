"""Rewrites of the planner's graph before scheduling: the hand-written softmax(q k^T * scale + mask) v becomes one
attention node (the attention family's kernel), its score matrix never stored.

softmax arrives decomposed (amax, sub, exp, sum, div); the scores are a GEMM of q and k^T, scaled by a number and
masked by anything that does not depend on them (an added bias, a where(mask, -inf, ...) or masked_fill); both
GEMMs are batched over the same leading dims. Anything else is left as it was (correct, only not fused).
"""

import math

from agent.heuristic.dag.ir import FLOATS, T, contiguous_strides
from agent.heuristic.dag.lower import WIDEST_HEAD
from agent.heuristic.dag.rewrite import replace


def _pure_reshape_of(node):
    """The node NODE is a row-major reshape of (itself when it is no view)."""
    if node.kind != "view":
        return node
    base = node.attrs["base"]
    if (
        node.attrs["offset"] == 0
        and node.attrs["strides"] == contiguous_strides(node.shape)
        and base.numel == node.numel
    ):
        return base
    return None


def _last_dim_reduction(node, op, source):
    return (
        node.kind == "reduce"
        and node.attrs["op"] == op
        and node.args[0] is source
        and node.attrs["dims"] == [len(source.shape) - 1]
    )


def _softmax_input(p):
    """X when P = softmax(X, dim=-1) as torch decomposes it, else None."""
    if p.kind != "pointwise" or p.attrs["op"] != "div":
        return None
    e, s = p.args
    if not _last_dim_reduction(s, "sum", e) or e.kind != "pointwise" or e.attrs["op"] != "exp":
        return None
    centered = e.args[0]
    if centered.kind != "pointwise" or centered.attrs["op"] != "sub":
        return None
    x, m = centered.args
    return x if _last_dim_reduction(m, "max", x) else None


def _walk(node):
    """NODE and every node it reads, each once (iterative: a network's graph is deeper than Python's recursion)."""
    seen, stack = set(), [node]
    while stack:
        node = stack.pop()
        if node.name in seen:
            continue
        seen.add(node.name)
        yield node
        stack += node.args


def _depends_on(node, target):
    return any(n is target for n in _walk(node))


class _Graph:
    def __init__(self, graph):
        self.graph = graph
        self.count = 0
        self.created = []  # nodes made for the current rewrite, inserted before it

    def add(self, kind, shape, dtype, args, **attrs):
        node = T(f"m{self.count}", kind, list(shape), dtype, list(args), attrs)
        self.count += 1
        self.created.append(node)
        return node

    def scores(self, x, batch_shape):
        """(scale, gemm, [additive mask terms]) when X = scale * G + terms with G a batched q @ k^T, else None."""
        scale, terms = 1.0, []
        while True:
            reshaped = _pure_reshape_of(x)
            if reshaped is not None and reshaped is not x and reshaped.kind == "gemm":
                x = reshaped
            if x.kind == "gemm":
                return scale, x, terms
            if x.kind != "pointwise":
                return None
            op, args = x.attrs["op"], x.args
            if op in ("mul", "div") and len(args) == 2 and args[1].kind == "scalar":
                value = float(args[1].attrs["value"])
                scale = scale * value if op == "mul" else scale / value
                x = args[0]
            elif op == "mul" and len(args) == 2 and args[0].kind == "scalar":
                scale *= float(args[0].attrs["value"])
                x = args[1]
            elif op == "add" and len(args) == 2:
                gemm_side = [a for a in args if self.reaches_gemm(a)]
                if len(gemm_side) != 1:
                    return None
                other = args[1] if gemm_side[0] is args[0] else args[0]
                terms.append(("add", other, scale))  # scaled by the factors applied after it
                x = gemm_side[0]
            elif op == "where" and len(args) == 3:
                cond, a, b = args
                if b.kind == "scalar" and math.isinf(float(b.attrs["value"])) and b.attrs["value"] < 0:
                    terms.append(("keep", cond, scale))  # where(cond, scores, -inf): keep where cond
                    x = a
                elif a.kind == "scalar" and math.isinf(float(a.attrs["value"])) and a.attrs["value"] < 0:
                    terms.append(("drop", cond, scale))  # where(cond, -inf, scores): drop where cond
                    x = b
                else:
                    return None
            else:
                return None
            if scale <= 0:
                return None  # a -inf mask stays -inf only under a positive scale

    def reaches_gemm(self, node):
        return any(n.kind == "gemm" for n in _walk(node))

    def mask(self, terms, scale, shape):
        """One additive float mask from the terms outside the scores (scaled as the scores were after them)."""
        mask = None
        for kind, value, factor in terms:
            if kind == "add":
                if value.dtype not in FLOATS:  # added as a number, where a bool mask would read as a keep mask
                    value = self.add("pointwise", value.shape, "float32", [value], op="cast")
                term = (
                    value
                    if factor == 1.0
                    else self.add(
                        "pointwise",
                        value.shape,
                        "float32",
                        [value, self.add("scalar", [], "float32", [], value=factor)],
                        op="mul",
                    )
                )
            else:
                zero = self.add("scalar", [], "float32", [], value=0.0)
                minus_inf = self.add("scalar", [], "float32", [], value=-math.inf)
                pair = [zero, minus_inf] if kind == "keep" else [minus_inf, zero]
                term = self.add("pointwise", value.shape, "float32", [value] + pair, op="where")
            mask = (
                term
                if mask is None
                else self.add("pointwise", _broadcast(mask.shape, term.shape), "float32", [mask, term], op="add")
            )
        return mask

    def expanded(self, node, shape):
        """NODE broadcast to SHAPE as a view of what NODE reads (stride 0 along its broadcast dims): the attention
        kernel reads a mask through that map where it is stored, never expanded to the scores' shape."""
        base, strides, offset = node, contiguous_strides(node.shape), 0
        if node.kind == "view" and node.attrs["base"].kind != "scalar":
            base, strides, offset = node.attrs["base"], node.attrs["strides"], node.attrs["offset"]
        pad = len(shape) - len(node.shape)
        strides = [0] * pad + [0 if size != want else s for size, want, s in zip(node.shape, shape[pad:], strides)]
        return self.add("view", shape, node.dtype, [base], base=base, strides=strides, offset=offset)


def _broadcast(a, b):
    rank = max(len(a), len(b))
    a, b = [1] * (rank - len(a)) + list(a), [1] * (rank - len(b)) + list(b)
    return [max(x, y) for x, y in zip(a, b)]


def _transposed(node):
    """A node for node^T over its last two dims (a view of what NODE views)."""
    if node.kind == "view":
        base, strides, offset = node.attrs["base"], list(node.attrs["strides"]), node.attrs["offset"]
    else:
        base, strides, offset = node, contiguous_strides(node.shape), 0
    strides[-2], strides[-1] = strides[-1], strides[-2]
    shape = list(node.shape)
    shape[-2], shape[-1] = shape[-1], shape[-2]
    return T(f"{node.name}_t", "view", shape, node.dtype, [base], {"base": base, "strides": strides, "offset": offset})


def fuse_attention(graph):
    """GRAPH with every hand-written attention's output GEMM turned into an attention node (in place)."""
    rewriter = _Graph(graph)
    fused = 0
    for out in list(graph.nodes):
        if out.kind != "gemm" or len(out.shape) != 3:
            continue
        rewriter.created = []
        p_view, v = out.args
        p = _pure_reshape_of(p_view)
        x = _softmax_input(p) if p is not None else None
        if x is None or math.prod(x.shape[:-2]) != out.shape[0]:
            continue
        found = rewriter.scores(x, x.shape[:-2])
        if found is None:
            continue
        scale, scores, terms = found
        q, k_t = scores.args
        if max(q.shape[-1], v.shape[-1]) > WIDEST_HEAD:
            continue  # heads too wide for the attention kernel's registers stay GEMMs
        if len(scores.shape) != 3 or scores.shape[0] != out.shape[0] or v.shape[-2] != scores.shape[-1]:
            continue
        if any(_depends_on(value, scores) for _, value, _ in terms):
            continue
        mask = rewriter.mask(terms, scale, x.shape)
        k = _transposed(k_t)
        rewriter.created.append(k)
        inputs = [q, k, v]
        if mask is not None:
            inputs.append(mask if mask.shape == list(x.shape) else rewriter.expanded(mask, list(x.shape)))
        index = graph.nodes.index(out)
        # softmax written out gives a row with every key masked NaN (exp(-inf - -inf)), as eager does
        attrs = {"causal": False, "scale": scale, "masked_rows": "nan"}
        attention = T(out.name, "attention", out.shape, out.dtype, inputs, attrs)
        graph.nodes[index : index + 1] = rewriter.created + [attention]
        replace(graph, out, attention)
        fused += 1
    return fused
