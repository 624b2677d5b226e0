"""From an analyzed graph to a fusion plan: one elementwise kernel, one row-wise kernel, or a GEMM with a
fused epilogue. Anything else is named as the operator that stops the plan (no fallback is ever written)."""
import math
from dataclasses import dataclass, field


class Unsupported(Exception):
    """The heuristic cannot write kernels for this problem; the message names the operator that stopped it."""


def _f(x):
    return f"{float(x)!r}f".replace("inff", "INFINITY").replace("nanf", "NAN")


# Elementwise operators as C expressions of {x} (and named attributes). One table serves CUDA and C++.
UNARY = {
    "relu": "fmaxf({x}, 0.0f)", "sigmoid": "(1.0f / (1.0f + expf(-({x}))))", "tanh": "tanhf({x})",
    "gelu": "(0.5f * ({x}) * (1.0f + erff(({x}) * 0.70710678118654752f)))",
    "gelu_tanh": "(0.5f * ({x}) * (1.0f + tanhf(0.7978845608028654f * (({x}) + 0.044715f * ({x}) * ({x}) * ({x})))))",
    "silu": "(({x}) / (1.0f + expf(-({x}))))", "exp": "expf({x})", "log": "logf({x})", "abs": "fabsf({x})",
    "neg": "(-({x}))", "sqrt": "sqrtf({x})", "rsqrt": "rsqrtf({x})", "sin": "sinf({x})", "cos": "cosf({x})",
    "reciprocal": "(1.0f / ({x}))", "softsign": "(({x}) / (1.0f + fabsf({x})))", "square": "(({x}) * ({x}))",
    "mish": "(({x}) * tanhf(({x}) > 20.0f ? ({x}) : log1pf(expf({x}))))",
    "softplus": "(({x}) * {beta} > {threshold} ? ({x}) : log1pf(expf(({x}) * {beta})) / {beta})",
    "elu": "(({x}) > 0.0f ? ({x}) : {alpha} * (expf({x}) - 1.0f))",
    "selu": "(1.0507009873554805f * (({x}) > 0.0f ? ({x}) : 1.6732632423543772f * (expf({x}) - 1.0f)))",
    "leaky_relu": "(({x}) > 0.0f ? ({x}) : {slope} * ({x}))",
    "clamp": "fminf(fmaxf({x}, {lo}), {hi})",
    "hardswish": "(({x}) * fminf(fmaxf(({x}) + 3.0f, 0.0f), 6.0f) / 6.0f)",
    "hardsigmoid": "fminf(fmaxf(({x}) / 6.0f + 0.5f, 0.0f), 1.0f)",
    "identity": "({x})",
}
BINARY = {"add": "(({a}) + ({b}))", "sub": "(({a}) - ({b}))", "mul": "(({a}) * ({b}))", "div": "(({a}) / ({b}))",
          "maximum": "fmaxf({a}, {b})", "minimum": "fminf({a}, {b})", "pow": "powf({a}, {b})",
          "rsub": "(({b}) - ({a}))"}
ALIASES = {"truediv": "div", "true_divide": "div", "divide": "div", "multiply": "mul", "subtract": "sub",
           "iadd": "add", "imul": "mul", "isub": "sub", "itruediv": "div", "relu_": "relu", "sigmoid_": "sigmoid",
           "tanh_": "tanh", "add_": "add", "mul_": "mul", "sub_": "sub", "div_": "div", "clamp_": "clamp",
           "clip": "clamp", "hardtanh": "clamp", "swish": "silu", "max_binary": "maximum", "min_binary": "minimum",
           "ReLU": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "GELU": "gelu", "SiLU": "silu", "Mish": "mish",
           "Softplus": "softplus", "ELU": "elu", "SELU": "selu", "LeakyReLU": "leaky_relu", "Hardtanh": "clamp",
           "Hardswish": "hardswish", "Hardsigmoid": "hardsigmoid", "Softsign": "softsign", "Identity": "identity",
           "softmax": "softmax", "Softmax": "softmax", "log_softmax": "log_softmax", "LogSoftmax": "log_softmax",
           "amax": "max", "amin": "min", "Linear": "linear", "matmul": "matmul", "mm": "matmul", "bmm": "matmul",
           "LayerNorm": "layer_norm", "layer_norm": "layer_norm", "logsumexp": "logsumexp", "Dropout": "dropout",
           "dropout": "dropout"}
ROW_OPS = {"softmax", "log_softmax", "layer_norm", "logsumexp", "sum", "mean", "max", "min"}


@dataclass
class Operand:
    name: str  # C identifier
    source: str  # "input" or "param"
    ref: object  # input position or parameter name
    shape: list


@dataclass
class Plan:
    kind: str  # elementwise | rowwise | gemm
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
    affine: list = field(default_factory=list)  # layer_norm weight and bias operands
    prologue: list = field(default_factory=list)
    # gemm: x [M,K] (an input), w [N,K] (a parameter, or [K,N] input for matmul), M, N, K.
    weight: Operand | None = None
    transposed_b: bool = True
    m: int = 0
    n: int = 0
    k: int = 0
    batch: int = 1
    describe: str = ""

    def to_json(self):
        from dataclasses import asdict
        return asdict(self)


class _Builder:
    """Walks the graph in order, turning each node into C statements over float locals."""

    def __init__(self, analysis):
        self.nodes = {n["name"]: n for n in analysis["nodes"]}
        self.order = analysis["nodes"]
        self.params = analysis["params"]
        self.inputs = [n for n in analysis["nodes"] if n["op"] == "placeholder"]
        self.values = {}  # node name -> C expression of its value
        self.operands = {}
        self.body = []

    def operand(self, source, ref, shape):
        key = (source, ref)
        if key not in self.operands:
            self.operands[key] = Operand(f"t{len(self.operands)}", source, ref, list(shape))
        return self.operands[key]

    def value(self, arg):
        if isinstance(arg, dict) and "node" in arg:
            name = arg["node"]
            if name not in self.values:
                node = self.nodes[name]
                if node["op"] == "placeholder":
                    op = self.operand("input", self.inputs.index(node), node["shape"])
                    self.values[name] = f"LOAD_{op.name}"
                elif node["op"] == "get_attr":
                    op = self.operand("param", node["target"], self.params[node["target"]])
                    self.values[name] = f"LOAD_{op.name}"
                else:
                    raise Unsupported(f"the value {name} is needed before it is computed")
            return self.values[name]
        if isinstance(arg, bool):
            return "1.0f" if arg else "0.0f"
        if isinstance(arg, (int, float)):
            return _f(arg)
        raise Unsupported(f"an argument of kind {arg!r} is not a tensor or a number")

    def emit(self, node, expr):
        var = f"v_{node['name']}"
        self.body.append(f"const float {var} = {expr};")
        self.values[node["name"]] = var

    def elementwise(self, node):
        """Emit NODE if it is elementwise; False if it is not."""
        op = _canonical(node)
        args, kw, attrs = node["args"], node.get("kwargs") or {}, node.get("attrs") or {}
        if op in ("dropout", "Dropout"):
            p = attrs.get("p", kw.get("p", args[1] if len(args) > 1 else 0.5))
            if p and not (kw.get("training") is False):
                raise Unsupported("dropout with p > 0 in training mode (random: not a deterministic problem)")
            op = "identity"
        if node["op"] == "call_module" and op in UNARY:
            x = self.value(args[0])
        elif op in UNARY:
            x = self.value(args[0])
        elif op in BINARY or op in ("max", "min") and len(args) == 2 and not isinstance(args[1], int):
            name = {"max": "maximum", "min": "minimum"}.get(op, op)
            a = self.value(args[0])
            b = self.value(args[1] if len(args) > 1 else kw.get("other"))
            if op in ("add", "sub") and (kw.get("alpha") not in (None, 1)):
                b = f"({_f(kw['alpha'])} * ({b}))"
            self.emit(node, BINARY[name].format(a=a, b=b))
            return True
        else:
            return False
        fields = {"x": x}
        if op == "clamp":
            lo = attrs.get("min_val", kw.get("min", args[1] if len(args) > 1 else None))
            hi = attrs.get("max_val", kw.get("max", args[2] if len(args) > 2 else None))
            fields.update(lo=_f(-math.inf if lo is None else lo), hi=_f(math.inf if hi is None else hi))
        elif op == "leaky_relu":
            fields["slope"] = _f(attrs.get("negative_slope", kw.get("negative_slope", args[1] if len(args) > 1 else 0.01)))
        elif op == "elu":
            fields["alpha"] = _f(attrs.get("alpha", kw.get("alpha", args[1] if len(args) > 1 else 1.0)))
        elif op == "softplus":
            fields.update(beta=_f(attrs.get("beta", kw.get("beta", 1.0))), threshold=_f(attrs.get("threshold", kw.get("threshold", 20.0))))
        elif op == "gelu" and (attrs.get("approximate") == "tanh" or kw.get("approximate") == "tanh"):
            op = "gelu_tanh"
        self.emit(node, UNARY[op].format(**fields))
        return True


def _canonical(node):
    target = node.get("target", "")
    if node["op"] == "call_function" and target in ("max", "min") and len(node["args"]) == 2 \
            and isinstance(node["args"][1], dict) and "node" in node["args"][1]:
        return {"max": "maximum", "min": "minimum"}[target]
    return ALIASES.get(target, target)


def _compute_nodes(analysis):
    return [n for n in analysis["nodes"] if n["op"] in ("call_function", "call_method", "call_module")]


def _output_node(analysis):
    out = [n for n in analysis["nodes"] if n["op"] == "output"][0]
    arg = out["args"][0]
    if isinstance(arg, list):
        if len(arg) != 1:
            raise Unsupported("Model returns several tensors; the heuristic writes single-output kernels")
        arg = arg[0]
    return arg["node"]


def make_plan(analysis):
    """The Plan for an analysis, or Unsupported naming the operator that stops it."""
    if not analysis.get("ok"):
        raise Unsupported(analysis.get("reason", "the problem could not be analyzed"))
    nodes = _compute_nodes(analysis)
    for n in analysis["nodes"]:
        if n["op"] != "output" and n.get("dtype") not in (None, "float32"):
            raise Unsupported(f"{n['name']} is {n['dtype']}; the heuristic writes float32 kernels")
    ops = [_canonical(n) for n in nodes]
    if ops and ops[0] in ("linear", "matmul"):
        return _gemm_plan(analysis, nodes)
    rows = [i for i, op in enumerate(ops) if op in ROW_OPS and not _is_binary_minmax(nodes[i])]
    if len(rows) > 1:
        raise Unsupported(f"{nodes[rows[1]]['target']} after {nodes[rows[0]]['target']}: one row-wise operation "
                          "per kernel")
    if rows:
        return _rowwise_plan(analysis, nodes, rows[0])
    return _elementwise_plan(analysis, nodes)


def _is_binary_minmax(node):
    return _canonical(node) in ("maximum", "minimum")


def _finish(builder, plan, result_node):
    plan.body = builder.body + [f"const float result = {builder.values[result_node]};"]
    plan.operands = [op for op in builder.operands.values()]
    return plan


def _elementwise_plan(analysis, nodes):
    b = _Builder(analysis)
    for node in nodes:
        if not b.elementwise(node):
            raise Unsupported(f"operator {node.get('target')} ({node['name']}) is not elementwise and not one the "
                              "heuristic fuses")
    out = _output_node(analysis)
    if out not in b.values:
        b.value({"node": out})
    plan = Plan("elementwise", b.nodes[out]["shape"], describe=f"one fused elementwise kernel over {len(nodes)} operator(s)")
    return _finish(b, plan, out)


def _rowwise_plan(analysis, nodes, at):
    b = _Builder(analysis)
    for node in nodes[:at]:
        if not b.elementwise(node):
            raise Unsupported(f"operator {node.get('target')} before the row-wise operation is not elementwise")
    row = nodes[at]
    op = _canonical(row)
    src = row["args"][0]
    in_shape = b.nodes[src["node"]]["shape"]
    kw, attrs = row.get("kwargs") or {}, row.get("attrs") or {}
    if op == "layer_norm":
        norm = attrs.get("normalized_shape", kw.get("normalized_shape", row["args"][1] if len(row["args"]) > 1 else None))
        norm = [norm] if isinstance(norm, int) else list(norm)
        dims = list(range(len(in_shape) - len(norm), len(in_shape)))
    else:
        dim = attrs.get("dim", kw.get("dim", row["args"][1] if len(row["args"]) > 1 else None))
        if dim is None:
            dims = list(range(len(in_shape)))
        else:
            dims = [dim] if isinstance(dim, int) else list(dim)
        dims = sorted(d % len(in_shape) for d in dims)
    if dims != list(range(dims[0], dims[-1] + 1)):
        raise Unsupported(f"{row['target']} over non-adjacent dims {dims}")
    outer = math.prod(in_shape[:dims[0]])
    reduce = math.prod(in_shape[dims[0]:dims[-1] + 1])
    inner = math.prod(in_shape[dims[-1] + 1:])
    if inner != 1 and op not in ("sum", "mean", "max", "min"):
        raise Unsupported(f"{row['target']} over a dim that is not the last one")
    if op in ("max", "min") and row["op"] == "call_function" and len(row["args"]) > 1 and row.get("target") in ("max", "min"):
        raise Unsupported(f"torch.{row['target']}(x, dim) returns values and indices; use amax/amin")
    main_expr = b.value(src)
    prologue, b.body = b.body, []
    plan = Plan("rowwise", row["shape"], row_op=op, outer=outer, reduce=reduce, inner=inner,
                eps=float(attrs.get("eps", kw.get("eps", 1e-5))) if op == "layer_norm" else 1e-5,
                describe=f"one row-wise {op} kernel (rows of {reduce}) with {at} fused operator(s) before it")
    plan.prologue = prologue + [f"const float pre = {main_expr};"]
    if op == "layer_norm" and row["op"] == "call_module":
        for pname in ("weight", "bias"):
            if pname in (row.get("params") or {}):
                full = f"{row['module']}.{pname}"
                plan.affine.append(b.operand("param", full, analysis["params"][full]))
    b.values[row["name"]] = "ROW"
    for node in nodes[at + 1:]:
        if not b.elementwise(node):
            raise Unsupported(f"operator {node.get('target')} after {row['target']} is not elementwise")
    out = _output_node(analysis)
    plan.operands = list(b.operands.values())
    main = [o for o in plan.operands if "LOAD_" + o.name in " ".join(plan.prologue)]
    if len(main) != 1 or main[0].source != "input":
        raise Unsupported("the row-wise operation must read one input tensor")
    plan.main = main[0]
    plan.body = b.body + [f"const float result = {b.values[out]};"]
    if any(o is not plan.main and o not in plan.affine for o in plan.operands):
        raise Unsupported("tensors other than the input around a row-wise operation")
    return plan


def _gemm_plan(analysis, nodes):
    b = _Builder(analysis)
    first = nodes[0]
    op = _canonical(first)
    x_arg = first["args"][0]
    x_node = b.nodes[x_arg["node"]]
    if x_node["op"] != "placeholder":
        raise Unsupported("the matrix product must read a model input")
    x = b.operand("input", b.inputs.index(x_node), x_node["shape"])
    if op == "linear":
        if first["op"] == "call_module":
            wname = f"{first['module']}.weight"
            bias = f"{first['module']}.bias" if "bias" in (first.get("params") or {}) else None
        else:
            w_arg = first["args"][1]
            wname = b.nodes[w_arg["node"]]["target"]
            bias_arg = first["args"][2] if len(first["args"]) > 2 else first.get("kwargs", {}).get("bias")
            bias = b.nodes[bias_arg["node"]]["target"] if isinstance(bias_arg, dict) else None
        wshape = analysis["params"][wname]
        weight = Operand("w", "param", wname, wshape)
        n, k = wshape
        transposed = True
    else:
        other = b.nodes[first["args"][1]["node"]]
        if other["op"] != "placeholder":
            raise Unsupported("matmul with a non-input right operand")
        weight = Operand("w", "input", b.inputs.index(other), other["shape"])
        k, n = other["shape"][-2:]
        bias, transposed = None, False
    if len(x_node["shape"]) < 2 or x_node["shape"][-1] != k:
        raise Unsupported(f"matrix shapes {x_node['shape']} and {weight.shape} do not multiply as planned")
    batch = math.prod(x_node["shape"][:-2]) if op == "matmul" and len(x_node["shape"]) > 2 else 1
    if batch > 1 and len(weight.shape) != len(x_node["shape"]):
        raise Unsupported("broadcast batched matmul")
    m = math.prod(x_node["shape"][:-1]) // batch
    b.values[first["name"]] = "acc" if bias is None else "(acc + LOAD_" + b.operand("param", bias, analysis["params"][bias]).name + ")"
    b.operands.pop(("input", x.ref), None)
    for node in nodes[1:]:
        if not b.elementwise(node):
            raise Unsupported(f"operator {node.get('target')} after the matrix product is not elementwise")
    out = _output_node(analysis)
    plan = Plan("gemm", b.nodes[out]["shape"], main=x, weight=weight, transposed_b=transposed, m=m, n=n, k=k,
                batch=batch, describe=f"GEMM ({m}x{k} by {k}x{n}) with {len(nodes) - 1} operator(s) fused after it")
    _finish(b, plan, out)
    for o in plan.operands:
        if math.prod(o.shape) not in (1, n) or (o.shape and o.shape[-1] != n and math.prod(o.shape) != 1):
            raise Unsupported(f"an epilogue tensor of shape {o.shape} that is not per-column")
    return plan
