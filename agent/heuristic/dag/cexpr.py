"""C code of one element of a node: index maps of views, broadcasts, cat/pad/gather selections, inline reduction and
window loops, all over the buffers of materialized nodes. One emitter serves the CUDA and the C++ kernels.

Values are named temporaries, shared within a scope (x + f(x) reads x once); a loop opens a child scope whose
temporaries die with it.
"""

import math

from agent.heuristic.dag import indexing
from agent.heuristic.dag.ir import C_TYPES, FLOATS, contiguous_strides, promote
from agent.heuristic.errors import Unsupported
from agent.heuristic.plan import BINARY as FLOAT_BINARY
from agent.heuristic.plan import UNARY as FLOAT_UNARY

INTEGRAL_UNARY = {
    "neg": "(-({x}))",
    "abs": "(({x}) < 0 ? -({x}) : ({x}))",
    "square": "(({x}) * ({x}))",
    "sign": "(({x}) > 0 ? 1 : (({x}) < 0 ? -1 : 0))",
    "sgn": "(({x}) > 0 ? 1 : (({x}) < 0 ? -1 : 0))",
    "relu": "(({x}) > 0 ? ({x}) : 0)",
    "ceil": "({x})",
    "floor": "({x})",
    "round": "({x})",
    "trunc": "({x})",
    "bitwise_not": "(~({x}))",
}
BOOL_UNARY = {
    "logical_not": "(!({x}))",
    "isnan": "({x} != {x})",
    "isinf": "(fabs((double)({x})) == INFINITY)",
    "isfinite": "(({x}) == ({x}) && fabs((double)({x})) != INFINITY)",
    "signbit": "(({x}) < 0)",
}
EXTRA_FLOAT_UNARY = {
    "frac": "(({x}) - truncf({x}))",
    "acosh": "acoshf({x})",
    "sgn": FLOAT_UNARY["sign"],
    "relu6": FLOAT_UNARY["relu6"],
    "bitwise_not": "(!({x}))",
    # the modified Bessel function I0 (Abramowitz & Stegun 9.8.1-2, relative error under 2e-7), the same C on both
    # targets; infinite past ln(FLT_MAX) as torch's float i0, whose exp(|x|) overflows first, and exp(|x|) as
    # exp(|x| / 2)^2 below it (the C++ target's expf saturates at 88)
    "i0": "(fabsf({x}) <= 3.75f ? 1.0f + (({x}) / 3.75f) * (({x}) / 3.75f) * (3.5156229f + (({x}) / 3.75f) * "
    "(({x}) / 3.75f) * (3.0899424f + (({x}) / 3.75f) * (({x}) / 3.75f) * (1.2067492f + (({x}) / 3.75f) * "
    "(({x}) / 3.75f) * (0.2659732f + (({x}) / 3.75f) * (({x}) / 3.75f) * (0.0360768f + (({x}) / 3.75f) * "
    "(({x}) / 3.75f) * 0.0045813f))))) : fabsf({x}) > 88.7228317f ? INFINITY : expf(0.5f * "
    "fabsf({x})) * (expf(0.5f * fabsf({x})) / sqrtf(fabsf({x})) * (0.39894228f + (3.75f / "
    "fabsf({x})) * (0.01328592f + (3.75f / fabsf({x})) * (0.00225319f + (3.75f / fabsf({x})) * (-0.00157565f + "
    "(3.75f / fabsf({x})) * (0.00916281f + (3.75f / fabsf({x})) * (-0.02057706f + (3.75f / fabsf({x})) * "
    "(0.02635537f + (3.75f / fabsf({x})) * (-0.01647633f + (3.75f / fabsf({x})) * 0.00392377f))))))))))",
}
# Reductions the CPU target writes as `omp simd` loops, by their OpenMP reduction operator.
# The largest topk whose CPU kernels keep the row's best elements in a buffer on the stack (one pass of the row per
# element); a larger one (and CUDA's) takes j + 1 passes for element j, with no storage.
TOPK_BUFFER = 1024
SIMD_REDUCTIONS = {"sum": "+", "mean": "+", "prod": "*", "max": "max", "min": "min"}
COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
LOGICAL = {"logical_and": "&&", "logical_or": "||", "logical_xor": "!="}
BITWISE = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}


def literal(value, dtype):
    if dtype == "bool":
        return "true" if value else "false"
    if dtype in FLOATS:
        value = float(value)
        if math.isinf(value):
            return "INFINITY" if value > 0 else "(-INFINITY)"
        if math.isnan(value):
            return "NAN"
        return f"{value!r}f" if dtype == "float32" else repr(value)
    return f"(({C_TYPES[dtype]}){int(value)}LL)"


def coord(index, shape, d):
    """C expression of coordinate D of flat INDEX in row-major SHAPE."""
    inner = math.prod(shape[d + 1 :])
    if shape[d] == 1:
        return "0"
    text = f"({index})" if inner == 1 else f"(({index}) / {inner}LL)"
    return text if d == 0 or math.prod(shape[:d]) == 1 else f"({text} % {shape[d]}LL)"


def broadcast_index(index, shape, out_shape):
    """The flat index into an operand of SHAPE broadcast to OUT_SHAPE of output element INDEX."""
    if list(shape) == list(out_shape):
        return index
    if math.prod(shape) == 1:
        return "0"
    padded = [1] * (len(out_shape) - len(shape)) + list(shape)
    strides = contiguous_strides(padded)
    terms = [
        f"{coord(index, out_shape, d)} * {strides[d]}LL" if strides[d] != 1 else coord(index, out_shape, d)
        for d in range(len(out_shape))
        if padded[d] != 1
    ]
    return " + ".join(terms) or "0"


class Scope:
    def __init__(self, parent=None):
        self.parent, self.lines, self.memo = parent, [], {}
        self.depth = 0 if parent is None else parent.depth + 1

    def get(self, key):
        scope = self
        while scope is not None:
            if key in scope.memo:
                return scope.memo[key]
            scope = scope.parent
        return None


class Emitter:
    def __init__(self, buffers, device, accumulate_double=False):
        self.buffers = buffers  # node name -> C pointer name of a materialized node (or a leaf)
        self.device = device
        self.count = 0
        self.double = accumulate_double  # sums kept in double (the CPU target: no cost, less rounding)
        self.computing = None  # the node the current kernel writes: computed, not read from its own buffer
        self.known = {}  # node name -> the name holding its value at the kernel's element (a finished reduction)
        self.headers = set()  # the C++ headers of kernels/ that the expressions written so far call
        self.exprs = {}  # index variable -> the indexing.Expr it holds, read back when a later index uses it
        # a name or opaque index subexpression -> (lo, hi) it is known to lie in; `i`, each kernel's flat index of its
        # output, is never negative
        self.ranges = {"i": (0, indexing.INF)}

    def fresh(self, prefix):
        self.count += 1
        return f"{prefix}{self.count}"

    def define(self, scope, ctype, expr, prefix="v"):
        key = (ctype, expr)
        got = scope.get(key)
        if got is not None:
            return got
        name = self.fresh(prefix)
        scope.lines.append(f"const {ctype} {name} = {expr};")
        scope.memo[key] = name
        return name

    def index(self, scope, expr):
        """A name (or number) of the flat index EXPR, simplified (indexing.py) and defined once per scope."""
        if expr.replace("_", "").isalnum() or expr == "0":
            return expr
        parsed = indexing.Parser(self.exprs, self.ranges).parse(expr)
        if parsed is not None:
            expr = indexing.text(parsed)
            if expr.replace("_", "").isalnum():
                return expr
        name = self.define(scope, "int64_t", expr, "j")
        if parsed is not None:
            self.exprs.setdefault(name, parsed)
        return name

    def nest(self, name, inner, outer=None, within=None):
        """The flat index NAME is OUTER * INNER + WITHIN from here on, WITHIN < INNER (names NAME + "o" and NAME +
        "l" unless given: a CPU kernel's loop over rows of INNER): its divisions by INNER and by the strides within
        and above it simplify away."""
        outer, within = outer or f"{name}o", within or f"{name}l"
        self.ranges[outer], self.ranges[within] = (0, indexing.INF), (0, inner - 1)
        self.exprs[name] = indexing.add(
            indexing.scale(indexing.atom(outer), inner), indexing.atom(within, 0, inner - 1)
        )

    def unnest(self, name):
        self.exprs.pop(name, None)

    def bounded(self, text, lo, hi):
        """TEXT (a name, or a parenthesized C expression as it is written into an index) lies in [LO, HI]."""
        self.ranges[text] = (lo, hi)
        return text

    # -- values ------------------------------------------------------------------------------------------------------
    def value(self, scope, node, index):
        if node.name in self.known:
            return self.known[node.name]
        key = (node.name, index)
        got = scope.get(key)
        if got is not None:
            return got
        if node.name in self.buffers and node.name != self.computing:
            result = self.define(scope, node.ctype, f"{self.buffers[node.name]}[{index}]")
        elif node.kind == "scalar":
            return literal(node.attrs["value"], node.dtype)
        else:
            handler = getattr(self, f"_{node.kind}", None)
            if handler is None:
                raise Unsupported(f"{node.kind} {node.name} read without its buffer")
            result = handler(scope, node, index)
        scope.memo[key] = result
        return result

    def _view(self, scope, node, index):
        base, strides, offset = node.attrs["base"], node.attrs["strides"], node.attrs["offset"]
        terms = [str(offset)] if offset else []
        for d, (size, stride) in enumerate(zip(node.shape, strides)):
            if size != 1 and stride != 0:
                c = coord(index, node.shape, d)
                terms.append(f"{c} * {stride}LL" if stride != 1 else c)
        return self.value(scope, base, self.index(scope, " + ".join(terms) or "0"))

    def _iota(self, scope, node, index):
        start, step = node.attrs["start"], node.attrs["step"]
        return self.define(scope, node.ctype, f"({node.ctype})({start!r} + ({index}) * {step!r})")

    def _constant(self, scope, node, index):
        return self.define(scope, node.ctype, f"c_{node.name}[{index}]")

    def _pointwise(self, scope, node, index):
        op = node.attrs["op"]
        args = [self.value(scope, a, self.index(scope, broadcast_index(index, a.shape, node.shape))) for a in node.args]
        dtypes = [a.dtype for a in node.args]
        tensor_dtypes = [a.dtype for a in node.args if a.kind != "scalar"] or dtypes
        out = node.ctype
        if op == "cast":
            expr = f"(({args[0]}) != 0)" if node.dtype == "bool" else f"({out})({args[0]})"
        elif op == "where":
            expr = f"(({args[0]}) ? ({out})({args[1]}) : ({out})({args[2]}))"
        elif op in COMPARE or op in LOGICAL:
            compute = C_TYPES[promote(*tensor_dtypes)]
            a, b = (f"({compute})({x})" for x in args)
            expr = (
                f"({a} {COMPARE[op]} {b})" if op in COMPARE else f"((bool)({args[0]}) {LOGICAL[op]} (bool)({args[1]}))"
            )
        elif op in BITWISE:
            expr = f"({out})(({args[0]}) {BITWISE[op]} ({args[1]}))"
        elif op in BOOL_UNARY:
            expr = BOOL_UNARY[op].format(x=args[0])
        elif op == "bitwise_not" and node.dtype == "bool":  # C's ~ of a bool is an int, nonzero either way
            expr = f"(!({args[0]}))"
        elif node.dtype not in FLOATS:
            expr = self._integral(op, args, node)
        else:
            cast = [f"({out})({a})" if d != node.dtype else a for a, d in zip(args, dtypes)]
            expr = self._floating(op, cast, node)
        return self.define(scope, out, expr)

    def _integral(self, op, args, node):
        t = node.ctype
        a = [f"({t})({x})" for x in args]
        if op in INTEGRAL_UNARY:
            return INTEGRAL_UNARY[op].format(x=a[0])
        simple = {"add": "+", "sub": "-", "mul": "*"}
        if op in simple:
            return f"({a[0]} {simple[op]} {a[1]})"
        if op == "rsub":
            return f"({a[1]} - {a[0]})"
        if op in ("maximum", "fmax"):
            return f"({a[0]} > {a[1]} ? {a[0]} : {a[1]})"
        if op in ("minimum", "fmin"):
            return f"({a[0]} < {a[1]} ? {a[0]} : {a[1]})"
        if op in ("floor_divide",) or op == "div" and node.attrs.get("mode") == "floor":
            return f"({a[0]} / {a[1]} - ((({a[0]} % {a[1]}) != 0) && ((({a[0]} < 0) != ({a[1]} < 0))) ? 1 : 0))"
        if op == "div":
            return f"({a[0]} / {a[1]})"
        if op in ("remainder",):
            return f"((({a[0]} % {a[1]}) + {a[1]}) % {a[1]})"
        if op == "fmod":
            return f"({a[0]} % {a[1]})"
        raise Unsupported(f"operator {op} on {node.dtype} values")

    def _floating(self, op, args, node):
        if op in ("add", "sub", "mul", "div") and node.attrs.get("mode") in (None, "true"):
            return FLOAT_BINARY[op].format(a=args[0], b=args[1])
        if op == "div" or op == "floor_divide":
            inner = f"({args[0]}) / ({args[1]})"
            return f"floorf({inner})" if node.attrs.get("mode", "floor") == "floor" else f"truncf({inner})"
        if op == "leaky_relu":
            return f"(({args[0]}) > 0.0f ? ({args[0]}) : ({args[1]}) * ({args[0]}))"
        if op == "xlogy":
            return f"(({args[0]}) == 0.0f ? 0.0f : ({args[0]}) * logf({args[1]}))"
        if op == "nextafter":
            return f"nextafterf({args[0]}, {args[1]})"
        if op == "erfinv":
            return self._erfinv(args[0], node.dtype)
        if op in FLOAT_BINARY:
            return FLOAT_BINARY[op].format(a=args[0], b=args[1])
        if op in EXTRA_FLOAT_UNARY:
            return EXTRA_FLOAT_UNARY[op].format(x=args[0])
        if op in FLOAT_UNARY and "{" not in FLOAT_UNARY[op].replace("{x}", ""):
            return FLOAT_UNARY[op].format(x=args[0])
        raise Unsupported(f"operator {op} has no C form in the heuristic")

    def _erfinv(self, x, dtype):
        """CUDA's erfinvf / erfinv; C++ has none: ks_erfinv.h's."""
        if self.device == "cuda":
            return f"erfinvf({x})" if dtype == "float32" else f"erfinv({x})"
        self.headers.add("ks_erfinv.h")
        return f"ks_erfinvf({x})" if dtype == "float32" else f"ks_erfinv({x})"

    def _cat(self, scope, node, index):
        dim, sizes = node.attrs["dim"], node.attrs["sizes"]
        inner = math.prod(node.shape[dim + 1 :])
        c = self.index(scope, coord(index, node.shape, dim) if node.shape[dim] != 1 else "0")
        outer = self.index(scope, f"({index}) / {node.shape[dim] * inner}LL")
        within = self.index(scope, f"({index}) % {inner}LL") if inner > 1 else "0"
        values, start = [], 0
        for part, size in zip(node.args, sizes):
            local = self.bounded(
                f"({c} < {start} ? 0 : ({c} - {start} >= {size} ? {size - 1} : {c} - {start}))", 0, size - 1
            )
            flat = self.index(scope, f"({outer} * {size}LL + {local}) * {inner}LL + {within}")
            values.append((start, self.value(scope, part, flat)))
            start += size
        expr = f"({node.ctype})({values[-1][1]})"
        for begin, value in reversed(values[:-1]):
            end = begin + sizes[[b for b, _ in values].index(begin)]
            expr = f"({c} < {end} ? ({node.ctype})({value}) : {expr})"
        return self.define(scope, node.ctype, expr)

    def _pad(self, scope, node, index):
        x = node.args[0]
        inside, terms = [], []
        strides = contiguous_strides(x.shape)
        for d, before in enumerate(node.attrs["before"]):
            c = coord(index, node.shape, d)
            src = self.index(scope, f"({c} - {before})" if before else c)
            if before or node.shape[d] != x.shape[d]:
                inside.append(f"({src} >= 0 && {src} < {x.shape[d]})")
            clamped = (
                self.bounded(f"({src} < 0 ? 0 : ({src} >= {x.shape[d]} ? {x.shape[d] - 1} : {src}))", 0, x.shape[d] - 1)
                if before or node.shape[d] != x.shape[d]
                else src
            )
            if x.shape[d] != 1:
                terms.append(f"{clamped} * {strides[d]}LL")
        value = self.value(scope, x, self.index(scope, " + ".join(terms) or "0"))
        fill = literal(node.attrs["value"], node.dtype)
        return self.define(scope, node.ctype, f"(({' && '.join(inside) or 'true'}) ? ({node.ctype})({value}) : {fill})")

    def _flip(self, scope, node, index):
        strides = contiguous_strides(node.shape)
        terms = []
        for d, size in enumerate(node.shape):
            if size == 1:
                continue
            c = coord(index, node.shape, d)
            c = f"({size - 1}LL - {c})" if d in node.attrs["dims"] else c
            terms.append(f"{c} * {strides[d]}LL")
        return self.value(scope, node.args[0], self.index(scope, " + ".join(terms) or "0"))

    def _gather(self, scope, node, index):
        if node.attrs["mode"] == "multi":
            return self._gather_multi(scope, node, index)
        x, ids = node.args
        dim = node.attrs["dim"]
        if node.attrs["mode"] == "index":
            count = ids.numel
            post = math.prod(x.shape[dim + 1 :])
            outer = self.index(scope, f"({index}) / {count * post}LL")
            mid = self.index(scope, f"(({index}) / {post}LL) % {count}LL" if count > 1 else "0")
            rest = self.index(scope, f"({index}) % {post}LL") if post > 1 else "0"
            raw = self.value(scope, ids, mid)
            id_ = self.define(
                scope, "int64_t", f"((int64_t)({raw}) < 0 ? (int64_t)({raw}) + {x.shape[dim]}LL : (int64_t)({raw}))"
            )
            self.bounded(id_, 0, x.shape[dim] - 1)  # an index torch accepts
            flat = self.index(scope, f"({outer} * {x.shape[dim]}LL + {id_}) * {post}LL + {rest}")
            return self.value(scope, x, flat)
        raw = self.value(scope, ids, self.index(scope, broadcast_index(index, ids.shape, node.shape)))
        strides = contiguous_strides(x.shape)
        terms = []
        for d in range(len(node.shape)):
            c = (
                f"((int64_t)({raw}) < 0 ? (int64_t)({raw}) + {x.shape[d]}LL : (int64_t)({raw}))"
                if d == dim
                else coord(index, node.shape, d)
            )
            terms.append(f"{c} * {strides[d]}LL")
        return self.value(scope, x, self.index(scope, " + ".join(terms)))

    def _gather_multi(self, scope, node, index):
        """x[..., i1, ..., ik, ...] with several index tensors (multi_index)."""
        x = node.args[0]
        coords, _ = self.multi_index(scope, x.shape, node.attrs["dims"], node.args[1:], node.shape, index)
        terms = [f"{c} * {s}LL" for c, s in zip(coords, contiguous_strides(x.shape))]
        return self.value(scope, x, self.index(scope, " + ".join(terms)))

    def multi_index(self, scope, x_shape, dims, ids, shape, index):
        """(x's coordinates, [(raw id, wrapped id, dim) of each indexed dim]) of element INDEX of x[..., i1, ..., ik,
        ...] (of SHAPE) for x of X_SHAPE indexed at DIMS by IDS: the index tensors broadcast to one shape P, whose
        positions take the indexed dims' place in SHAPE (adjacent indexed dims), or lead it (dims apart), as in torch;
        a negative id counts from the end of its dim."""
        rank = max(len(i.shape) for i in ids)
        first = dims[0] if dims == list(range(dims[0], dims[0] + len(dims))) else 0
        picked = list(shape[first : first + rank])
        strides = contiguous_strides(picked)
        terms = [f"{coord(index, shape, first + k)} * {strides[k]}LL" for k in range(rank) if picked[k] != 1]
        position = self.index(scope, " + ".join(terms) or "0")
        rest = iter(d for d in range(len(shape)) if not first <= d < first + rank)
        coords, picks = [], []
        for d, size in enumerate(x_shape):
            if d in dims:
                ids_d = ids[dims.index(d)]
                raw = self.value(scope, ids_d, self.index(scope, broadcast_index(position, ids_d.shape, picked)))
                c = self.define(
                    scope, "int64_t", f"((int64_t)({raw}) < 0 ? (int64_t)({raw}) + {size}LL : (int64_t)({raw}))"
                )
                self.bounded(c, 0, size - 1)  # an index torch accepts: the coordinates' divisions simplify
                picks.append((raw, c, d))
            else:
                c = coord(index, shape, next(rest))
            coords.append(c)
        return coords, picks

    def _row(self, scope, node, index):
        """(row length, the operand's strides, the index of its row's first element) for NODE of the topk family at
        INDEX: its operand's row along attrs["dim"], the other coordinates NODE's own."""
        x, dim = node.args[0], node.attrs["dim"]
        strides = contiguous_strides(x.shape)
        terms = [
            f"{coord(index, node.shape, d)} * {strides[d]}LL"
            for d in range(len(x.shape))
            if d != dim and x.shape[d] > 1
        ]
        return x.shape[dim], strides, self.index(scope, " + ".join(terms) or "0")

    def _topk(self, scope, node, index):
        """Element j of a row of topk: on the CPU by _topk_buffer, else j + 1 passes over the row, each taking the best
        element after the last one taken in the order (value, then the lower index first): no storage."""
        if node.attrs.get("select"):
            return self._median(scope, node, index)
        x = node.args[0]
        dim = node.attrs["dim"]
        n, strides, base = self._row(scope, node, index)
        j = self.index(scope, coord(index, node.shape, dim))
        if self.device == "cpu" and node.attrs["k"] <= TOPK_BUFFER:
            return self._topk_buffer(scope, node, n, strides, base, j)
        pv, pi, bv, bi, t, r = (self.fresh(p) for p in ("pv", "pi", "bv", "bi", "t", "r"))
        scope.lines.append(f"{x.ctype} {pv} = 0; int64_t {pi} = -1;")
        inner = Scope(scope)
        v = self.value(
            inner, x, self.index(inner, f"{base} + {r} * {strides[dim]}LL" if strides[dim] != 1 else f"{base} + {r}")
        )
        if x.dtype in FLOATS:  # NaN is the largest value, as in torch's topk, and equal to itself

            def above(a, b):
                return f"({a} != {a} ? {b} == {b} : {a} > {b})"

            def same(a, b):
                return f"({a} == {b} || ({a} != {a} && {b} != {b}))"
        else:

            def above(a, b):
                return f"({a} > {b})"

            def same(a, b):
                return f"({a} == {b})"

        def before(a, b):  # A comes first in the topk's order
            return above(a, b) if node.attrs["largest"] else above(b, a)

        inner.lines.append(
            f"if (({pi} < 0 || {before(pv, v)} || ({same(v, pv)} && {r} > {pi})) && "
            f"({bi} < 0 || {before(v, bv)} || ({same(v, bv)} && {r} < {bi}))) {{ {bv} = {v}; {bi} = {r}; }}"
        )
        scope.lines.append(f"for (int64_t {t} = 0; {t} <= {j}; ++{t}) {{")
        scope.lines.append(f"    {x.ctype} {bv} = 0; int64_t {bi} = -1;")
        scope.lines.append(f"    for (int64_t {r} = 0; {r} < {n}LL; ++{r}) {{")
        scope.lines += ["        " + line for line in inner.lines]
        scope.lines.append("    }")
        scope.lines.append(f"    {pv} = {bv}; {pi} = {bi};")
        scope.lines.append("}")
        return self.define(scope, node.ctype, pv if node.attrs["want"] == "values" else pi)

    def _topk_buffer(self, scope, node, n, strides, base, j):
        """Element J of a row of topk on the CPU: one pass over the row keeping its best j + 1 elements in order, in
        a buffer of k (an element enters where it beats the last kept, which is seldom after the first few). NaN is
        the largest, as in torch's topk; equal values keep the lower index first."""
        x, dim = node.args[0], node.attrs["dim"]
        bv, bi, kept, r, at = (self.fresh(p) for p in ("bv", "bi", "kept", "r", "at"))
        inner = Scope(scope)
        v = self.value(
            inner, x, self.index(inner, f"{base} + {r} * {strides[dim]}LL" if strides[dim] != 1 else f"{base} + {r}")
        )

        def beats(b):  # V, later in the row than B's element, comes before it
            if node.attrs["largest"]:
                return f"({v} != {v} ? {b} == {b} : {v} > {b})"
            return f"({v} == {v} && ({b} != {b} || {v} < {b}))"

        k = node.attrs["k"]
        scope.lines.append(f"{x.ctype} {bv}[{k}]; int64_t {bi}[{k}]; int64_t {kept} = 0;")
        scope.lines.append(f"for (int64_t {r} = 0; {r} < {n}LL; ++{r}) {{")
        scope.lines += ["    " + line for line in inner.lines]
        scope.lines.append(f"    if ({kept} <= {j} || {beats(f'{bv}[{j}]')}) {{")
        scope.lines.append(f"        int64_t {at} = {kept} <= {j} ? {kept}++ : {j};")
        scope.lines.append(
            f"        for (; {at} > 0 && {beats(f'{bv}[{at} - 1]')}; --{at}) "
            f"{{ {bv}[{at}] = {bv}[{at} - 1]; {bi}[{at}] = {bi}[{at} - 1]; }}"
        )
        scope.lines.append(f"        {bv}[{at}] = {v}; {bi}[{at}] = {r};")
        scope.lines.append("    }")
        scope.lines.append("}")
        return self.define(scope, node.ctype, f"{bv}[{j}]" if node.attrs["want"] == "values" else f"{bi}[{j}]")

    def _median(self, scope, node, index):
        """torch.median / nanmedian of a row (NODE keeps the reduced dim, size 1): the element of rank (n - 1) / 2 in
        the order (value, then the lower index first), found by counting each candidate's smaller elements (n^2 reads
        of the row, no storage). median: a row holding NaN gives NaN at its first NaN. nanmedian: NaNs are left out,
        and an all-NaN row gives NaN at index (n - 1) / 2, as torch does."""
        x = node.args[0]
        dim, nan_skips = node.attrs["dim"], node.attrs["select"] == "nanmedian"
        n, strides, base = self._row(scope, node, index)

        def at(inner, r):
            offset = f"{r} * {strides[dim]}LL" if strides[dim] != 1 else r
            return self.value(inner, x, self.index(inner, f"{base} + {offset}"))

        valid, first_nan, rv, ri, i, m, count = (
            self.fresh(p) for p in ("valid", "first_nan", "rv", "ri", "i", "m", "count")
        )
        scope.lines.append(f"int64_t {valid} = 0, {first_nan} = -1;")
        scan = Scope(scope)
        v = at(scan, i)
        scan.lines.append(f"if ({v} != {v}) {{ if ({first_nan} < 0) {first_nan} = {i}; }} else {{ ++{valid}; }}")
        scope.lines.append(f"for (int64_t {i} = 0; {i} < {n}LL; ++{i}) {{")
        scope.lines += ["    " + line for line in scan.lines]
        scope.lines.append("}")
        scope.lines.append(f"{x.ctype} {rv} = ({x.ctype})NAN; int64_t {ri} = {(n - 1) // 2}LL;")
        nan_wins = "false" if nan_skips else f"{first_nan} >= 0"
        scope.lines.append(f"if ({nan_wins}) {{ {ri} = {first_nan}; }} else if ({valid} > 0) {{")
        outer = Scope(scope)
        vi = at(outer, i)
        inner = Scope(outer)
        vm = at(inner, m)
        inner.lines.append(f"if ({vm} == {vm} && ({vm} < {vi} || ({vm} == {vi} && {m} < {i}))) ++{count};")
        scope.lines.append(f"    for (int64_t {i} = 0; {i} < {n}LL; ++{i}) {{")
        scope.lines += ["        " + line for line in outer.lines]
        scope.lines.append(f"        if ({vi} != {vi}) continue;")
        scope.lines.append(f"        int64_t {count} = 0;")
        scope.lines.append(f"        for (int64_t {m} = 0; {m} < {n}LL; ++{m}) {{")
        scope.lines += ["            " + line for line in inner.lines]
        scope.lines.append("        }")
        scope.lines.append(f"        if ({count} == ({valid} - 1) / 2) {{ {rv} = {vi}; {ri} = {i}; break; }}")
        scope.lines.append("    }")
        scope.lines.append("}")
        return self.define(scope, node.ctype, rv if node.attrs["want"] == "values" else ri)

    # -- loops -------------------------------------------------------------------------------------------------------
    def accumulator(self, node):
        """(C type, initial value, update of acc by v, final expression) of a reduction."""
        op = node.attrs["op"]
        src = node.args[0]
        if op in ("argmax", "argmin"):
            return "int64_t", "0", None, "{acc}"
        t = src.ctype if op in ("max", "min") else node.ctype
        if op in ("sum", "mean", "prod") and node.dtype == "float32" and self.double:
            t = "double"
        if op in ("any", "all"):
            t = "bool"
        init = {
            "sum": "0",
            "mean": "0",
            "prod": "1",
            "any": "false",
            "all": "true",
            "max": "(-INFINITY)" if src.dtype in FLOATS else f"std::numeric_limits<{t}>::lowest()",
            "min": "INFINITY" if src.dtype in FLOATS else f"std::numeric_limits<{t}>::max()",
        }[op]
        if self.device == "cuda" and init.startswith("std::"):
            init = {
                "int64_t": "(-9223372036854775807LL - 1)" if op == "max" else "9223372036854775807LL",
                "int32_t": "(-2147483647 - 1)" if op == "max" else "2147483647",
            }.get(t, "0")
        update = {
            "sum": "{acc} += ({t}){v};",
            "mean": "{acc} += ({t}){v};",
            "prod": "{acc} *= ({t}){v};",
            "any": "{acc} = {acc} || (bool){v};",
            "all": "{acc} = {acc} && (bool){v};",
            "max": "{acc} = {v} > {acc} ? {v} : {acc};",
            "min": "{acc} = {v} < {acc} ? {v} : {acc};",
        }[op].replace("{t}", t)
        count = math.prod(src.shape[d] for d in node.attrs["dims"])
        final = f"({node.ctype})({{acc}} / {count}.0)" if op == "mean" else f"({node.ctype}){{acc}}"
        return t, init, update, final

    def row(self, scope, src, dims, shape, index):
        """(count, element): the length of the row of SRC over DIMS that element INDEX of the reduction's result (of
        SHAPE, the reduced dims kept as 1) reduces, and element(inner scope, r), the value of its element r."""
        strides = contiguous_strides(src.shape)
        kept = [d for d in range(len(src.shape)) if d not in dims]
        base_terms = [f"{coord(index, shape, d)} * {strides[d]}LL" for d in kept if src.shape[d] != 1]
        base = self.index(scope, " + ".join(base_terms) or "0")
        reduced = [src.shape[d] for d in dims]

        def element(inner, r):
            offset_terms = []
            for i, d in enumerate(dims):
                c = coord(r, reduced, i)
                offset_terms.append(f"{c} * {strides[d]}LL" if strides[d] != 1 else c)
            return self.value(inner, src, self.index(inner, f"{base} + " + " + ".join(offset_terms)))

        return math.prod(reduced), element

    def reduce_loop(self, scope, node, index, start="0", step="1"):
        """Lines computing the reduction NODE at INDEX into a fresh `acc` variable (returned); the loop over the
        reduced elements runs r = START, START + STEP, ... (threads of a block share one row on CUDA)."""
        src = node.args[0]
        count, element = self.row(scope, src, node.attrs["dims"], node.shape, index)
        t, init, update, final = self.accumulator(node)
        acc = self.fresh("acc")
        r = self.bounded(self.fresh("r"), 0, count - 1)
        arg = node.attrs["op"] in ("argmax", "argmin")
        if arg:
            best = self.fresh("best")
            cmp = ">" if node.attrs["op"] == "argmax" else "<"
            scope.lines.append(
                f"{src.ctype} {best} = {literal(-math.inf if cmp == '>' else math.inf, src.dtype) if src.dtype in FLOATS else '0'}; int64_t {acc} = -1;"
            )
        else:
            scope.lines.append(f"{t} {acc} = {init};")
        inner = Scope(scope)
        v = element(inner, r)
        if arg:
            inner.lines.append(f"if ({acc} < 0 || {v} {cmp} {best}) {{ {best} = {v}; {acc} = {r}; }}")
        else:
            inner.lines.append(update.format(acc=acc, v=v))
        op = node.attrs["op"]
        simd = self.device == "cpu" and op in SIMD_REDUCTIONS and start == "0"
        if op in ("max", "min") and src.dtype in FLOATS and not simd:
            # torch's max and min propagate NaN, which a bare comparison drops (the SIMD loop flags it instead)
            inner.lines[-1] = f"{acc} = {v} {'>' if op == 'max' else '<'} {acc} || {v} != {v} ? {v} : {acc};"
        if simd:
            # The row as SIMD lanes reduced at the end (C++ keeps a float max or a double sum in order otherwise);
            # a float max or min keeps torch's NaN, which a comparison would drop, in a flag beside it.
            clauses = f"reduction({SIMD_REDUCTIONS[op]}:{acc})"
            if op in ("max", "min") and src.dtype in FLOATS:
                nan = self.fresh("nan")
                scope.lines.append(f"int {nan} = 0;")
                inner.lines.append(f"{nan} |= {v} != {v};")
                clauses += f" reduction(|:{nan})"
                final = f"({nan} ? ({node.ctype})NAN : {final})"
            scope.lines.append(f"#pragma omp simd {clauses}")
        scope.lines.append(f"for (int64_t {r} = {start}; {r} < {count}LL; {r} += {step}) {{")
        scope.lines += ["    " + line for line in inner.lines]
        scope.lines.append("}")
        return acc, t, final.format(acc=acc)

    def _reduce(self, scope, node, index):
        _, _, final = self.reduce_loop(scope, node, index)
        return self.define(scope, node.ctype, final)

    def _pool(self, scope, node, index):
        x = node.args[0]
        mode = node.attrs["mode"]
        dims = len(node.attrs.get("kernel") or node.attrs["out"])
        ins, outs = x.shape[-dims:], node.shape[-dims:]
        lead = self.index(scope, f"({index}) / {math.prod(outs)}LL")
        base = self.index(scope, f"{lead} * {math.prod(ins)}LL")
        in_strides = contiguous_strides(ins)
        acc, count = self.fresh("acc"), self.fresh("count")
        is_max = mode in ("max", "adaptive_max")
        scope.lines.append(
            f"{'float' if x.dtype == 'float32' else x.ctype} {acc} = "
            f"{'(-INFINITY)' if is_max else '0'}; int64_t {count} = 0; (void){count};"
        )
        divisor_terms = []
        loops, closers, positions = [], [], []
        for d in range(dims):
            o = self.index(scope, coord(index, node.shape, len(node.shape) - dims + d))
            w = self.fresh("w")
            p = self.fresh("p")
            if mode.startswith("adaptive"):
                lo = self.define(scope, "int64_t", f"({o} * {ins[d]}LL) / {outs[d]}LL", "s")
                hi = self.define(scope, "int64_t", f"(({o} + 1) * {ins[d]}LL + {outs[d] - 1}LL) / {outs[d]}LL", "e")
                loops.append(f"for (int64_t {p} = {lo}; {p} < {hi}; ++{p}) {{")
                divisor_terms.append(f"({hi} - {lo})")
            else:
                k, s, pad, dil = (node.attrs[a][d] for a in ("kernel", "stride", "padding", "dilation"))
                start = self.define(scope, "int64_t", f"{o} * {s}LL - {pad}LL", "s")
                if mode == "avg":
                    end = self.define(
                        scope,
                        "int64_t",
                        f"({start} + {k}LL < {ins[d] + pad}LL ? {start} + {k}LL : {ins[d] + pad}LL)",
                        "e",
                    )
                    divisor_terms.append(f"({end} - {start})")
                loops.append(
                    f"for (int64_t {w} = 0; {w} < {k}; ++{w}) {{ const int64_t {p} = {start} + {w} * "
                    f"{dil}LL; if ({p} < 0 || {p} >= {ins[d]}LL) continue;"
                )
            closers.append("}")
            positions.append(p)
        inner = Scope(scope)
        flat = self.index(inner, f"{base} + " + " + ".join(f"{p} * {st}LL" for p, st in zip(positions, in_strides)))
        v = self.value(inner, x, flat)
        # a max pool keeps NaN as torch's does: once taken, no comparison replaces it
        inner.lines.append(
            f"{acc} = {v} > {acc} || {v} != {v} ? {v} : {acc};" if is_max else f"{acc} += {v}; ++{count};"
        )
        scope.lines += loops + ["    " + line for line in inner.lines] + closers
        if is_max:
            return self.define(scope, node.ctype, f"({node.ctype}){acc}")
        divisor = node.attrs.get("divisor")
        if divisor:
            denominator = f"{float(divisor)!r}"
        elif mode == "avg" and node.attrs.get("count_include_pad", True):
            denominator = " * ".join(divisor_terms)
        else:
            denominator = count
        return self.define(scope, node.ctype, f"({node.ctype})({acc} / (double)({denominator}))")
