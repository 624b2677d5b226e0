"""The convolution family's C++ kernel for the CPU target: im2col or col2im, then OpenBLAS's sgemm (ks_conv.h)."""

import math

from agent.heuristic.emit import CPP_PRELUDE, PARALLEL_FLOPS, op_function, row_epilogue

# The headers beside this module that the kernel includes, copied into the workspace's kernels/.
HEADERS = ("ks_blas.h", "ks_conv.h")


def _padded(values, pad, fill):
    return "{" + ", ".join(str(v) for v in [fill] * pad + list(values)) + "}"


def cpp_conv(plan):
    c = plan.conv
    pad = 3 - c["dims"]
    n, cin = c["in_shape"][:2]
    cout = c["conv_shape"][1]
    names = [o.name for o in plan.operands]
    ptrs = "".join(f"const float* __restrict__ {name}, " for name in names)
    spatial_in, spatial_out = c["in_shape"][2:], c["conv_shape"][2:]
    geometry = ", ".join(
        [
            str(n),
            str(cin),
            str(cout),
            str(c["groups"]),
            _padded(spatial_in, pad, 1),
            _padded(spatial_out, pad, 1),
            _padded(c["w_shape"][2:], pad, 1),
            _padded(c["stride"], pad, 1),
            _padded(c["padding"], pad, 0),
            _padded(c["dilation"], pad, 1),
        ]
    )
    # Multiply-adds: each output position (input position, when transposed) of each sample meets
    # cin/groups x cout x kernel weights. A C expression: the batch may be the run-time one.
    positions = math.prod(spatial_in if c["transposed"] else spatial_out)
    per_sample = positions * cin * cout // c["groups"] * math.prod(c["w_shape"][2:])
    parallel = f"{n}LL * {per_sample}LL >= {PARALLEL_FLOPS}LL"
    epilogue = row_epilogue(plan.operands, plan.out_shape, math.prod(spatial_out), plan.body)
    run = "ks_conv_transposed" if c["transposed"] else "ks_conv"
    return (
        CPP_PRELUDE
        + '#include "ks_conv.h"\n'
        + op_function("epi_op", ["acc"] + [f"LOAD_{name}" for name in names], plan.body, qualifier="static inline ")
        + f"""
void run_fused(const float* __restrict__ x, const float* __restrict__ w, {ptrs}float* __restrict__ out) {{
    // batch, cin, cout, groups, then (depth, height, width) of input, output, kernel, stride, padding, dilation
    const KsConv c{{{geometry}}};
    {run}(c, x, w, out, {parallel}, {epilogue});
}}
"""
    )
