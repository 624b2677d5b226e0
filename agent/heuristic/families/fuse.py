"""What every family's planning rule shares: the Plan and Operand records, the builder that turns elementwise
operators into C statements over float locals, and the fusion of the operators after a stage's own."""

import math
from dataclasses import dataclass, field

from agent.heuristic.errors import Unsupported
from agent.heuristic.families.ops import BINARY, UNARY, c_float, canonical, ends_stage


@dataclass
class Operand:
    name: str  # C identifier
    source: str  # "input", "param" or "buffer" (a module's buffer the kernel updates: batch norm's running stats)
    ref: object  # input position or parameter name
    shape: list


@dataclass
class Plan:
    kind: str  # elementwise | rowwise | gemm | conv | pool
    out_shape: list
    operands: list = field(default_factory=list)  # tensors the fused body reads (besides the main input)
    body: list = field(default_factory=list)  # C statements; the value ends in `result`
    # rowwise: the main input, the row operation and its geometry (outer x R x inner), prologue/epilogue.
    main: Operand | None = None
    row_op: str = ""
    outer: int = 1
    reduce: int = 1
    inner: int = 1
    eps: float = 1e-5
    affine: list = field(default_factory=list)  # a norm's weight and bias operands
    # group_norm / instance_norm: rows are (sample, group); the affine's channel of row o, element r is
    # (o % groups) * (channels / groups) + r / spatial.
    groups: int = 0
    channels: int = 0
    spatial: int = 1
    # batch_norm: rows are channels, strided over [N, C, *spatial]; statistics of the batch in training mode (the
    # running mean and variance, these operands, updated as torch does) and the running ones in eval mode.
    running: list = field(default_factory=list)
    momentum: float = 0.1
    # rowwise: the reduction's result combined with the input again (x / f(reduce(x)), RMS and L1 norms): the
    # epilogue reads LOAD_<main> too and writes the input's shape.
    normalize: bool = False
    prologue: list = field(default_factory=list)
    # gemm: x [M,K] (an input), w [N,K] (a parameter, or [K,N] input for matmul), M, N, K.
    weight: Operand | None = None
    transposed_b: bool = True
    m: int = 0
    n: int = 0
    k: int = 0
    batch: int = 1
    # conv: x [N, C, *spatial] (an input), w the module's weight; geometry in torch's terms, one entry per
    # spatial dim: stride, padding, dilation, output_padding; groups; transposed for ConvTranspose.
    conv: dict = field(default_factory=dict)
    scalars: dict = field(default_factory=dict)  # input position -> the number forward must be given
    describe: str = ""
    # pool: the window (max or avg) over the spatial dims of [N, C, *spatial], one entry per spatial dim.
    pool: dict = field(default_factory=dict)
    # Stages after this one (row-wise or pool plans), in order: each reads the previous stage's result (this plan's
    # for the first) as its main input, an intermediate tensor; its other operands are the model's parameters.
    tails: list = field(default_factory=list)
    final_shape: list = field(default_factory=list)  # the output's shape when the model reshapes the last result

    def to_json(self):
        from dataclasses import asdict

        return asdict(self)

    @property
    def result_shape(self):
        """The shape of the model's output: what the last stage writes, reshaped when the model reshapes it."""
        if self.final_shape:
            return list(self.final_shape)
        return list(self.tails[-1].out_shape if self.tails else self.out_shape)


class Builder:
    """Walks the graph in order, turning each node into C statements over float locals."""

    def __init__(self, analysis, prefix="t"):
        self.prefix = prefix  # of the operands' C names: a tail's differ from its head's
        self.nodes = {n["name"]: n for n in analysis["nodes"]}
        self.order = analysis["nodes"]
        self.params = analysis["params"]
        self.inputs = [n for n in analysis["nodes"] if n["op"] == "placeholder"]
        self.input_values = analysis.get("inputs") or [{} for _ in self.inputs]
        self.scalars = {}  # input position -> the number the kernel is specialized to
        self.values = {}  # node name -> C expression of its value
        self.operands = {}
        self.created = 0  # operands named so far
        self.body = []

    def operand(self, source, ref, shape):
        key = (source, ref)
        if key not in self.operands:
            # Numbered by creation, not by how many remain: a GEMM or a convolution takes its main input out
            # again, and the next operand must not get the name of the one after it.
            self.operands[key] = Operand(f"{self.prefix}{self.created}", source, ref, list(shape))
            self.created += 1
        return self.operands[key]

    def value(self, arg):
        if isinstance(arg, dict) and "node" in arg:
            name = arg["node"]
            if name not in self.values:
                node = self.nodes[name]
                if node["op"] == "placeholder" and node["shape"] is None:
                    # A number passed to forward (KernelBench's `A * s`): the kernel is specialized to the value
                    # get_inputs gives, and ModelNew refuses any other value rather than compute a wrong result.
                    position = self.inputs.index(node)
                    value = self.input_values[position].get("value")
                    if not isinstance(value, (int, float)) or isinstance(value, bool):
                        raise Unsupported(f"input {name} is neither a tensor nor a number")
                    self.scalars[position] = value
                    return c_float(value)
                if node["op"] == "placeholder":
                    op = self.operand("input", self.inputs.index(node), node["shape"])
                    self.values[name] = f"LOAD_{op.name}"
                elif node["op"] == "get_attr" and "value" in node:
                    return c_float(node["value"])
                elif node["op"] == "get_attr":
                    op = self.operand("param", node["target"], self.params[node["target"]])
                    self.values[name] = f"LOAD_{op.name}"
                else:
                    raise Unsupported(f"the value {name} is needed before it is computed")
            return self.values[name]
        if isinstance(arg, bool):
            return "1.0f" if arg else "0.0f"
        if isinstance(arg, (int, float)):
            return c_float(arg)
        raise Unsupported(f"an argument of kind {arg!r} is not a tensor or a number")

    def emit(self, node, expr):
        var = f"v_{node['name']}"
        self.body.append(f"const float {var} = {expr};")
        self.values[node["name"]] = var

    def elementwise(self, node):
        """Emit NODE if it is elementwise; False if it is not."""
        op = canonical(node)
        args, kw, attrs = node["args"], node.get("kwargs") or {}, node.get("attrs") or {}
        if op in ("dropout", "Dropout"):
            p = attrs.get("p", kw.get("p", args[1] if len(args) > 1 else 0.5))
            if p and kw.get("training") is not False:
                raise Unsupported("dropout with p > 0 in training mode (random: not a deterministic problem)")
            op = "identity"
        if (
            op == "getitem"
            and len(args) == 2
            and args[1] == 0
            and isinstance(args[0], dict)
            and canonical(self.nodes[args[0]["node"]]) in ("max", "min")
        ):
            # torch.max(x, dim)[0]: the values of the reduction (its indices are never computed).
            self.values[node["name"]] = self.value(args[0])
            return True
        if node["op"] == "call_module" and op in UNARY:
            x = self.value(args[0])
        elif op in UNARY:
            x = self.value(args[0])
        elif op in BINARY or op in ("max", "min") and len(args) == 2 and not isinstance(args[1], int):
            name = {"max": "maximum", "min": "minimum"}.get(op, op)
            a = self.value(args[0])
            b = self.value(args[1] if len(args) > 1 else kw.get("other"))
            if op in ("add", "sub") and (kw.get("alpha") not in (None, 1)):
                b = f"({c_float(kw['alpha'])} * ({b}))"
            self.emit(node, BINARY[name].format(a=a, b=b))
            return True
        else:
            return False
        fields = {"x": x}
        if op == "clamp":
            # torch.clamp(x, min, max); F.hardtanh(x, min_val, max_val) (fx passes those as keywords)
            lo = attrs.get("min_val", kw.get("min", kw.get("min_val", args[1] if len(args) > 1 else None)))
            hi = attrs.get("max_val", kw.get("max", kw.get("max_val", args[2] if len(args) > 2 else None)))
            if node.get("target") == "hardtanh":  # F.hardtanh's defaults are -1 and 1, not unbounded
                lo, hi = (-1.0 if lo is None else lo), (1.0 if hi is None else hi)
            fields.update(lo=c_float(-math.inf if lo is None else lo), hi=c_float(math.inf if hi is None else hi))
        elif op == "leaky_relu":
            fields["slope"] = c_float(
                attrs.get("negative_slope", kw.get("negative_slope", args[1] if len(args) > 1 else 0.01))
            )
        elif op == "elu":
            fields["alpha"] = c_float(attrs.get("alpha", kw.get("alpha", args[1] if len(args) > 1 else 1.0)))
        elif op == "celu":
            fields["alpha"] = c_float(attrs.get("alpha", kw.get("alpha", args[1] if len(args) > 1 else 1.0)))
        elif op in ("softshrink", "hardshrink"):
            fields["lambd"] = c_float(attrs.get("lambd", kw.get("lambd", args[1] if len(args) > 1 else 0.5)))
        elif op == "threshold":  # F.threshold(x, threshold, value); nn.Threshold(threshold, value)
            cut = attrs.get("threshold", kw.get("threshold", args[1] if len(args) > 1 else None))
            value = attrs.get("value", kw.get("value", args[2] if len(args) > 2 else None))
            if not all(isinstance(v, (int, float)) for v in (cut, value)):
                raise Unsupported(f"threshold {node['name']}: its threshold and value must be numbers")
            fields.update(threshold=c_float(cut), value=c_float(value))
        elif op == "logit":  # torch.logit(x, eps): the input clamped to [eps, 1 - eps] first, when eps is given
            eps = kw.get("eps", args[1] if len(args) > 1 else None)
            fields.update(
                lo=c_float(-math.inf if eps is None else eps), hi=c_float(math.inf if eps is None else 1.0 - eps)
            )
        elif op == "softplus":
            fields.update(
                beta=c_float(attrs.get("beta", kw.get("beta", 1.0))),
                threshold=c_float(attrs.get("threshold", kw.get("threshold", 20.0))),
            )
        elif op == "gelu" and (attrs.get("approximate") == "tanh" or kw.get("approximate") == "tanh"):
            op = "gelu_tanh"
        self.emit(node, UNARY[op].format(**fields))
        return True


def compute_nodes(analysis):
    """The nodes of ANALYSIS that compute (calls of functions, methods and modules), in order."""
    return [n for n in analysis["nodes"] if n["op"] in ("call_function", "call_method", "call_module")]


def output_node(analysis):
    """The name of the node the model returns (Unsupported when it returns several tensors)."""
    out = [n for n in analysis["nodes"] if n["op"] == "output"][0]
    arg = out["args"][0]
    if isinstance(arg, list):
        if len(arg) != 1:
            raise Unsupported("Model returns several tensors; the heuristic writes single-output kernels")
        arg = arg[0]
    return arg["node"]


def fuse_after(builder, nodes, start, what):
    """Fuse the elementwise operators NODES[START:] into BUILDER, up to the end (None) or up to the index of the
    first one that starts a stage of its own and reads what was fused; Unsupported names any other operator."""
    for i in range(start, len(nodes)):
        node = nodes[i]
        if builder.elementwise(node):
            continue
        if ends_stage(node):
            source = node["args"][0]
            if not isinstance(source, dict) or source.get("node") not in builder.values:
                raise Unsupported(f"operator {node.get('target')} after {what} does not read the fused result")
            return i
        raise Unsupported(f"operator {node.get('target')} ({node['name']}) after {what} is not elementwise")
    return None


def result_node(analysis, nodes, stop):
    """The node whose value a stage writes: the input of the next stage, or the model's output."""
    return nodes[stop]["args"][0]["node"] if stop is not None else output_node(analysis)


def finish(builder, plan, out):
    """PLAN with BUILDER's scalars, statements (their value, node OUT's, in `result`) and operands."""
    plan.scalars = dict(builder.scalars)
    plan.body = builder.body + [f"const float result = {builder.values[out]};"]
    plan.operands = [op for op in builder.operands.values()]
    return plan


def per_dim(value, dims):
    """VALUE (one number, or one per spatial dim) as a list of DIMS integers."""
    return [int(value)] * dims if isinstance(value, (int, float)) else [int(v) for v in value]
