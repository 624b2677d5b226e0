"""Captured ATen graph (capture.py's JSON) -> the planner's graph (ir.py): each ATen operator as nodes it can fuse.

Views become index maps computed on meta tensors (torch's own view rules, strides and offset included), so a
chain of views collapses into one map onto the tensor below it; an operator without a lowering is Unsupported by
name.
"""

import math

import torch

from agent.heuristic.dag import rnn, scatter, sort
from agent.heuristic.dag.ir import C_TYPES, FLOATS, Graph, T, contiguous_strides, promote
from agent.heuristic.errors import Unsupported

UNARY_FLOAT = {
    "relu",
    "sigmoid",
    "tanh",
    "exp",
    "log",
    "abs",
    "neg",
    "sqrt",
    "rsqrt",
    "sin",
    "cos",
    "reciprocal",
    "acos",
    "asin",
    "atan",
    "asinh",
    "atanh",
    "sinh",
    "cosh",
    "tan",
    "ceil",
    "floor",
    "round",
    "trunc",
    "erf",
    "erfc",
    "erfinv",
    "exp2",
    "expm1",
    "log2",
    "log10",
    "log1p",
    "lgamma",
    "sign",
    "sgn",
    "sinc",
    "square",
    "logical_not",
    "bitwise_not",
    "isnan",
    "isinf",
    "isfinite",
    "signbit",
    "frac",
    "acosh",
    "i0",
    "relu6",
    "silu",
    "mish",
    "logsigmoid",
    "softsign",
}
BINARY = {
    "add",
    "sub",
    "mul",
    "div",
    "maximum",
    "minimum",
    "pow",
    "atan2",
    "hypot",
    "copysign",
    "fmax",
    "fmin",
    "fmod",
    "remainder",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "logical_and",
    "logical_or",
    "logical_xor",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "floor_divide",
    "rsub",
    "xlogy",
    "logaddexp",
    "logaddexp2",
    "nextafter",
    "ldexp",
}
COMPARISONS = {
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "logical_and",
    "logical_or",
    "logical_xor",
    "isnan",
    "isinf",
    "isfinite",
    "signbit",
    "logical_not",
}
VIEWS = {
    "view",
    "_unsafe_view",
    "reshape",
    "permute",
    "expand",
    "slice",
    "select",
    "unsqueeze",
    "squeeze",
    "t",
    "transpose",
    "alias",
    "as_strided",
    "diagonal",
    "unfold",
    "expand_as",
    "view_as",
    "movedim",
    "swapaxes",
    "flatten",
    "unflatten",
}
IDENTITIES = {"clone", "contiguous", "lift_fresh_copy", "detach", "_assert_tensor_metadata", "dropout_identity"}
REDUCTIONS = {
    "sum": "sum",
    "mean": "mean",
    "amax": "max",
    "amin": "min",
    "prod": "prod",
    "any": "any",
    "all": "all",
    "max": "max",
    "min": "min",
    "argmax": "argmax",
    "argmin": "argmin",
    "nansum": "sum",
}
# The attention kernel keeps a query row and its accumulator in one thread's registers: wider heads go to GEMMs.
WIDEST_HEAD = 128
SCANS = {"cumsum": "sum", "cumprod": "prod", "logcumsumexp": "logsumexp", "cummax": "max", "cummin": "min"}


def _split(target):
    """'aten.add.Tensor' -> ('add', 'Tensor'); 'getitem' -> ('getitem', '')."""
    parts = target.split(".")
    if parts[0] == "aten" and len(parts) >= 2:
        return parts[1], ".".join(parts[2:])
    return target, ""


def _dims(dims, rank):
    if dims is None or dims == []:
        return list(range(rank))
    dims = [dims] if isinstance(dims, int) else list(dims)
    return sorted({d % max(rank, 1) for d in dims})


def _as_view(fn, source, args):
    """fn(source, *args) as a view of SOURCE's storage, else RuntimeError: reshape and flatten copy, without an error,
    what their strides cannot express (a reshape after a transpose), and a copy's strides map nothing onto the base."""
    out = fn(source, *args)
    if out.untyped_storage()._cdata != source.untyped_storage()._cdata:
        raise RuntimeError(f"{fn} copies a tensor of strides {list(source.stride())}")
    return out


class Lowering:
    def __init__(self, graph_json):
        self.json = graph_json
        self.values = {}  # aten node name -> T or tuple of T
        self.nodes = []
        self.count = 0

    # -- node construction -----------------------------------------------------------------------------------------
    def add(self, kind, shape, dtype, args=(), **attrs):
        node = T(f"n{self.count}", kind, [int(d) for d in shape], dtype, list(args), attrs)
        self.count += 1
        self.nodes.append(node)
        return node

    def scalar(self, value, dtype=None):
        if isinstance(value, bool):
            dtype = dtype or "bool"
        elif isinstance(value, int):
            dtype = dtype or "int64"
        else:
            dtype = dtype or "float32"
        return self.add("scalar", [], dtype, value=value)

    def arg(self, value):
        """A node for an argument: a traced tensor, or a number (a scalar node)."""
        if isinstance(value, dict) and "node" in value:
            got = self.values.get(value["node"])
            if got is None:
                raise Unsupported(f"the value {value['node']} is used before it is computed")
            if isinstance(got, tuple):
                raise Unsupported(f"the tuple {value['node']} used as one tensor")
            return got
        if isinstance(value, (int, float, bool)):
            return self.scalar(value)
        raise Unsupported(f"an argument {value!r} that is neither a tensor nor a number")

    def pointwise(self, op, args, dtype, **attrs):
        shape = torch.broadcast_shapes(*[torch.Size(a.shape) for a in args])
        return self.add("pointwise", list(shape), dtype, args, op=op, **attrs)

    def cast(self, x, dtype):
        return x if x.dtype == dtype else self.add("pointwise", x.shape, dtype, [x], op="cast")

    def fresh(self, value):
        """VALUE (an op's result, or a tuple of them) with each view node copied and marked "fresh": in eager PyTorch the
        op returns a tensor of its own (an RNN's output, which the lowering reads as a transpose of its time-major
        state), so its storage, to which as_strided's strides refer, is its own row-major layout, not the base's."""
        if isinstance(value, tuple):
            return tuple(self.fresh(v) for v in value)
        if not isinstance(value, T) or value.kind != "view" or value.attrs.get("fresh"):
            return value
        a = value.attrs
        return self.add(
            "view",
            value.shape,
            value.dtype,
            [a["base"]],
            base=a["base"],
            strides=a["strides"],
            offset=a["offset"],
            fresh=True,
        )

    def eager_map(self, x):
        """(root, strides, offset): X as a strided map of the storage eager PyTorch gives it, ROOT's row-major layout:
        a fresh view or a computed node."""
        if x.kind != "view" or x.attrs.get("fresh"):
            return x, contiguous_strides(x.shape), 0
        if "eager" in x.attrs:
            return x.attrs["eager"]
        return x.attrs["base"], x.attrs["strides"], x.attrs["offset"]

    def view(self, x, op, *args):
        """A view op of x (torch's semantics on a meta tensor), composed with x's own map when x is a view."""
        root, eager_strides, eager_offset = self.eager_map(x)
        if op[0] == "as_strided" and root.kind == "view":
            # as_strided's strides refer to eager's storage, which is not what the fresh root reads (a transpose of
            # an RNN's state): the root is written out in its own row-major layout, and X read from that copy.
            copy = self.add("pointwise", root.shape, root.dtype, [root], op="cast")
            x = self.add("view", x.shape, x.dtype, [copy], base=copy, strides=eager_strides, offset=eager_offset)
            root = copy
        base, strides, offset = (
            (x.attrs["base"], x.attrs["strides"], x.attrs["offset"])
            if x.kind == "view"
            else (x, contiguous_strides(x.shape), 0)
        )
        fn = getattr(torch.ops.aten, op[0]).default if op[1] == "" else getattr(getattr(torch.ops.aten, op[0]), op[1])
        source = torch.empty(base.numel, device="meta").as_strided(x.shape, strides, offset)
        try:
            out = _as_view(fn, source, args)
        except RuntimeError:  # not expressible as strides of the base (a view after a permute): map onto x itself
            base, strides, offset = x, contiguous_strides(x.shape), 0
            out = fn(torch.empty(x.shape, device="meta"), *args)
            if op[0] in ("view", "_unsafe_view", "reshape"):
                out = torch.empty(out.shape, device="meta")  # a reshape keeps the row-major order
        shape = list(out.shape)
        eager = {}
        if root.kind == "view" and root is not base:  # a view of a fresh root: its map of eager's storage too
            source = torch.empty(root.numel, device="meta").as_strided(x.shape, eager_strides, eager_offset)
            try:
                mapped = _as_view(fn, source, args)
                eager = {"eager": (root, list(mapped.stride()), int(mapped.storage_offset()))}
            except RuntimeError:
                eager = {}
        if (
            not eager
            and math.prod(shape) == base.numel
            and list(out.stride()) == contiguous_strides(shape)
            and out.storage_offset() == 0
            and shape == base.shape
        ):
            return base
        return self.add(
            "view",
            shape,
            x.dtype,
            [base],
            base=base,
            strides=list(out.stride()),
            offset=int(out.storage_offset()),
            **eager,
        )

    # -- the graph -------------------------------------------------------------------------------------------------
    def run(self):
        for node in self.json["nodes"]:
            outs = [o for o in node.get("outs") or [] if o and len(o) == 2 and isinstance(o[1], str)]
            dtypes = [node["dtype"]] if "dtype" in node else [dtype for _, dtype in outs]
            unknown = next((d for d in dtypes if d not in C_TYPES), None)
            if unknown is not None:  # a half-precision model: kernels of its type are not written (yet)
                where = f"operator {node['target']}" if node.get("op") == "call_function" else node["name"]
                raise Unsupported(f"{unknown} values ({where}): the kernels compute in {', '.join(C_TYPES)}")
            if node["op"] == "placeholder":
                self.values[node["name"]] = self.placeholder(node)
            elif node["op"] == "call_function":
                try:
                    value = self.call(node)
                    name = _split(node["target"])[0]
                    if name not in VIEWS and name not in IDENTITIES and name != "getitem":
                        value = self.fresh(value)
                    self.values[node["name"]] = value
                except Unsupported:
                    raise
                except Exception as exc:  # noqa: BLE001 -- a malformed use of a known op, reported by name
                    raise Unsupported(
                        f"operator {node['target']} ({node['name']}): {type(exc).__name__}: {exc}"
                    ) from None
            elif node["op"] == "get_attr":
                raise Unsupported(f"a module attribute read in forward ({node.get('target')})")
        outputs = []
        for out in self.json["outputs"]:
            value = self.values[out["node"]]
            if isinstance(value, tuple):
                raise Unsupported("an output that is a tuple")
            outputs.append((value, out["kind"], out["target"]))
        if sum(kind == "user_output" for _, kind, _ in outputs) != 1:
            raise Unsupported("Model returns several tensors; the heuristic writes single-output kernels")
        return Graph(self.nodes, outputs, {int(k): v for k, v in self.json.get("scalars", {}).items()})

    def placeholder(self, node):
        kind = node.get("kind", "input")
        if "shape" not in node:
            return None  # a number given to forward: the graph is specialized to it
        if kind == "constant":
            values = node["values"]
            if len(set(values)) == 1:
                return self.cast(self.scalar_broadcast(values[0], node["shape"], node["dtype"]), node["dtype"])
            return self.add("constant", node["shape"], node["dtype"], values=values, ref=node["ref"])
        return self.add(kind, node["shape"], node["dtype"], ref=node["ref"])

    def scalar_broadcast(self, value, shape, dtype):
        s = self.scalar(value, dtype)
        return s if not shape else self.add("view", shape, dtype, [s], base=s, strides=[0] * len(shape), offset=0)

    def call(self, node):
        name, overload = _split(node["target"])
        args, kw = node["args"], node.get("kwargs") or {}
        if name == "getitem":
            value = self.values[args[0]["node"]]
            if not isinstance(value, tuple):
                raise Unsupported(f"getitem of {args[0]['node']}")
            if value[args[1]] is None:
                raise Unsupported(f"output {args[1]} of {args[0]['node']} (indices of a pool)")
            return value[args[1]]
        handler = getattr(self, f"op_{name}", None)
        if handler is not None:
            return handler(node, args, kw, overload)
        dtype = node.get("dtype")
        if name in IDENTITIES:
            return self.arg(args[0])
        if name in VIEWS:
            x = self.arg(args[0])
            if x.kind == "scalar":
                raise Unsupported(f"operator {name} of a number")
            return self.view(x, (name, overload), *args[1:])
        if name in UNARY_FLOAT:
            x = self.arg(args[0])
            return self.pointwise(name, [x], dtype)
        if name in BINARY:
            a, b = self.arg(args[0]), self.arg(args[1])
            extra = {}
            if "alpha" in kw and kw["alpha"] != 1:
                b = self.pointwise(
                    "mul",
                    [b, self.scalar(kw["alpha"])],
                    promote(b.dtype, "float32") if isinstance(kw["alpha"], float) else b.dtype,
                )
            if name == "div" and kw.get("rounding_mode"):
                extra["mode"] = kw["rounding_mode"]
            return self.pointwise(name, [a, b], dtype, **extra)
        if name in REDUCTIONS:
            return self.reduction(node, REDUCTIONS[name], args, kw, overload)
        if name in SCANS:
            return self.scan(node, SCANS[name], args, kw)
        raise Unsupported(f"operator {node['target']} ({node['name']}) has no kernel family in the heuristic")

    # -- operators ---------------------------------------------------------------------------------------------------
    def op__to_copy(self, node, args, kw, overload):
        return self.cast(self.arg(args[0]), node["dtype"])

    def op_to(self, node, args, kw, overload):
        return self.cast(self.arg(args[0]), node["dtype"])

    def op_type_as(self, node, args, kw, overload):
        return self.cast(self.arg(args[0]), node["dtype"])

    def op_clamp(self, node, args, kw, overload):
        x = self.arg(args[0])
        lo = args[1] if len(args) > 1 else kw.get("min")
        hi = args[2] if len(args) > 2 else kw.get("max")
        if lo is not None:
            x = self.pointwise("maximum", [x, self.arg(lo)], node["dtype"])
        if hi is not None:
            x = self.pointwise("minimum", [x, self.arg(hi)], node["dtype"])
        return self.cast(x, node["dtype"])

    op_clamp_min = op_clamp

    def op_clamp_max(self, node, args, kw, overload):
        return self.pointwise("minimum", [self.arg(args[0]), self.arg(args[1])], node["dtype"])

    def op_where(self, node, args, kw, overload):
        return self.pointwise("where", [self.arg(a) for a in args[:3]], node["dtype"])

    def op_pow(self, node, args, kw, overload):
        base, exponent = args[0], args[1]
        if isinstance(exponent, (int, float)) and exponent == 2:
            x = self.arg(base)
            return self.pointwise("mul", [x, x], node["dtype"])
        if isinstance(exponent, (int, float)) and exponent == 0.5:
            return self.pointwise("sqrt", [self.arg(base)], node["dtype"])
        return self.pointwise("pow", [self.arg(base), self.arg(exponent)], node["dtype"])

    def op_leaky_relu(self, node, args, kw, overload):
        x = self.arg(args[0])
        slope = args[1] if len(args) > 1 else 0.01
        return self.pointwise("leaky_relu", [x, self.scalar(slope)], node["dtype"])

    def op_full(self, node, args, kw, overload):
        return self.scalar_broadcast(args[1], node["shape"], node["dtype"])

    def op_full_like(self, node, args, kw, overload):
        return self.scalar_broadcast(args[1], node["shape"], node["dtype"])

    def op_scalar_tensor(self, node, args, kw, overload):
        return self.scalar(args[0], node["dtype"])

    def op_zeros(self, node, args, kw, overload):
        return self.scalar_broadcast(0, node["shape"], node["dtype"])

    op_zeros_like = op_new_zeros = op_zeros

    def op_ones(self, node, args, kw, overload):
        return self.scalar_broadcast(1, node["shape"], node["dtype"])

    op_ones_like = op_new_ones = op_ones

    def op_arange(self, node, args, kw, overload):
        numbers = [a for a in args if isinstance(a, (int, float))]
        start, step = (0, 1) if len(numbers) == 1 else (numbers[0], numbers[2] if len(numbers) > 2 else 1)
        return self.add("iota", node["shape"], node["dtype"], start=start, step=step)

    def op_cat(self, node, args, kw, overload):
        parts = [self.arg(a) for a in args[0]]
        dim = args[1] if len(args) > 1 else kw.get("dim", 0)
        rank = len(node["shape"])
        parts = [self.cast(p, node["dtype"]) for p in parts if p.numel > 0 or len(p.shape) == rank]
        parts = [p for p in parts if p.numel > 0]
        return self.add(
            "cat", node["shape"], node["dtype"], parts, dim=dim % rank, sizes=[p.shape[dim % rank] for p in parts]
        )

    def op_empty(self, node, args, kw, overload):
        # Uninitialized memory: what a program may read of it is undefined; decompositions (circular padding)
        # overwrite every element before reading.
        return self.scalar_broadcast(0, node["shape"], node["dtype"])

    op_empty_like = op_new_empty = op_empty_strided = op_empty

    def op_copy(self, node, args, kw, overload):
        """aten.copy(dst, src): SRC's values, broadcast to DST's shape, in DST's dtype (the functional copy_)."""
        dst, src = self.arg(args[0]), self.arg(args[1])
        if list(src.shape) != list(dst.shape):
            src = self.view(src, ("expand", "default"), list(dst.shape))
        return self.cast(src, dst.dtype)

    def scatter_along(self, node, x, part, dim, start, end):
        """X with [start, end) of dim DIM replaced by PART: a cat of what is kept and PART."""
        dim %= len(x.shape)
        start, end = max(0, min(start, x.shape[dim])), max(0, min(end, x.shape[dim]))
        parts = [
            self.view(x, ("slice", "Tensor"), dim, 0, start) if start > 0 else None,
            self.cast(part, node["dtype"]),
            self.view(x, ("slice", "Tensor"), dim, end, x.shape[dim]) if end < x.shape[dim] else None,
        ]
        parts = [self.cast(p, node["dtype"]) for p in parts if p is not None and p.numel > 0]
        if len(parts) == 1:
            return parts[0]
        return self.add("cat", node["shape"], node["dtype"], parts, dim=dim, sizes=[p.shape[dim] for p in parts])

    def op_slice_scatter(self, node, args, kw, overload):
        x, src = self.arg(args[0]), self.arg(args[1])
        dim, start, end, step = (list(args[2:]) + [None] * 4)[:4]
        dim = kw.get("dim", 0) if dim is None else dim
        start = kw.get("start", 0) if start is None else start
        end = kw.get("end", x.shape[dim]) if end is None else end
        step = kw.get("step", 1) if step is None else step
        if step != 1:
            raise Unsupported(f"aten.slice_scatter with a step of {step} ({node['name']})")
        start += x.shape[dim] if start < 0 else 0
        end = x.shape[dim] if end is None or end > x.shape[dim] else end + (x.shape[dim] if end < 0 else 0)
        return self.scatter_along(node, x, src, dim, start, end)

    def op_select_scatter(self, node, args, kw, overload):
        x, src = self.arg(args[0]), self.arg(args[1])
        dim, index = args[2] % len(x.shape), args[3] % x.shape[args[2]]
        part = self.view(src, ("unsqueeze", "default"), dim)
        return self.scatter_along(node, x, part, dim, index, index + 1)

    def op_stack(self, node, args, kw, overload):
        dim = args[1] if len(args) > 1 else kw.get("dim", 0)
        dim %= len(node["shape"])
        parts = [self.view(self.arg(a), ("unsqueeze", "default"), dim) for a in args[0]]
        return self.add(
            "cat",
            node["shape"],
            node["dtype"],
            [self.cast(p, node["dtype"]) for p in parts],
            dim=dim,
            sizes=[1] * len(parts),
        )

    def op_constant_pad_nd(self, node, args, kw, overload):
        x = self.arg(args[0])
        pads = list(args[1])
        value = args[2] if len(args) > 2 else 0
        # torch's pad lists the last dim first: (left, right) per dim from the last; negative pads cut
        before = [0] * len(x.shape)
        for i in range(len(pads) // 2):
            before[len(x.shape) - 1 - i] = pads[2 * i]
        return self.add("pad", node["shape"], node["dtype"], [x], before=before, value=value)

    def op_embedding(self, node, args, kw, overload):
        weight, ids = self.arg(args[0]), self.arg(args[1])
        return self.add("gather", node["shape"], node["dtype"], [weight, ids], dim=0, mode="index")

    def op_index_select(self, node, args, kw, overload):
        x, dim, idx = self.arg(args[0]), args[1] % len(node["shape"]), self.arg(args[2])
        return self.add("gather", node["shape"], node["dtype"], [x, idx], dim=dim, mode="index")

    def op_index(self, node, args, kw, overload):
        x = self.arg(args[0])
        indices = args[1]
        used = [i for i, a in enumerate(indices) if a is not None]
        ids = [self.arg(indices[i]) for i in used]
        if any(idx.dtype == "bool" for idx in ids):
            raise Unsupported(f"indexing with a boolean mask ({node['name']}: its size depends on the data)")
        if len(ids) == 1:
            return self.add("gather", node["shape"], node["dtype"], [x, ids[0]], dim=used[0], mode="index")
        # several index tensors (upsampling's decomposition, x[:, rows, cols]): broadcast together, they pick one
        # element per position of their common shape, which replaces the indexed dims (or leads, when those dims are
        # not next to each other)
        return self.add("gather", node["shape"], node["dtype"], [x, *ids], dims=used, mode="multi")

    def op_topk(self, node, args, kw, overload):
        x = self.arg(args[0])
        k = args[1] if len(args) > 1 else kw["k"]
        dim = (args[2] if len(args) > 2 else kw.get("dim", -1)) % max(len(x.shape), 1)
        largest = args[3] if len(args) > 3 else kw.get("largest", True)
        (shape, dtype), (ishape, _) = node["outs"]
        if not x.shape:
            raise Unsupported(f"topk of a number ({node['name']})")
        # values and indices alike: the j-th element of the row in the order (value, then lower index first)
        return tuple(
            self.add("topk", out_shape, out_dtype, [x], dim=dim, k=int(k), largest=bool(largest), want=want)
            for out_shape, out_dtype, want in ((shape, dtype, "values"), (ishape, "int64", "indices"))
        )

    def op_median(self, node, args, kw, overload, select="median"):
        """torch.median / nanmedian: over a dim, values and int64 indices (a rank selection of the topk family, its
        node keeping the reduced dim); of the whole tensor, the value alone."""
        x = self.arg(args[0])
        if not x.shape:
            raise Unsupported(f"{select} of a number ({node['name']})")
        if overload == "default":
            flat = self.view(x, ("reshape", "default"), [x.numel]) if len(x.shape) != 1 else x
            out = self.add("topk", [1], x.dtype, [flat], dim=0, k=1, largest=False, want="values", select=select)
            return self.view(out, ("reshape", "default"), list(node["shape"]))
        dim = (args[1] if len(args) > 1 else kw.get("dim", 0)) % len(x.shape)
        keepdim = args[2] if len(args) > 2 else kw.get("keepdim", False)
        kept = [1 if d == dim else size for d, size in enumerate(x.shape)]
        outs = tuple(
            self.add("topk", kept, dtype, [x], dim=dim, k=1, largest=False, want=want, select=select)
            for dtype, want in ((x.dtype, "values"), ("int64", "indices"))
        )
        return outs if keepdim else tuple(self.view(o, ("squeeze", "dim"), dim) for o in outs)

    def op_nanmedian(self, node, args, kw, overload):
        return self.op_median(node, args, kw, overload, select="nanmedian")

    def op_sort(self, node, args, kw, overload):
        dim = args[1] if len(args) > 1 else kw.get("dim", -1)
        descending = args[2] if len(args) > 2 else kw.get("descending", False)
        return sort.lower(self, node, self.arg(args[0]), dim, descending)

    def op_argsort(self, node, args, kw, overload):
        return self.op_sort(node, args, kw, overload)[1]

    def op_scatter(self, node, args, kw, overload):
        """scatter(self, dim, index, src or value[, reduce="add" | "multiply"])."""
        src = args[3] if len(args) > 3 else kw.get("src", kw.get("value"))
        src = self.arg(src) if isinstance(src, dict) else src
        reduce = args[4] if len(args) > 4 else kw.get("reduce", "none")
        return scatter.scatter(self, node, self.arg(args[0]), args[1], self.arg(args[2]), src, reduce)

    def op_scatter_add(self, node, args, kw, overload):
        return scatter.scatter(self, node, self.arg(args[0]), args[1], self.arg(args[2]), self.arg(args[3]), "sum")

    def op_scatter_reduce(self, node, args, kw, overload):
        reduce = args[4] if len(args) > 4 else kw["reduce"]
        include_self = args[5] if len(args) > 5 else kw.get("include_self", True)
        x, index, src = self.arg(args[0]), self.arg(args[2]), self.arg(args[3])
        return scatter.scatter(self, node, x, args[1], index, src, reduce, include_self)

    def op_index_put(self, node, args, kw, overload):
        accumulate = args[3] if len(args) > 3 else kw.get("accumulate", False)
        return scatter.index_put(self, node, self.arg(args[0]), args[1], self.arg(args[2]), accumulate)

    def op_index_add(self, node, args, kw, overload):
        x, source = self.arg(args[0]), self.arg(args[3])
        dim = args[1] % max(len(x.shape), 1)
        alpha = args[4] if len(args) > 4 else kw.get("alpha", 1)
        if alpha != 1:
            source = self.pointwise("mul", [source, self.scalar(alpha)], source.dtype)
        return scatter.index_put(self, node, x, [None] * dim + [args[2]], source, True)

    def op__trilinear(self, node, args, kw, overload):
        # nn.Bilinear's product: each input unsqueezed at its expand dims, the three multiplied, summed over sumdim
        inputs = [self.arg(a) for a in args[:3]]
        expands, sumdim = args[3:6], sorted(args[6])
        views = []
        for x, expand in zip(inputs, expands):
            for d in sorted(expand):
                x = self.view(x, ("unsqueeze", "default"), d)
            views.append(x)
        dtype = node["dtype"]
        product = self.pointwise("mul", [self.pointwise("mul", views[:2], dtype), views[2]], dtype)
        keep = [1 if d in sumdim else s for d, s in enumerate(product.shape)]
        r = self.add("reduce", keep, dtype, [product], dims=sumdim, op="sum")
        return self.view(r, ("view", "default"), node["shape"])

    def op_bucketize(self, node, args, kw, overload):
        right = args[3] if len(args) > 3 else kw.get("right", False)
        return self.sorted_position(node, self.arg(args[1]), self.arg(args[0]), right)

    def op_searchsorted(self, node, args, kw, overload):
        side = kw.get("side")
        right = side == "right" if side is not None else (args[3] if len(args) > 3 else kw.get("right", False))
        if (args[5] if len(args) > 5 else kw.get("sorter")) is not None:
            raise Unsupported("searchsorted with a sorter")
        sequence, values = self.arg(args[0]), self.arg(args[1])
        if len(sequence.shape) > 1:  # one sorted row per row of values: their leading dims meet
            sequence = self.view(sequence, ("unsqueeze", "default"), len(sequence.shape) - 1)
        return self.sorted_position(node, sequence, values, right)

    def sorted_position(self, node, sequence, values, right):
        """Where each of VALUES falls in the sorted last dim of SEQUENCE (bucketize, searchsorted): the count of the
        entries that do not lie at or after it (after it, for RIGHT), compared side by side rather than searched, as
        boundaries are few. NaN lies after every entry, as in torch's binary search."""
        values = self.view(values, ("unsqueeze", "default"), len(values.shape)) if values.shape else values
        after = self.pointwise("gt" if right else "ge", [sequence, values], "bool")
        dim = len(after.shape) - 1
        keep = [*after.shape[:-1], 1]
        count = self.add("reduce", keep, "int64", [self.cast(after, "int64")], dims=[dim], op="sum")
        position = self.pointwise("sub", [self.scalar(sequence.shape[-1]), count], "int64")
        return self.cast(self.view(position, ("view", "default"), node["shape"]), node["dtype"])

    def op_gather(self, node, args, kw, overload):
        x, dim, idx = self.arg(args[0]), args[1] % len(node["shape"]), self.arg(args[2])
        return self.add("gather", node["shape"], node["dtype"], [x, idx], dim=dim, mode="gather")

    def op_mm(self, node, args, kw, overload):
        return self.add("gemm", node["shape"], node["dtype"], [self.arg(args[0]), self.arg(args[1])])

    op_bmm = op_mm

    def op_addmm(self, node, args, kw, overload):
        bias, a, b = (self.arg(x) for x in args[:3])
        beta, alpha = kw.get("beta", 1), kw.get("alpha", 1)
        product = self.add("gemm", node["shape"], node["dtype"], [a, b])
        if alpha != 1:
            product = self.pointwise("mul", [product, self.scalar(float(alpha))], node["dtype"])
        if beta != 1:
            bias = self.pointwise("mul", [bias, self.scalar(float(beta))], node["dtype"])
        return self.pointwise("add", [product, bias], node["dtype"]) if beta != 0 else product

    def op_convolution(self, node, args, kw, overload):
        x, w = self.arg(args[0]), self.arg(args[1])
        bias = self.arg(args[2]) if args[2] is not None else None
        stride, padding, dilation, transposed, output_padding, groups = args[3:9]
        dims = len(x.shape) - 2
        if dims not in (1, 2, 3):
            raise Unsupported(f"a convolution over {dims} spatial dims")
        conv = self.add(
            "conv",
            node["shape"],
            node["dtype"],
            [x, w],
            stride=list(stride),
            padding=list(padding),
            dilation=list(dilation),
            transposed=bool(transposed),
            output_padding=list(output_padding),
            groups=int(groups),
        )
        if bias is None:
            return conv
        per_channel = self.view(bias, ("view", "default"), [bias.numel] + [1] * dims)
        return self.pointwise("add", [conv, per_channel], node["dtype"])

    def _pool(
        self, node, kind, x, kernel, stride, padding, dilation, ceil_mode=False, count_include_pad=True, divisor=None
    ):
        dims = len(kernel)
        if len(x.shape) < dims + 1:
            raise Unsupported(f"{node['target']} of a tensor of rank {len(x.shape)}")
        return self.add(
            "pool",
            node["shape"],
            node["dtype"],
            [x],
            mode=kind,
            kernel=list(kernel),
            stride=list(stride) or list(kernel),
            padding=list(padding),
            dilation=list(dilation),
            count_include_pad=count_include_pad,
            divisor=divisor,
        )

    def _per_dim(self, value, dims, default):
        if value is None or value == []:
            return [default] * dims
        value = [value] if isinstance(value, int) else list(value)
        return value * dims if len(value) == 1 else value

    def op_max_pool2d_with_indices(self, node, args, kw, overload):
        x = self.arg(args[0])
        dims = 3 if "3d" in node["target"] else 2 if "2d" in node["target"] else 1
        kernel = self._per_dim(args[1], dims, 1)
        stride = self._per_dim(args[2] if len(args) > 2 else kw.get("stride"), dims, None)
        stride = kernel if None in stride else stride
        padding = self._per_dim(args[3] if len(args) > 3 else kw.get("padding", 0), dims, 0)
        dilation = self._per_dim(args[4] if len(args) > 4 else kw.get("dilation", 1), dims, 1)
        meta = dict(node)
        meta["shape"], meta["dtype"] = node["outs"][0]
        return (self._pool(meta, "max", x, kernel, stride, padding, dilation), None)

    op_max_pool3d_with_indices = op_max_pool1d_with_indices = op_max_pool2d_with_indices

    def op_avg_pool2d(self, node, args, kw, overload):
        x = self.arg(args[0])
        dims = 3 if "3d" in node["target"] else 2 if "2d" in node["target"] else 1
        kernel = self._per_dim(args[1], dims, 1)
        stride = self._per_dim(args[2] if len(args) > 2 else kw.get("stride"), dims, None)
        stride = kernel if None in stride else stride
        padding = self._per_dim(args[3] if len(args) > 3 else kw.get("padding", 0), dims, 0)
        count_include_pad = args[5] if len(args) > 5 else kw.get("count_include_pad", True)
        divisor = args[6] if len(args) > 6 else kw.get("divisor_override")
        return self._pool(
            node, "avg", x, kernel, stride, padding, [1] * dims, count_include_pad=count_include_pad, divisor=divisor
        )

    op_avg_pool3d = op_avg_pool1d = op_avg_pool2d

    def op__adaptive_avg_pool2d(self, node, args, kw, overload):
        x = self.arg(args[0])
        out = list(node["shape"][-len(args[1]) :])
        return self.add("pool", node["shape"], node["dtype"], [x], mode="adaptive_avg", out=out)

    op__adaptive_avg_pool3d = op_adaptive_avg_pool1d = op__adaptive_avg_pool2d

    def op_adaptive_max_pool2d(self, node, args, kw, overload):
        x = self.arg(args[0])
        meta_shape, meta_dtype = node["outs"][0]
        out = list(meta_shape[-len(args[1]) :])
        return (self.add("pool", meta_shape, meta_dtype, [x], mode="adaptive_max", out=out), None)

    op_adaptive_max_pool3d = op_adaptive_max_pool2d

    def op_scaled_dot_product_attention(self, node, args, kw, overload):
        q, k, v = (self.arg(a) for a in args[:3])
        mask = args[3] if len(args) > 3 else kw.get("attn_mask")
        dropout = args[4] if len(args) > 4 else kw.get("dropout_p", 0.0)
        causal = args[5] if len(args) > 5 else kw.get("is_causal", False)
        scale = args[6] if len(args) > 6 else kw.get("scale")
        if dropout:
            raise Unsupported("scaled_dot_product_attention with dropout_p > 0 (random)")
        if (args[7] if len(args) > 7 else kw.get("enable_gqa")) and k.shape[-3] != q.shape[-3]:
            k, v = (self.shared_heads(x, q.shape[-3]) for x in (k, v))
        scale = float(scale) if scale is not None else 1.0 / math.sqrt(q.shape[-1])
        if mask is not None:  # the scores' full shape, as a view: its strides are 0 along the dims it broadcasts over
            scores = [*q.shape[:-1], k.shape[-2]]
            mask = self.arg(mask)
            if list(torch.broadcast_shapes(tuple(mask.shape), tuple(scores))) != scores:
                raise Unsupported(f"attention with a mask of shape {mask.shape} wider than its scores {scores}")
            mask = mask if mask.shape == scores else self.view(mask, ("expand", "default"), scores)
        if max(q.shape[-1], v.shape[-1]) > WIDEST_HEAD:
            return self.attention_by_gemms(node, q, k, v, mask, bool(causal), scale)
        return self.add(
            "attention",
            node["shape"],
            node["dtype"],
            [q, k, v] + ([mask] if mask is not None else []),
            causal=bool(causal),
            scale=scale,
            masked_rows="zero",  # torch's kernels (and its math path's safe softmax) give a fully masked row 0
        )

    def shared_heads(self, x, heads):
        """X's [..., h, s, d] heads each serving HEADS / h query heads in a row, as scaled_dot_product_attention's
        enable_gqa reads them (x.repeat_interleave(heads // h, dim=-3)): a broadcast, then a reshape."""
        *lead, h, s, d = x.shape
        if heads % h:
            raise Unsupported(f"grouped-query attention of {heads} query heads over {h} key heads")
        x = self.view(x, ("unsqueeze", "default"), len(lead) + 1)
        x = self.view(x, ("expand", "default"), [*lead, h, heads // h, s, d])
        return self.view(x, ("reshape", "default"), [*lead, heads, s, d])

    def attention_by_gemms(self, node, q, k, v, mask, causal, scale):
        """softmax(q k^T * scale + mask) v as two batched GEMMs around a softmax: for heads too wide for one thread's
        registers in the attention kernel, the GEMMs go to the vendor library."""
        lq, lk = q.shape[-2], k.shape[-2]
        batch = math.prod(q.shape[:-2])
        q3 = (
            self.view(q, ("view", "default"), [batch, lq, q.shape[-1]])
            if q.kind != "view"
            else self.view(q, ("reshape", "default"), [batch, lq, q.shape[-1]])
        )
        k3 = self.view(k, ("reshape", "default"), [batch, lk, k.shape[-1]])
        v3 = self.view(v, ("reshape", "default"), [batch, lk, v.shape[-1]])
        scores = self.add("gemm", [batch, lq, lk], "float32", [q3, self.view(k3, ("transpose", "int"), 1, 2)])
        x = self.pointwise("mul", [scores, self.scalar(scale)], "float32")
        if mask is not None:
            mask = self.view(mask, ("reshape", "default"), [batch, lq, lk])
            x = (
                self.pointwise("where", [mask, x, self.scalar(-math.inf)], "float32")
                if mask.dtype == "bool"
                else self.pointwise("add", [x, mask], "float32")
            )
        if causal:
            rows = self.add("iota", [lq, 1], "int64", start=0, step=1)
            cols = self.add("iota", [1, lk], "int64", start=0, step=1)
            keep = self.pointwise("le", [cols, rows], "bool")
            x = self.pointwise("where", [keep, x, self.scalar(-math.inf)], "float32")
        top = self.add("reduce", [batch, lq, 1], "float32", [x], dims=[2], op="max")
        e = self.pointwise("exp", [self.pointwise("sub", [x, top], "float32")], "float32")
        total = self.add("reduce", [batch, lq, 1], "float32", [e], dims=[2], op="sum")
        p = self.pointwise("div", [e, total], "float32")
        if mask is not None:  # a row with every key masked is 0, as in torch's scaled_dot_product_attention
            empty = self.pointwise("eq", [top, self.scalar(-math.inf)], "bool")
            p = self.pointwise("where", [empty, self.scalar(0.0), p], "float32")
        out = self.add("gemm", [batch, lq, v.shape[-1]], "float32", [p, v3])
        return self.view(out, ("view", "default"), node["shape"])

    def op_lstm(self, node, args, kw, overload):
        return rnn.lower(self, node, "lstm", overload)

    def op_gru(self, node, args, kw, overload):
        return rnn.lower(self, node, "gru", overload)

    def op_rnn_tanh(self, node, args, kw, overload):
        return rnn.lower(self, node, "rnn_tanh", overload)

    def op_rnn_relu(self, node, args, kw, overload):
        return rnn.lower(self, node, "rnn_relu", overload)

    def op_native_dropout(self, node, args, kw, overload):
        p, train = args[1], args[2]
        if p and train:
            raise Unsupported("dropout with p > 0 in training mode (random: not a deterministic problem)")
        return (self.arg(args[0]), None)

    def op_flip(self, node, args, kw, overload):
        x = self.arg(args[0])
        return self.add("flip", node["shape"], node["dtype"], [x], dims=_dims(args[1], len(x.shape)))

    def op_linalg_vector_norm(self, node, args, kw, overload):
        x = self.arg(args[0])
        order = args[1] if len(args) > 1 else kw.get("ord", 2)
        dims = _dims(args[2] if len(args) > 2 else kw.get("dim"), len(x.shape))
        keep = [1 if d in dims else s for d, s in enumerate(x.shape)]
        dtype = node["dtype"]
        magnitude = self.pointwise("abs", [x], dtype)
        if order in (math.inf, float("inf")):
            total = self.add("reduce", keep, dtype, [magnitude], dims=dims, op="max")
        elif order == 2:
            total = self.pointwise(
                "sqrt",
                [self.add("reduce", keep, dtype, [self.pointwise("mul", [x, x], dtype)], dims=dims, op="sum")],
                dtype,
            )
        elif order == 1:
            total = self.add("reduce", keep, dtype, [magnitude], dims=dims, op="sum")
        else:
            powered = self.pointwise("pow", [magnitude, self.scalar(float(order))], dtype)
            summed = self.add("reduce", keep, dtype, [powered], dims=dims, op="sum")
            total = self.pointwise("pow", [summed, self.scalar(1.0 / float(order))], dtype)
        return self.view(total, ("view", "default"), node["shape"])

    def op_var(self, node, args, kw, overload):
        x = self.arg(args[0])
        dims = _dims(args[1] if len(args) > 1 else kw.get("dim"), len(x.shape))
        var, _ = self.variance(x, dims, kw.get("correction", 1))
        return self.view(var, ("view", "default"), node["shape"])

    def op_std(self, node, args, kw, overload):
        return self.pointwise("sqrt", [self.op_var(node, args, kw, overload)], node["dtype"])

    def variance(self, x, dims, correction):
        """(var, mean) of x over DIMS, both keeping them: sum((x - mean)^2) / (n - correction), in two passes with the
        mean first (as torch, stable)."""
        n = math.prod(x.shape[d] for d in dims)
        kept = [1 if d in dims else s for d, s in enumerate(x.shape)]
        dtype = x.dtype if x.dtype in FLOATS else "float32"
        mean = self.add("reduce", kept, dtype, [x], dims=dims, op="mean")
        centered = self.pointwise("sub", [x, mean], dtype)
        square = self.pointwise("mul", [centered, centered], dtype)
        total = self.add("reduce", kept, dtype, [square], dims=dims, op="sum")
        correction = 1 if correction is None else correction
        return self.pointwise("div", [total, self.scalar(float(max(n - correction, 0)))], dtype), mean

    def op_var_mean(self, node, args, kw, overload):
        x = self.arg(args[0])
        dims = _dims(args[1] if len(args) > 1 else kw.get("dim"), len(x.shape))
        (var_shape, _), (mean_shape, _) = node["outs"]
        var, mean = self.variance(x, dims, kw.get("correction", 1))
        return (self.view(var, ("view", "default"), var_shape), self.view(mean, ("view", "default"), mean_shape))

    def reduction(self, node, op, args, kw, overload):
        x = self.arg(args[0])
        rank = len(x.shape)
        if op in ("argmax", "argmin"):
            dim = args[1] if len(args) > 1 else kw.get("dim")
            dims = _dims(dim, rank)
            if dim is None:
                x, dims = self.view(x, ("view", "default"), [x.numel]), [0]
            keep = [1 if d in dims else s for d, s in enumerate(x.shape)]
            r = self.add("reduce", keep, "int64", [x], dims=dims, op=op)
            return self.view(r, ("view", "default"), node["shape"])
        if overload in ("dim", "dims", "dim_IntList", "int", "dim_int", "names_dim") or len(args) > 1:
            dims = _dims(args[1] if len(args) > 1 else kw.get("dim"), rank)
        else:
            dims = list(range(rank))
        if op in ("max", "min") and overload == "dim":
            (shape, dtype), (ishape, _) = node["outs"]
            keep = [1 if d in dims else s for d, s in enumerate(x.shape)]
            values = self.add("reduce", keep, dtype, [x], dims=dims, op=op)
            indices = self.add("reduce", keep, "int64", [x], dims=dims, op="arg" + op)
            return (self.view(values, ("view", "default"), shape), self.view(indices, ("view", "default"), ishape))
        if op in ("max", "min") and overload == "other":
            return self.pointwise({"max": "maximum", "min": "minimum"}[op], [x, self.arg(args[1])], node["dtype"])
        dtype = node["dtype"]
        source = self.cast(x, dtype) if op in ("sum", "mean", "prod") else x
        keep = [1 if d in dims else s for d, s in enumerate(x.shape)]
        if not x.shape:
            return self.cast(x, dtype)
        r = self.add("reduce", keep, dtype, [source], dims=dims, op=op)
        return self.view(r, ("view", "default"), node["shape"])

    def scan(self, node, op, args, kw):
        x = self.arg(args[0])
        dim = (args[1] if len(args) > 1 else kw["dim"]) % max(len(x.shape), 1)
        if op in ("max", "min"):
            (shape, dtype), _ = node["outs"]
            return (self.add("scan", shape, dtype, [x], dim=dim, op=op), None)
        return self.add("scan", node["shape"], node["dtype"], [self.cast(x, node["dtype"])], dim=dim, op=op)


def lower(graph_json):
    """The planner's Graph of a captured ATen graph, or Unsupported naming the operator it has no family for."""
    return Lowering(graph_json).run()
