"""From an analyzed graph to a fusion plan: one elementwise kernel, one row-wise kernel, a GEMM or a convolution
with a fused epilogue (and, after it, one row-wise kernel over its result). Anything else is named as the operator
that stops the plan (no fallback is ever written)."""

import math
import re
from dataclasses import dataclass, field

from agent.heuristic.errors import Unsupported


def _f(x):
    return f"{float(x)!r}f".replace("inff", "INFINITY").replace("nanf", "NAN")


# Elementwise operators as C expressions of {x} (and named attributes). One table serves CUDA and C++.
UNARY = {
    "relu": "fmaxf({x}, 0.0f)",
    "sigmoid": "(1.0f / (1.0f + expf(-({x}))))",
    "tanh": "tanhf({x})",
    "gelu": "(0.5f * ({x}) * (1.0f + erff(({x}) * 0.70710678118654752f)))",
    "gelu_tanh": "(0.5f * ({x}) * (1.0f + tanhf(0.7978845608028654f * (({x}) + 0.044715f * ({x}) * ({x}) * ({x})))))",
    "silu": "(({x}) / (1.0f + expf(-({x}))))",
    "exp": "expf({x})",
    "log": "logf({x})",
    "abs": "fabsf({x})",
    "neg": "(-({x}))",
    "sqrt": "sqrtf({x})",
    "rsqrt": "rsqrtf({x})",
    "sin": "sinf({x})",
    "cos": "cosf({x})",
    "reciprocal": "(1.0f / ({x}))",
    "softsign": "(({x}) / (1.0f + fabsf({x})))",
    "square": "(({x}) * ({x}))",
    "mish": "(({x}) * tanhf(({x}) > 20.0f ? ({x}) : log1pf(expf({x}))))",
    "softplus": "(({x}) * {beta} > {threshold} ? ({x}) : log1pf(expf(({x}) * {beta})) / {beta})",
    "elu": "(({x}) > 0.0f ? ({x}) : {alpha} * (expf({x}) - 1.0f))",
    "selu": "(1.0507009873554805f * (({x}) > 0.0f ? ({x}) : 1.6732632423543772f * (expf({x}) - 1.0f)))",
    "leaky_relu": "(({x}) > 0.0f ? ({x}) : {slope} * ({x}))",
    "clamp": "fminf(fmaxf({x}, {lo}), {hi})",
    "hardswish": "(({x}) * fminf(fmaxf(({x}) + 3.0f, 0.0f), 6.0f) / 6.0f)",
    "hardsigmoid": "fminf(fmaxf(({x}) / 6.0f + 0.5f, 0.0f), 1.0f)",
    "identity": "({x})",
    "celu": "(({x}) > 0.0f ? ({x}) : {alpha} * (expf(({x}) / {alpha}) - 1.0f))",
    "logsigmoid": "(fminf({x}, 0.0f) - log1pf(expf(-fabsf({x}))))",
    "relu6": "fminf(fmaxf({x}, 0.0f), 6.0f)",
    "tanhshrink": "(({x}) - tanhf({x}))",
    "softshrink": "(({x}) > {lambd} ? ({x}) - {lambd} : (({x}) < -{lambd} ? ({x}) + {lambd} : 0.0f))",
    "hardshrink": "((({x}) > {lambd} || ({x}) < -{lambd}) ? ({x}) : 0.0f)",
    "threshold": "(({x}) > {threshold} ? ({x}) : {value})",
    "acos": "acosf({x})",
    "asin": "asinf({x})",
    "atan": "atanf({x})",
    "asinh": "asinhf({x})",
    "atanh": "atanhf({x})",
    "sinh": "sinhf({x})",
    "cosh": "coshf({x})",
    "tan": "tanf({x})",
    "ceil": "ceilf({x})",
    "floor": "floorf({x})",
    "round": "rintf({x})",
    "trunc": "truncf({x})",
    "erf": "erff({x})",
    "erfc": "erfcf({x})",
    "exp2": "exp2f({x})",
    "expm1": "expm1f({x})",
    "log2": "log2f({x})",
    "log10": "log10f({x})",
    "log1p": "log1pf({x})",
    "lgamma": "lgammaf({x})",
    "deg2rad": "(({x}) * 0.017453292519943295f)",
    "rad2deg": "(({x}) * 57.29577951308232f)",
    "sign": "(({x}) > 0.0f ? 1.0f : (({x}) < 0.0f ? -1.0f : ({x})))",
    "sinc": "(({x}) == 0.0f ? 1.0f : sinf(3.14159265358979f * ({x})) / (3.14159265358979f * ({x})))",
    "logit": "logf(fminf(fmaxf({x}, {lo}), {hi}) / (1.0f - fminf(fmaxf({x}, {lo}), {hi})))",
}
BINARY = {
    "add": "(({a}) + ({b}))",
    "sub": "(({a}) - ({b}))",
    "mul": "(({a}) * ({b}))",
    "div": "(({a}) / ({b}))",
    "maximum": "fmaxf({a}, {b})",
    "minimum": "fminf({a}, {b})",
    "pow": "powf({a}, {b})",
    "rsub": "(({b}) - ({a}))",
    "atan2": "atan2f({a}, {b})",
    "hypot": "hypotf({a}, {b})",
    "copysign": "copysignf({a}, {b})",
    "fmax": "fmaxf({a}, {b})",
    "fmin": "fminf({a}, {b})",
    "fmod": "fmodf({a}, {b})",
    "ldexp": "(({a}) * exp2f({b}))",
    # Python's modulo: the remainder takes the divisor's sign
    "remainder": "(fmodf({a}, {b}) != 0.0f && ((({b}) < 0.0f) != (fmodf({a}, {b}) < 0.0f)) "
    "? fmodf({a}, {b}) + ({b}) : fmodf({a}, {b}))",
    "logaddexp": "(fmaxf({a}, {b}) + log1pf(expf(-fabsf(({a}) - ({b})))))",
    "logaddexp2": "(fmaxf({a}, {b}) + log2f(1.0f + exp2f(-fabsf(({a}) - ({b})))))",
}
ALIASES = {
    "truediv": "div",
    "true_divide": "div",
    "divide": "div",
    "multiply": "mul",
    "subtract": "sub",
    "iadd": "add",
    "imul": "mul",
    "isub": "sub",
    "itruediv": "div",
    "relu_": "relu",
    "sigmoid_": "sigmoid",
    "tanh_": "tanh",
    "add_": "add",
    "mul_": "mul",
    "sub_": "sub",
    "div_": "div",
    "clamp_": "clamp",
    "clip": "clamp",
    "hardtanh": "clamp",
    "swish": "silu",
    "max_binary": "maximum",
    "min_binary": "minimum",
    "ReLU": "relu",
    "Sigmoid": "sigmoid",
    "Tanh": "tanh",
    "GELU": "gelu",
    "SiLU": "silu",
    "Mish": "mish",
    "Softplus": "softplus",
    "ELU": "elu",
    "SELU": "selu",
    "LeakyReLU": "leaky_relu",
    "Hardtanh": "clamp",
    "Hardswish": "hardswish",
    "Hardsigmoid": "hardsigmoid",
    "Softsign": "softsign",
    "Identity": "identity",
    "softmax": "softmax",
    "Softmax": "softmax",
    "log_softmax": "log_softmax",
    "LogSoftmax": "log_softmax",
    "amax": "max",
    "amin": "min",
    "Linear": "linear",
    "matmul": "matmul",
    "mm": "matmul",
    "bmm": "matmul",
    "LayerNorm": "layer_norm",
    "layer_norm": "layer_norm",
    "logsumexp": "logsumexp",
    "Dropout": "dropout",
    "dropout": "dropout",
    "Conv1d": "conv",
    "Conv2d": "conv",
    "Conv3d": "conv",
    "ConvTranspose1d": "conv",
    "ConvTranspose2d": "conv",
    "ConvTranspose3d": "conv",
    "GroupNorm": "group_norm",
    "InstanceNorm1d": "instance_norm",
    "InstanceNorm2d": "instance_norm",
    "InstanceNorm3d": "instance_norm",
    "MaxPool1d": "max_pool",
    "MaxPool2d": "max_pool",
    "MaxPool3d": "max_pool",
    "max_pool1d": "max_pool",
    "max_pool2d": "max_pool",
    "max_pool3d": "max_pool",
    "AvgPool1d": "avg_pool",
    "AvgPool2d": "avg_pool",
    "AvgPool3d": "avg_pool",
    "avg_pool1d": "avg_pool",
    "avg_pool2d": "avg_pool",
    "avg_pool3d": "avg_pool",
    "Flatten": "flatten",
    "BatchNorm1d": "batch_norm",
    "BatchNorm2d": "batch_norm",
    "BatchNorm3d": "batch_norm",
    "negative": "neg",
    "absolute": "abs",
    "arccos": "acos",
    "arcsin": "asin",
    "arctan": "atan",
    "arcsinh": "asinh",
    "arctanh": "atanh",
    "arctan2": "atan2",
    "fix": "trunc",
    "sgn": "sign",
    "CELU": "celu",
    "LogSigmoid": "logsigmoid",
    "ReLU6": "relu6",
    "Tanhshrink": "tanhshrink",
    "Softshrink": "softshrink",
    "Hardshrink": "hardshrink",
    "Threshold": "threshold",
    "special_expit": "sigmoid",
    "special_erf": "erf",
    "special_exp2": "exp2",
    "special_expm1": "expm1",
    "special_logit": "logit",
    "special_sinc": "sinc",
    "special_round": "round",
    "special_erfc": "erfc",
    "special_log1p": "log1p",
    "log_sigmoid": "logsigmoid",
    "_threshold": "threshold",
    "exp_": "exp",
    "neg_": "neg",
    "abs_": "abs",
    "sqrt_": "sqrt",
}
# Casts and copies of a float32 value to float32 (make_plan refuses every other dtype): identities.
CASTS = {"float", "to", "type_as", "contiguous", "clone", "detach"}
POOLS = {"max_pool", "avg_pool"}
PRODUCTS = {"linear", "matmul", "conv"}
# Reshapes of a stage's contiguous result cost nothing: the next stage reads the intermediate in the new shape.
RESHAPES = {"flatten", "view", "reshape", "unsqueeze", "squeeze"}
ROW_OPS = {
    "softmax",
    "log_softmax",
    "layer_norm",
    "logsumexp",
    "sum",
    "mean",
    "max",
    "min",
    "norm",
    "group_norm",
    "instance_norm",
    "batch_norm",
}
# Normalized over rows with mean and variance (then an affine transform): layer norm over the last dims; group and
# instance norm over each (sample, group) of [N, C, *spatial], contiguous, their affine per channel.
NORMS = {"layer_norm", "group_norm", "instance_norm", "batch_norm"}


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


class _Builder:
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
                    return _f(value)
                if node["op"] == "placeholder":
                    op = self.operand("input", self.inputs.index(node), node["shape"])
                    self.values[name] = f"LOAD_{op.name}"
                elif node["op"] == "get_attr" and "value" in node:
                    return _f(node["value"])
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
            if p and kw.get("training") is not False:
                raise Unsupported("dropout with p > 0 in training mode (random: not a deterministic problem)")
            op = "identity"
        if (
            op == "getitem"
            and len(args) == 2
            and args[1] == 0
            and isinstance(args[0], dict)
            and _canonical(self.nodes[args[0]["node"]]) in ("max", "min")
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
                b = f"({_f(kw['alpha'])} * ({b}))"
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
            fields.update(lo=_f(-math.inf if lo is None else lo), hi=_f(math.inf if hi is None else hi))
        elif op == "leaky_relu":
            fields["slope"] = _f(
                attrs.get("negative_slope", kw.get("negative_slope", args[1] if len(args) > 1 else 0.01))
            )
        elif op == "elu":
            fields["alpha"] = _f(attrs.get("alpha", kw.get("alpha", args[1] if len(args) > 1 else 1.0)))
        elif op == "celu":
            fields["alpha"] = _f(attrs.get("alpha", kw.get("alpha", args[1] if len(args) > 1 else 1.0)))
        elif op in ("softshrink", "hardshrink"):
            fields["lambd"] = _f(attrs.get("lambd", kw.get("lambd", args[1] if len(args) > 1 else 0.5)))
        elif op == "threshold":  # F.threshold(x, threshold, value); nn.Threshold(threshold, value)
            cut = attrs.get("threshold", kw.get("threshold", args[1] if len(args) > 1 else None))
            value = attrs.get("value", kw.get("value", args[2] if len(args) > 2 else None))
            if not all(isinstance(v, (int, float)) for v in (cut, value)):
                raise Unsupported(f"threshold {node['name']}: its threshold and value must be numbers")
            fields.update(threshold=_f(cut), value=_f(value))
        elif op == "logit":  # torch.logit(x, eps): the input clamped to [eps, 1 - eps] first, when eps is given
            eps = kw.get("eps", args[1] if len(args) > 1 else None)
            fields.update(lo=_f(-math.inf if eps is None else eps), hi=_f(math.inf if eps is None else 1.0 - eps))
        elif op == "softplus":
            fields.update(
                beta=_f(attrs.get("beta", kw.get("beta", 1.0))),
                threshold=_f(attrs.get("threshold", kw.get("threshold", 20.0))),
            )
        elif op == "gelu" and (attrs.get("approximate") == "tanh" or kw.get("approximate") == "tanh"):
            op = "gelu_tanh"
        self.emit(node, UNARY[op].format(**fields))
        return True


def _canonical(node):
    target = node.get("target", "")
    if (
        node["op"] == "call_function"
        and target in ("max", "min")
        and len(node["args"]) == 2
        and isinstance(node["args"][1], dict)
        and "node" in node["args"][1]
    ):
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
    """The Plan for an analysis, or Unsupported naming the operator that stops it: the stage planner's chain of fused
    kernels where the graph is one, else the DAG planner's kernels over the ATen graph torch.export captured.

    Its `batch_plans` are the plans of the same analysis at three batch sizes (batch.py), from which the code
    generators write kernels that read the batch size at run time; or the reason they keep the problem's."""
    plan = _plan(analysis)
    plan.batch_plans = _batch_plans(analysis, plan)
    return plan


def _batch_plans(analysis, plan):
    """{"inputs", "size", "sizes", "plans"}: the plans at batch sizes SIZES (the problem's first where it is above
    1: its plan is the fast path), or {"reason"} when the batch size cannot be a run-time size."""
    from agent.heuristic.batch import at_batch, sample_sizes

    batch = analysis.get("batch") or {"reason": "the analysis did not vary the batch size"}
    if "reason" in batch:
        return {"reason": batch["reason"]}
    size = batch["size"]
    sizes = [size, *sample_sizes(size)] if size > 1 else [2, 3, 4]  # a batch of 1 would specialize its dims of 1
    plans = []
    for other in sizes:
        try:
            plans.append(plan if other == size else _plan(at_batch(analysis, other)))
        except Unsupported as exc:
            return {"reason": f"at batch size {other}: {exc}"}
        except Exception as exc:  # noqa: BLE001 -- the problem's own plan stands: its batch size is kept, and why
            return {"reason": f"at batch size {other}: {type(exc).__name__}: {exc}"}
    kinds = {p.kind for p in plans}
    if len(kinds) != 1:
        return {"reason": f"the plan at another batch size is of another kind ({', '.join(sorted(kinds))})"}
    return {"inputs": batch["inputs"], "size": size, "sizes": sizes, "plans": plans}


def _plan(analysis):
    if not analysis.get("ok"):
        raise Unsupported(analysis.get("reason", "the problem could not be analyzed"))
    chain_error = None
    if analysis.get("nodes"):
        try:
            return _chain_plan(analysis)
        except Unsupported as exc:
            chain_error = exc
    captured = analysis.get("aten") or {}
    if captured.get("ok"):
        from agent.heuristic.dag import plan_graph

        return plan_graph(captured)
    reason = captured.get("reason", "the problem could not be captured")
    raise Unsupported(f"{chain_error}; and no ATen graph for the DAG planner: {reason}" if chain_error else reason)


def _chain_plan(analysis):
    for n in analysis["nodes"]:
        if n["op"] != "output" and n.get("dtype") not in (None, "float32"):
            raise Unsupported(f"{n['name']} is {n['dtype']}; the heuristic writes float32 kernels")
    analysis = _without_identities(analysis)
    nodes = _compute_nodes(analysis)
    ops = [_canonical(n) for n in nodes]
    transposes = _input_transposes(analysis, nodes)
    stages = [i for i, node in enumerate(nodes) if _starts_stage(node)]
    if transposes and len(ops) > len(transposes) and ops[len(transposes)] == "matmul":
        nodes = nodes[len(transposes) :]
        plan, stop = _gemm_plan(analysis, nodes, transposes)
    elif ops and ops[0] in ("linear", "matmul"):
        plan, stop = _gemm_plan(analysis, nodes)
    elif ops and ops[0] == "conv":
        plan, stop = _conv_plan(analysis, nodes)
    elif stages:
        plan, stop = _stage_plan(analysis, nodes, stages[0])
    else:
        return _elementwise_plan(analysis, nodes)
    while stop is not None:
        # the next stage reads the result of the one before it, written to an intermediate tensor
        source = nodes[stop]["args"][0]["node"]
        while _canonical(nodes[stop]) in RESHAPES:
            source, stop = nodes[stop]["name"], stop + 1
            if stop == len(nodes):
                if source != _output_node(analysis):
                    raise Unsupported("a reshape of the last stage's result that is not the model's output")
                plan.final_shape = list(nodes[stop - 1]["shape"])  # the output is the result, reshaped: free
                return plan
            if nodes[stop]["args"][:1] != [{"node": source}]:
                raise Unsupported(f"operator {nodes[stop].get('target')} after a reshape does not read it")
        rest, prefix = nodes[stop:], f"u{len(plan.tails)}_"
        try:
            tail, after = _next_stage(_stage_analysis(analysis, source), rest, prefix)
        except Unsupported as exc:
            raise Unsupported(f"after {plan.describe.split(' (')[0]}: {exc}") from None
        plan.tails.append(tail)
        plan.describe += f", then {tail.describe}"
        stop = None if after is None else stop + after
    return plan


def _next_stage(analysis, nodes, prefix):
    """The plan of a stage after the first, NODES[0] its operator: a product, a row-wise operator or a pool."""
    op = _canonical(nodes[0])
    if op in ("linear", "matmul"):
        return _gemm_plan(analysis, nodes, prefix=prefix)
    if op == "conv":
        return _conv_plan(analysis, nodes, prefix=prefix)
    if not _starts_stage(nodes[0]):
        raise Unsupported(f"operator {nodes[0].get('target')} ({nodes[0]['name']}) right after a reshape")
    return _stage_plan(analysis, nodes, 0, prefix)


def _is_identity(node):
    """nn.Identity, and dropout that drops nothing (p = 0, or training=False)."""
    op, attrs, kw, args = _canonical(node), node.get("attrs") or {}, node.get("kwargs") or {}, node["args"]
    if op == "identity" or op in CASTS:
        return True
    if op == "dropout":
        p = attrs.get("p", kw.get("p", args[1] if len(args) > 1 else 0.5))
        return p == 0 or kw.get("training") is False
    return False


def _without_identities(analysis):
    """ANALYSIS with identity operators taken out, their users reading their input instead."""
    alias = {}

    def resolve(value):
        if isinstance(value, dict) and "node" in value:
            return {"node": alias.get(value["node"], value["node"])}
        if isinstance(value, list):
            return [resolve(v) for v in value]
        if isinstance(value, dict):
            return {k: resolve(v) for k, v in value.items()}
        return value

    nodes = []
    for node in analysis["nodes"]:
        node = {**node, "args": resolve(node["args"]), "kwargs": resolve(node.get("kwargs") or {})}
        if (
            node["op"] in ("call_function", "call_method", "call_module")
            and _is_identity(node)
            and node["args"]
            and isinstance(node["args"][0], dict)
            and "node" in node["args"][0]
        ):
            alias[node["name"]] = node["args"][0]["node"]
            continue
        nodes.append(node)
    return {**analysis, "nodes": _live(nodes)}


def _live(nodes):
    """NODES without the operators whose values nothing reads (dead code in forward gets no kernel)."""
    by_name = {n["name"]: n for n in nodes}
    live, stack = set(), [n["name"] for n in nodes if n["op"] in ("output", "placeholder")]

    def refs(value):
        if isinstance(value, dict) and "node" in value:
            yield value["node"]
        elif isinstance(value, (list, tuple)):
            for v in value:
                yield from refs(v)
        elif isinstance(value, dict):
            for v in value.values():
                yield from refs(v)

    while stack:
        name = stack.pop()
        if name in live or name not in by_name:
            continue
        live.add(name)
        stack += list(refs(by_name[name]["args"])) + list(refs(by_name[name].get("kwargs") or {}))
    return [n for n in nodes if n["name"] in live]


def _starts_stage(node):
    """Whether NODE is an operator that needs a kernel of its own (a reduction, a norm, a pool)."""
    op = _canonical(node)
    return (op in ROW_OPS and not _is_binary_minmax(node)) or op in POOLS


def _ends_stage(node):
    """Whether a stage's fused operators end at NODE: a kernel of its own (a later stage) starts there, or a reshape
    between stages."""
    return _starts_stage(node) or _canonical(node) in PRODUCTS | RESHAPES


def _stage_plan(analysis, nodes, at, prefix="t"):
    return (_pool_plan if _canonical(nodes[at]) in POOLS else _rowwise_plan)(analysis, nodes, at, prefix)


def _fuse_after(builder, nodes, start, what):
    """Fuse the elementwise operators NODES[START:] into BUILDER, up to the end (None) or up to the index of the
    first one that starts a stage of its own and reads what was fused; Unsupported names any other operator."""
    for i in range(start, len(nodes)):
        node = nodes[i]
        if builder.elementwise(node):
            continue
        if _ends_stage(node):
            source = node["args"][0]
            if not isinstance(source, dict) or source.get("node") not in builder.values:
                raise Unsupported(f"operator {node.get('target')} after {what} does not read the fused result")
            return i
        raise Unsupported(f"operator {node.get('target')} ({node['name']}) after {what} is not elementwise")
    return None


def _result_node(analysis, nodes, stop):
    """The node whose value a stage writes: the input of the next stage, or the model's output."""
    return nodes[stop]["args"][0]["node"] if stop is not None else _output_node(analysis)


def _stage_analysis(analysis, source):
    """ANALYSIS as a later stage sees it: SOURCE (the previous stage's result) is its only input; the model's own
    inputs and the values computed before it are out of its reach (reading them is Unsupported, by name)."""
    renamed = []
    for node in analysis["nodes"]:
        if node["name"] == source:
            renamed.append({**node, "op": "placeholder"})
        elif node["op"] == "placeholder":
            renamed.append({**node, "op": "input_of_an_earlier_stage"})
        else:
            renamed.append(node)
    return {**analysis, "nodes": renamed, "inputs": [{}]}


def _is_binary_minmax(node):
    return _canonical(node) in ("maximum", "minimum")


def _finish(builder, plan, result_node):
    plan.scalars = dict(builder.scalars)
    plan.body = builder.body + [f"const float result = {builder.values[result_node]};"]
    plan.operands = [op for op in builder.operands.values()]
    return plan


def _elementwise_plan(analysis, nodes):
    b = _Builder(analysis)
    for node in nodes:
        if not b.elementwise(node):
            raise Unsupported(
                f"operator {node.get('target')} ({node['name']}) is not elementwise and not one the heuristic fuses"
            )
    out = _output_node(analysis)
    if out not in b.values:
        b.value({"node": out})
    plan = Plan(
        "elementwise", b.nodes[out]["shape"], describe=f"one fused elementwise kernel over {len(nodes)} operator(s)"
    )
    return _finish(b, plan, out)


def _rowwise_plan(analysis, nodes, at, prefix="t"):
    b = _Builder(analysis, prefix)
    for node in nodes[:at]:
        if not b.elementwise(node):
            raise Unsupported(f"operator {node.get('target')} before the row-wise operation is not elementwise")
    row = nodes[at]
    op = _canonical(row)
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
    if op in ("max", "min") and row.get("target") in ("max", "min") and _output_node(analysis) == row["name"]:
        raise Unsupported(
            f"torch.{row['target']}(x, dim) returns values and indices; the heuristic computes values only"
        )
    main_expr = b.value(src)
    prologue, b.body = b.body, []
    # torch.max(x, dim) is a (values, indices) pair: its shape is that of the values taken from it.
    shape = row["shape"]
    if shape is None:
        taken = [n for n in nodes[at + 1 :] if n.get("target") == "getitem" and n["args"][0] == {"node": row["name"]}]
        shape = taken[0]["shape"] if taken else b.nodes[_output_node(analysis)]["shape"]
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
    stop = _fuse_after(b, nodes, at + 1, row["target"])
    out = _result_node(analysis, nodes, stop)
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


def _pool_plan(analysis, nodes, at, prefix="t"):
    """A max or average pool over the spatial dims of [N, C, *spatial], the elementwise operators before it fused
    as it reads (its input only) and those after it as it writes."""
    b = _Builder(analysis, prefix)
    pool = nodes[at]
    for node in nodes[:at]:
        if not b.elementwise(node):
            raise Unsupported(f"operator {node.get('target')} before {pool['target']} is not elementwise")
    op = _canonical(pool)
    src, args = pool["args"][0], pool["args"]
    kw, attrs = pool.get("kwargs") or {}, pool.get("attrs") or {}
    in_shape, pool_shape = b.nodes[src["node"]]["shape"], pool["shape"]
    dims = len(in_shape or []) - 2
    if dims not in (1, 2, 3) or pool_shape is None:
        raise Unsupported(f"{pool['target']} of a tensor that is not [N, C, *spatial] with 1-3 spatial dims")

    def arg(name, position, default):  # the module's attribute, or F.*_pool's keyword or positional argument
        return attrs[name] if name in attrs else kw.get(name, args[position] if len(args) > position else default)

    kernel = _per_dim(arg("kernel_size", 1, 1), dims)
    stride = arg("stride", 2, None)
    stride = kernel if stride in (None, [], ()) else _per_dim(stride, dims)
    padding = _per_dim(arg("padding", 3, 0), dims)
    if op == "max_pool":
        dilation, count_include_pad = _per_dim(arg("dilation", 4, 1), dims), True
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
    stop = _fuse_after(b, nodes, at + 1, pool["target"])
    out = _result_node(analysis, nodes, stop)
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


def _input_transposes(analysis, nodes):
    """{node name: input or parameter node} for the leading `B.T` of 2-D model inputs and parameters: a GEMM reads
    them transposed in place."""
    by_name = {n["name"]: n for n in analysis["nodes"]}
    out = {}
    for node in nodes:
        args = node["args"]
        if (
            node.get("target") != "getattr"
            or len(args) != 2
            or args[1] not in ("T", "mT")
            or not isinstance(args[0], dict)
        ):
            break
        source = by_name[args[0]["node"]]
        if source["op"] not in ("placeholder", "get_attr") or len(source["shape"] or []) != 2:
            break
        out[node["name"]] = source
    return out


def _gemm_plan(analysis, nodes, transposes=None, prefix="t"):
    transposes = transposes or {}
    b = _Builder(analysis, prefix)
    w_name = "w" if prefix == "t" else f"{prefix}w"  # a later stage's weight is an argument beside the first's
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
        weight = Operand(w_name, "param", wname, wshape)
        n, k = wshape
        transposed = True
    else:
        name = first["args"][1]["node"]
        other = transposes.get(name) or b.nodes[name]
        if other["op"] == "get_attr" and other["target"] in analysis["params"]:  # x @ W or x @ W.T of a parameter
            weight = Operand(w_name, "param", other["target"], analysis["params"][other["target"]])
        elif other["op"] != "placeholder":
            raise Unsupported("matmul with a right operand that is neither an input nor a parameter")
        else:
            weight = Operand(w_name, "input", b.inputs.index(other), other["shape"])
        if len(weight.shape) < 2:
            raise Unsupported(f"matmul with a right operand of shape {weight.shape}")
        if name in transposes:  # B.T of a stored [N, K]: the same layout as a linear layer's weight
            n, k = other["shape"]
            transposed = True
        else:
            k, n = other["shape"][-2:]
            transposed = False
        bias = None
    if len(x_node["shape"]) < 2 or x_node["shape"][-1] != k:
        raise Unsupported(f"matrix shapes {x_node['shape']} and {weight.shape} do not multiply as planned")
    batch = math.prod(x_node["shape"][:-2]) if op == "matmul" and len(x_node["shape"]) > 2 else 1
    if batch > 1 and len(weight.shape) == 2:
        batch = 1  # [..., M, K] @ [K, N]: one GEMM over all the leading rows
    elif batch > 1 and len(weight.shape) != len(x_node["shape"]):
        raise Unsupported("broadcast batched matmul")
    m = math.prod(x_node["shape"][:-1]) // batch
    b.values[first["name"]] = (
        "acc" if bias is None else "(acc + LOAD_" + b.operand("param", bias, analysis["params"][bias]).name + ")"
    )
    b.operands.pop(("input", x.ref), None)
    stop = _fuse_after(b, nodes, 1, "the matrix product")
    out, fused = _result_node(analysis, nodes, stop), (len(nodes) if stop is None else stop) - 1
    plan = Plan(
        "gemm",
        b.nodes[out]["shape"],
        main=x,
        weight=weight,
        transposed_b=transposed,
        m=m,
        n=n,
        k=k,
        batch=batch,
        describe=f"GEMM ({m}x{k} by {k}x{n}) with {fused} operator(s) fused after it",
    )
    _finish(b, plan, out)
    for o in plan.operands:
        if math.prod(o.shape) not in (1, n) or (o.shape and o.shape[-1] != n and math.prod(o.shape) != 1):
            raise Unsupported(f"an epilogue tensor of shape {o.shape} that is not per-column")
    return plan, stop


def _per_dim(value, dims):
    return [int(value)] * dims if isinstance(value, (int, float)) else [int(v) for v in value]


def _conv_plan(analysis, nodes, prefix="t"):
    b = _Builder(analysis, prefix)
    first = nodes[0]
    attrs = first.get("attrs") or {}
    x_node = b.nodes[first["args"][0]["node"]]
    if x_node["op"] != "placeholder":
        raise Unsupported("the convolution must read a model input")
    if attrs.get("padding_mode", "zeros") != "zeros":
        raise Unsupported(f"{first['target']} with padding_mode={attrs['padding_mode']!r}")
    if isinstance(attrs.get("padding"), str):
        raise Unsupported(f"{first['target']} with padding={attrs['padding']!r}")
    transposed = first["target"].startswith("ConvTranspose")
    dims = len(x_node["shape"]) - 2
    wname = f"{first['module']}.weight"
    bias = f"{first['module']}.bias" if "bias" in (first.get("params") or {}) else None
    x = Operand("x" if prefix == "t" else f"{prefix}x", "input", b.inputs.index(x_node), x_node["shape"])
    weight = Operand("w" if prefix == "t" else f"{prefix}w", "param", wname, analysis["params"][wname])
    out_shape = first["shape"]
    value = "acc"
    if bias is not None:
        # The bias is per output channel: shaped [C, 1, ...] so that it broadcasts along dim 1 of [N, C, ...].
        value = f"(acc + LOAD_{b.operand('param', bias, [out_shape[1]] + [1] * dims).name})"
    b.values[first["name"]] = value
    stop = _fuse_after(b, nodes, 1, first["target"])
    out, fused = _result_node(analysis, nodes, stop), (len(nodes) if stop is None else stop) - 1
    conv = {
        "transposed": transposed,
        "dims": dims,
        "in_shape": list(x_node["shape"]),
        "w_shape": list(weight.shape),
        "conv_shape": list(out_shape),
        "stride": _per_dim(attrs.get("stride", 1), dims),
        "padding": _per_dim(attrs.get("padding", 0), dims),
        "dilation": _per_dim(attrs.get("dilation", 1), dims),
        "output_padding": _per_dim(attrs.get("output_padding", 0), dims),
        "groups": int(attrs.get("groups", 1)),
    }
    plan = Plan(
        "conv",
        b.nodes[out]["shape"],
        main=x,
        weight=weight,
        conv=conv,
        describe=f"{first['target']} ({'x'.join(map(str, x_node['shape']))} -> "
        f"{'x'.join(map(str, out_shape))}) with {fused + (bias is not None)} operator(s) "
        "fused after it",
    )
    _finish(b, plan, out)
    if list(plan.out_shape) != list(out_shape):
        raise Unsupported(f"an epilogue that changes the shape {out_shape} of the convolution's output")
    return plan, stop
