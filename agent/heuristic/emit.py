"""C building blocks the kernel families share: broadcast offsets, op functions, the C++ prelude, template files."""

import functools
import math
from pathlib import Path


def offset(op_shape, out_shape, index="i"):
    """C expression of the element of an operand broadcast to OUT_SHAPE that goes with flat output INDEX."""
    if list(op_shape) == list(out_shape):
        return index
    if math.prod(op_shape) == 1:
        return "0"
    shape = [1] * (len(out_shape) - len(op_shape)) + list(op_shape)
    terms, stride = [], 1
    strides = []
    for size in reversed(shape):
        strides.append(stride)
        stride *= size
    strides.reverse()
    inner = 1
    inners = []
    for size in reversed(out_shape):
        inners.append(inner)
        inner *= size
    inners.reverse()
    for d, (size, out_size) in enumerate(zip(shape, out_shape)):
        if size == 1:
            continue
        coord = f"(({index} / {inners[d]}LL) % {out_size}LL)" if d else f"({index} / {inners[d]}LL)"
        terms.append(f"{coord} * {strides[d]}LL" if strides[d] != 1 else coord)
    return " + ".join(terms) or "0"


def op_function(name, params, body, result="result", qualifier=""):
    args = ", ".join(f"float {p}" for p in params)
    lines = "\n".join("    " + line for line in body)
    return f"{qualifier}float {name}({args}) {{\n{lines}\n    return {result};\n}}\n"


@functools.lru_cache(maxsize=None)
def template(name):
    """The text of a C++ template file of this folder (e.g. gemm.cpp): real sources an editor highlights."""
    return Path(__file__).with_name(name).read_text()


PARALLEL_ELEMENTS = 1 << 16
PARALLEL_FLOPS = 1 << 22
CPP_PRELUDE = r"""#include <cstdint>
#include <cmath>
#include <limits>
#include <cstring>
#include <algorithm>
// Branch-free float math, so that `omp simd` loops vectorize instead of calling scalar libm per element.
// Clamps as comparisons: std::fmin/fmax keep NaN semantics and become libm calls the vectorizer cannot use.
static inline float ks_clamp(float x, float lo, float hi) { return x < lo ? lo : (x > hi ? hi : x); }
static inline float ks_pow2(int32_t k) {  // 2^k for k in [-126, 127]
    const int32_t bits = (k + 127) << 23;
    float scale;
    std::memcpy(&scale, &bits, sizeof scale);
    return scale;
}
// exp over float's whole range: 2^k applied in two halves, so that results past 2^127 round to inf and those
// under 2^-126 to float's subnormals and 0, as libm's; NaN stays NaN.
static inline float ks_expf(float x) {
    const float c = ks_clamp(x, -104.0f, 88.7228394f);
    const float k = std::floor(c * 1.44269504088896341f + 0.5f);
    const float r = c - k * 0.693359375f + k * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f; p = p * r + 8.3334519073e-3f; p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f; p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    const int32_t half = (int32_t)k / 2;
    const float e = p * ks_pow2(half) * ks_pow2((int32_t)k - half);
    return x != x ? x : (x > 88.7228394f ? INFINITY : e);
}
static inline float ks_erff(float x) {
    // Abramowitz and Stegun 7.1.26: absolute error below 1.5e-7.
    const float a = std::fabs(x);
    const float t = 1.0f / (1.0f + 0.3275911f * a);
    const float y = 1.0f - (((((1.061405429f * t - 1.453152027f) * t) + 1.421413741f) * t - 0.284496736f) * t
                            + 0.254829592f) * t * ks_expf(-a * a);
    return x < 0.0f ? -y : y;
}
// tanh: Cephes' odd polynomial under 0.625, where 1 - 2 / (e^2|x| + 1) would lose its relative accuracy; past 10
// the latter is 1.0f exactly, as the true value rounds to it.
static inline float ks_tanhf(float x) {
    const float a = std::fabs(x), z = x * x;
    float p = -5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f; p = p * z - 5.37397155531e-2f; p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    const float small = x + x * z * p;
    const float big = 1.0f - 2.0f / (ks_expf(2.0f * ks_clamp(a, 0.0f, 10.0f)) + 1.0f);
    const float r = a < 0.625f ? small : (x < 0.0f ? -big : big);
    return x != x ? x : r;
}
static inline float ks_bits_to_float(int32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}
static inline int32_t ks_float_to_bits(float f) {
    int32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    return bits;
}
// log: x = 2^e m with m in [sqrt(1/2), sqrt(2)), log(m) by Cephes' polynomial in m - 1 (exact), e ln 2 in two parts;
// subnormals are scaled into the normals first. 0 gives -inf, a negative number NaN, inf inf, NaN NaN, as libm's.
static inline float ks_logf(float x) {
    // integer masks rather than a bool select: GCC 12 does not vectorize this loop with the latter
    const int32_t raw = ks_float_to_bits(x);
    const int32_t subnormal = (int32_t)((uint32_t)(raw & 0x7f800000) - 1u) >> 31;  // -1 for 0 and subnormals, else 0
    const int32_t bits = (ks_float_to_bits(x * 8388608.0f) & subnormal) | (raw & ~subnormal);
    const float m = ks_bits_to_float((bits & 0x007fffff) | 0x3f000000);  // in [0.5, 1)
    const bool low = m < 0.707106781186547524f;
    const float e = (float)(((bits >> 23) & 0xff) - 126 - (subnormal & 23) - (int32_t)low);
    const float f = low ? m + m - 1.0f : m - 1.0f, z = f * f;
    float p = 7.0376836292e-2f;
    p = p * f - 1.1514610310e-1f; p = p * f + 1.1676998740e-1f; p = p * f - 1.2420140846e-1f;
    p = p * f + 1.4249322787e-1f; p = p * f - 1.6668057665e-1f; p = p * f + 2.0000714765e-1f;
    p = p * f - 2.4999993993e-1f; p = p * f + 3.3333331174e-1f;
    float r = (f + (p * f * z - 2.12194440e-4f * e - 0.5f * z)) + 0.693359375f * e;
    r = x == INFINITY ? x : r;
    r = x == 0.0f ? -INFINITY : r;
    r = x < 0.0f ? std::numeric_limits<float>::quiet_NaN() : r;
    return x != x ? x : r;
}
// log1p: log(u) for u = 1 + x rounded, plus that rounding's error over u (the error exactly, by Knuth's TwoSum), so
// that small x keep their relative accuracy; -1 gives -inf, below it NaN, inf inf.
static inline float ks_log1pf(float x) {
    const float u = 1.0f + x, back = u - x;
    const float c = (1.0f - back) + (x - (u - back));
    float r = ks_logf(u) + c / u;
    r = x == -1.0f ? -INFINITY : r;
    r = x == INFINITY ? x : r;
    return u == 1.0f ? x : r;
}
static inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
static inline float ks_fmax(float a, float b) { return a > b ? a : b; }
static inline float ks_fmin(float a, float b) { return a < b ? a : b; }
#define fmaxf(a, b) ks_fmax(a, b)
#define fminf(a, b) ks_fmin(a, b)
#define expf(x) ks_expf(x)
#define erff(x) ks_erff(x)
#define tanhf(x) ks_tanhf(x)
#define logf(x) ks_logf(x)
#define log1pf(x) ks_log1pf(x)
"""


def row_epilogue(operands, out_shape, inner, body):
    """A C++ lambda (row, j0, j1) finishing elements [j0, j1) of row `row` of `out`, seen as [numel / INNER, INNER],
    with epi_op(acc, LOAD_<operand>...) made of BODY (defined before it, in the kernel's file). An operand constant
    along the row is read once per row, one contiguous along it through a pointer, any other through its offset."""
    if body == ["const float result = acc;"]:
        return "[](int64_t, int64_t, int64_t) {}"
    lead = next(d for d in range(len(out_shape) + 1) if math.prod(out_shape[d:]) == inner)
    setup, args = [], []
    for o in operands:
        shape = [1] * (len(out_shape) - len(o.shape)) + list(o.shape)
        if shape[lead:] == list(out_shape[lead:]):
            setup.append(f"const float* __restrict__ p_{o.name} = {o.name} + ({offset(o.shape, out_shape, 'base')});")
            args.append(f"p_{o.name}[j]")
        elif all(size == 1 for size in shape[lead:]):
            setup.append(f"const float s_{o.name} = {o.name}[{offset(o.shape, out_shape, 'base')}];")
            args.append(f"s_{o.name}")
        else:
            args.append(f"{o.name}[{offset(o.shape, out_shape, '(base + j)')}]")
    lines = "".join(f"\n        {line}" for line in setup)
    return f"""[&](int64_t row, int64_t j0, int64_t j1) {{
        const int64_t base = row * {inner}LL;
        float* __restrict__ y = out + base;{lines}
        #pragma omp simd
        for (int64_t j = j0; j < j1; ++j) y[j] = epi_op(y[j]{"".join(", " + a for a in args)});
    }}"""


def scalar_checks(scalars):
    """forward's checks that each scalar input has the value the kernels were written for."""
    return "".join(
        f'        if inputs[{i}] != {v!r}:\n            raise ValueError(f"input {i} is {{inputs[{i}]!r}}; '
        f'these kernels were written for {v!r}")\n'
        for i, v in sorted(scalars.items())
    )


def model_new_source(describe, preload, problem_source, params, checks, call, methods=""):
    """model_new.py of a heuristic plan: the reference's parameters, the scalar CHECKS, then `ops.fused(CALL)`;
    METHODS: more of ModelNew's methods (a DAG plan's folded values)."""
    return f'''"""Written by Kernel Studio's heuristic policy: {describe}."""
import torch
import torch.nn as nn

from sandbox.native import load_extension
{preload}
ops = load_extension(__file__)

# The reference module, used only to create the same parameters with the same initialization.
PROBLEM_SOURCE = {problem_source!r}
_reference = {{}}
exec(compile(PROBLEM_SOURCE, "problem.py", "exec"), _reference)


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        reference = _reference["Model"](*args, **kwargs)
        for name, child in reference.named_children():
            self.add_module(name, child)
        for name, parameter in reference.named_parameters(recurse=False):
            self.register_parameter(name, parameter)
        for name, buffer in reference.named_buffers(recurse=False):
            self.register_buffer(name, buffer)
        # Looked up once: loading a state dict or .to(device) updates these same Parameter objects in place.
        self._ks_params = [self.get_parameter(name) for name in {params!r}]
{methods}
    def forward(self, *inputs):
{checks}        return ops.fused({call})
'''


def c_string(text):
    """TEXT as a C string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def shapes_note(reason=None):
    """What the binding's shape errors add: that dim 0 follows the batch, or why the kernels keep the problem's
    shapes (REASON)."""
    if reason is None:
        return " (dim 0 of the inputs, the batch, may take any size; the other dims are the problem's)"
    return f" (these kernels were written for the problem's shapes only: {reason[:300]})"


# The binding's checks of its arguments (ks_checks.h, a header of the kernel library every workspace starts with).
BINDING_CHECKS = '#include "kernels/ks_checks.h"\n'


def binding_checks(args, reason):
    """(definitions, calls) of the checks of ARGS: (C name, label, shape or None for a parameter, numel). REASON: why
    the kernels keep the problem's shapes, None when they read the batch size at run time."""
    calls = "".join(
        f"    check({name}, {{{', '.join(f'{d}LL' for d in shape)}}}, {c_string(label)});\n"
        if shape is not None
        else f"    check_numel({name}, {numel}LL, {c_string(label)});\n"
        for name, label, shape, numel in args
    )
    return f"static const char* KS_SHAPES = {c_string(shapes_note(reason))};\n" + BINDING_CHECKS, calls


def batch_prologue(name, label):
    """The binding's first lines where the kernels read the batch size at run time: dim 0 of input NAME, given to
    the kernels' file (ks_set_batch) under a lock, since they read it from one variable."""
    return (
        f'    if ({name}.dim() < 1) throw std::runtime_error("{label} must have a batch dimension");\n'
        f"    const int64_t ks_batch = {name}.sizes()[0];\n"
        "    static std::mutex ks_lock;\n"
        "    std::lock_guard<std::mutex> ks_guard(ks_lock);\n"
        "    ks_set_batch(ks_batch);\n"
    )


BATCH_DECLARATION = "#include <mutex>\nvoid ks_set_batch(int64_t batch);\n"
