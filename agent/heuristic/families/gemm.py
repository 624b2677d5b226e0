"""The GEMM family: a matrix product (a linear layer, matmul, a batch of them) by cuBLAS or OpenBLAS, with the
operators after it fused into one epilogue (templates/gemm.cu, .cpp; the C++ kernel's ks_gemm.h)."""

import dataclasses
import math

from agent.heuristic.emit import CPP_PRELUDE, PARALLEL_FLOPS, op_function, row_epilogue
from agent.heuristic.families.common import cuda_prelude, pointers
from agent.heuristic.families.template import render, snippet

# The headers beside agent/heuristic/emit.py that the C++ kernel includes, copied into the workspace's kernels/.
HEADERS = ("ks_blas.h", "ks_gemm.h")
# Row operations that add thousands of the GEMM's outputs up (see cuda).
SUMMING = ("sum", "mean", "logsumexp")
TRIVIAL = ["const float result = acc;"]  # an epilogue that leaves the product as it is


def cuda(plan, block):
    names = [o.name for o in plan.operands]
    m, n, k = plan.m, plan.n, plan.k
    # TF32 keeps a GEMM's own outputs within 1e-2 of PyTorch's FP32, but a later sum over thousands of them adds
    # their errors up: with a summing stage after it (sum, mean, logsumexp), the GEMM computes in full FP32.
    compute = (
        "CUBLAS_COMPUTE_32F"
        if any(t.kind == "rowwise" and t.row_op in SUMMING for t in plan.tails)
        else "CUBLAS_COMPUTE_32F_FAST_TF32"
    )
    shape = {"m": m, "n": n, "k": k, "compute": compute}
    if plan.transposed_b:
        gemm = snippet("gemm.cu", "gemm_transposed_b", **shape)
    elif plan.batch > 1:
        strides = {"w_stride": k * n, "x_stride": m * k, "out_stride": m * n}
        gemm = snippet("gemm.cu", "gemm_batched", **shape, **strides, batch=plan.batch)
    else:
        gemm = snippet("gemm.cu", "gemm", **shape)
    epilogue = ""
    if plan.body != TRIVIAL:
        total = plan.batch * m * n
        epilogue = render("gemm.cu", "launch_epilogue", total=total, args="".join(f"{name}, " for name in names))
    loads = "".join(f", {o.name}[{'0' if math.prod(o.shape) == 1 else 'i % N'}]" for o in plan.operands)
    return (
        cuda_prelude(block)
        + render("gemm.cu", "includes")
        + op_function(
            "epi_op", ["acc"] + [f"LOAD_{name}" for name in names], plan.body, qualifier="__device__ __forceinline__ "
        )
        + render("gemm.cu", "launch", pointers=pointers(names), n=n, loads=loads, gemm=gemm, epilogue=epilogue)
    )


def cpp(plan):
    names = [o.name for o in plan.operands]
    m, n, k, batch = plan.m, plan.n, plan.k, plan.batch
    # Epilogue operands are per column or scalars (the planner's rule), whatever their rank: seen as [n] or [1].
    operands = [dataclasses.replace(o, shape=[math.prod(o.shape)]) for o in plan.operands]
    what = f"{f'{batch} x ' if batch > 1 else ''}{m}x{k} by {k}x{n}{', w stored [n, k]' if plan.transposed_b else ''}"
    return (
        CPP_PRELUDE
        + render("gemm.cpp", "include")
        + op_function("epi_op", ["acc"] + [f"LOAD_{name}" for name in names], plan.body, qualifier="static inline ")
        + render(
            "gemm.cpp",
            "run",
            pointers=pointers(names),
            what=what,
            batch=batch,
            m=m,
            n=n,
            k=k,
            transposed_b=str(plan.transposed_b).lower(),
            w_stride=k * n if batch > 1 else 0,
            parallel=f"{batch}LL * {m}LL * {n}LL * {k}LL >= {PARALLEL_FLOPS}LL",  # C: m may be the run-time batch's
            epilogue=row_epilogue(operands, [batch * m, n], n, plan.body),
        )
    )
