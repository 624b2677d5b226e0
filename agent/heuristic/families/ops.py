"""The chain planner's operator vocabulary: elementwise operators as C expressions of float values (one table
serves CUDA and C++), torch's names for them, and which operators need a kernel of their own."""


def c_float(x):
    """X as a C float literal (infinities and NaN as the macros of math.h)."""
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


def canonical(node):
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


def is_binary_minmax(node):
    return canonical(node) in ("maximum", "minimum")


def starts_stage(node):
    """Whether NODE is an operator that needs a kernel of its own (a reduction, a norm, a pool)."""
    op = canonical(node)
    return (op in ROW_OPS and not is_binary_minmax(node)) or op in POOLS


def ends_stage(node):
    """Whether a stage's fused operators end at NODE: a kernel of its own (a later stage) starts there, or a reshape
    between stages."""
    return starts_stage(node) or canonical(node) in PRODUCTS | RESHAPES
