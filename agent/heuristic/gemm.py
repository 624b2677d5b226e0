"""The GEMM family's C++ kernel for the CPU target: OpenBLAS's sgemm per output tile (ks_gemm.h), then the epilogue."""

import dataclasses
import math

from agent.heuristic.emit import CPP_PRELUDE, PARALLEL_FLOPS, op_function, row_epilogue

# The headers beside this module that the kernel includes, copied into the workspace's kernels/.
HEADERS = ("ks_blas.h", "ks_gemm.h")


def cpp_gemm(plan):
    names = [o.name for o in plan.operands]
    ptrs = "".join(f"const float* __restrict__ {n}, " for n in names)
    m, n, k, batch = plan.m, plan.n, plan.k, plan.batch
    # Epilogue operands are per column or scalars (the planner's rule), whatever their rank: seen as [n] or [1].
    operands = [dataclasses.replace(o, shape=[math.prod(o.shape)]) for o in plan.operands]
    epilogue = row_epilogue(operands, [batch * m, n], n, plan.body)
    parallel = f"{batch}LL * {m}LL * {n}LL * {k}LL >= {PARALLEL_FLOPS}LL"  # C: m may be the run-time batch's
    w_stride = k * n if batch > 1 else 0
    return (
        CPP_PRELUDE
        + '#include "ks_gemm.h"\n'
        + op_function("epi_op", ["acc"] + [f"LOAD_{name}" for name in names], plan.body, qualifier="static inline ")
        + f"""
void run_fused(const float* __restrict__ x, const float* __restrict__ w, {ptrs}float* __restrict__ out) {{
    // {f"{batch} x " if batch > 1 else ""}{m}x{k} by {k}x{n}{", w stored [n, k]" if plan.transposed_b else ""}
    const KsGemm g{{{batch}, {m}, {n}, {k}, {str(plan.transposed_b).lower()}, {w_stride}}};
    ks_gemm(g, x, w, out, {parallel}, {epilogue});
}}
"""
    )
