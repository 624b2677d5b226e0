"""Plan -> native workspace files (binding.cpp with the stable ABI, kernels/, model_new.py) for CUDA or C++."""

import math

from agent.heuristic.conv import HEADERS as CONV_HEADERS, cpp_conv
from agent.heuristic.emit import (
    BATCH_DECLARATION,
    CPP_PRELUDE,
    PARALLEL_ELEMENTS,
    batch_prologue,
    binding_checks,
    model_new_source,
    offset,
    op_function,
    scalar_checks,
    template,
)
from agent.heuristic.gemm import HEADERS as GEMM_HEADERS, cpp_gemm

HEADER = "// Written by Kernel Studio's heuristic policy: {describe}.\n"


def _vectorizable(plan):
    """Whether every operand is read at the output's own index or is one number: float4 loads then serve, where the
    element count (a multiple of 4) and the pointers' alignment allow, which the launch checks at run time."""
    return all(list(o.shape) == list(plan.out_shape) or math.prod(o.shape) == 1 for o in plan.operands)


# ----------------------------------------------------------------------------------------------------------
# CUDA
# ----------------------------------------------------------------------------------------------------------
CUDA_PRELUDE = """#include <cuda_runtime.h>
#include <cstdint>
#include <math.h>
#ifndef BLOCK
#define BLOCK {block}
#endif
// A grid-stride loop's grid: 32 blocks per multiprocessor of the device it runs on (asked once, not assumed).
static inline int ks_grid_limit() {{
    static int limit = 0;
    if (!limit) {{
        int device = 0, sms = 0;
        cudaGetDevice(&device);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
        limit = (sms > 0 ? sms : 1) * 32;
    }}
    return limit;
}}
"""

WARP_REDUCE = """
struct MaxSum { float m, s; };
__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
    float m = fmaxf(a.m, b.m);
    float s = (a.m == -INFINITY ? 0.f : a.s * __expf(a.m - m)) + (b.m == -INFINITY ? 0.f : b.s * __expf(b.m - m));
    return {m, s};
}
template <typename T, typename F> __device__ T block_reduce(T v, F f) {
    __shared__ T shared[32];
    for (int o = 16; o > 0; o >>= 1) {
        T other;
        if constexpr (sizeof(T) == sizeof(float)) { other = __shfl_xor_sync(0xffffffff, v, o); }
        else { other = {__shfl_xor_sync(0xffffffff, v.m, o), __shfl_xor_sync(0xffffffff, v.s, o)}; }
        v = f(v, other);
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    int warps = (blockDim.x + 31) >> 5;
    v = shared[lane < warps ? lane : 0];
    if (warp == 0) {
        for (int o = 16; o > 0; o >>= 1) {
            T other;
            if constexpr (sizeof(T) == sizeof(float)) { other = __shfl_xor_sync(0xffffffff, v, o); }
            else { other = {__shfl_xor_sync(0xffffffff, v.m, o), __shfl_xor_sync(0xffffffff, v.s, o)}; }
            if (lane < warps && (lane ^ o) < warps) v = f(v, other);
        }
        if (lane == 0) shared[0] = v;
    }
    __syncthreads();
    T out = shared[0];
    __syncthreads();
    return out;
}
"""


def cuda_elementwise(plan, block):
    names = [o.name for o in plan.operands]
    loads = ", ".join(f"{o.name}[{offset(o.shape, plan.out_shape)}]" for o in plan.operands)
    ptrs = "".join(f"const float* __restrict__ {n}, " for n in names)
    src = CUDA_PRELUDE.format(block=block) + op_function(
        "fused_op", [f"LOAD_{n}" for n in names], plan.body, qualifier="__device__ __forceinline__ "
    )
    src += f"""
__global__ void fused_kernel({ptrs}float* __restrict__ out, int64_t n) {{
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK)
        out[i] = fused_op({loads});
}}
"""
    if _vectorizable(plan):
        vec_loads = "\n".join(
            f"        const float4 a_{o.name} = reinterpret_cast<const float4*>({o.name})[i];"
            if list(o.shape) == list(plan.out_shape)
            else f"        const float s_{o.name} = {o.name}[0];"
            for o in plan.operands
        )

        def lane(c):
            return ", ".join(
                f"a_{o.name}.{c}" if list(o.shape) == list(plan.out_shape) else f"s_{o.name}" for o in plan.operands
            )

        src += f"""
__global__ void fused_kernel_vec4({ptrs}float* __restrict__ out, int64_t n4) {{
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n4; i += (int64_t)gridDim.x * BLOCK) {{
{vec_loads}
        float4 r;
        r.x = fused_op({lane("x")}); r.y = fused_op({lane("y")}); r.z = fused_op({lane("z")}); r.w = fused_op({lane("w")});
        reinterpret_cast<float4*>(out)[i] = r;
    }}
}}
"""
    args = "".join(f"{n}, " for n in names)
    aligned = " && ".join(
        [
            f"((uintptr_t){n} % 16 == 0)"
            for n in names
            if list(next(o for o in plan.operands if o.name == n).shape) == list(plan.out_shape)
        ]
        + ["((uintptr_t)out % 16 == 0)", "(n % 4 == 0)"]
    )
    vec_call = (
        f"""    if ({aligned}) {{
        int64_t n4 = n / 4;
        int blocks = (int)((n4 + BLOCK - 1) / BLOCK); if (blocks > ks_grid_limit()) blocks = ks_grid_limit();
        fused_kernel_vec4<<<blocks, BLOCK, 0, stream>>>({args}out, n4);
        return;
    }}
"""
        if _vectorizable(plan)
        else ""
    )
    src += f"""
void launch_fused({ptrs}float* out, int64_t n, cudaStream_t stream) {{
    if (n == 0) return;
{vec_call}    int blocks = (int)((n + BLOCK - 1) / BLOCK); if (blocks > ks_grid_limit()) blocks = ks_grid_limit();
    fused_kernel<<<blocks, BLOCK, 0, stream>>>({args}out, n);
}}
"""
    return src


SOFTMAX_FAMILY = {"softmax", "log_softmax", "logsumexp"}


def _affine_index(plan, row):
    """C expression of the affine parameters' index for element r of row ROW: r for a layer norm, the channel for
    group and instance norms."""
    if not plan.groups:
        return "r"
    per_group = plan.channels // plan.groups
    within = "r" if plan.spatial == 1 else f"r / {plan.spatial}LL"
    return f"(({row}) % {plan.groups}LL) * {per_group}LL + {within}"


def _norm_op(plan):
    """The row operation the kernels write: group and instance norms are layer norms of their rows."""
    return "layer_norm" if plan.row_op in ("group_norm", "instance_norm") else plan.row_op


def _batch_norm_parts(plan, row):
    """(signature pointers, statistics, update, affine) C pieces of a batch norm over channel ROW's elements."""
    affine = [o.name for o in plan.affine]
    running = [o.name for o in plan.running]
    ptrs = "".join(f", const float* __restrict__ {a}" for a in affine + running)
    n = plan.reduce
    scale = (
        (f"t = t * {affine[0]}[{row}]" + (f" + {affine[1]}[{row}]" if len(affine) > 1 else "") + ";") if affine else ""
    )
    if running:
        rm, rv = running
        # torch updates the running variance with the unbiased estimate; the stored buffers are the module's own.
        update = (
            f"float* rm = const_cast<float*>({rm}); float* rv = const_cast<float*>({rv});\n"
            f"            rm[{row}] = {1 - plan.momentum!r}f * rm[{row}] + {plan.momentum!r}f * mean;\n"
            f"            rv[{row}] = {1 - plan.momentum!r}f * rv[{row}] + {plan.momentum!r}f * var * "
            f"({n}.0f / {max(n - 1, 1)}.0f);"
        )
        running_stats = f"mean = {rm}[{row}]; rstd = 1.0f / sqrtf({rv}[{row}] + {plan.eps!r}f);"
    else:
        update, running_stats = "", ""
    return ptrs, update, running_stats, scale


def _batch_norm_index(plan, row, r):
    """The flat index of element R of channel ROW in [N, C, *spatial]."""
    c, sp = plan.channels, plan.spatial
    return f"(({r}) / {sp}LL * {c}LL + ({row})) * {sp}LL + ({r}) % {sp}LL" if sp > 1 else f"({r}) * {c}LL + ({row})"


def cpp_batch_norm(plan):
    x = plan.main.name
    src = CPP_PRELUDE + op_function("pre_op", ["LOAD_" + x], plan.prologue, "pre", "static inline ")
    src += op_function("epi_op", ["ROW"], plan.body, qualifier="static inline ")
    ptrs, update, running_stats, scale = _batch_norm_parts(plan, "c")
    n, at = plan.reduce, _batch_norm_index(plan, "c", "r")
    batch = f"""double sum = 0, sq = 0;
            for (int64_t r = 0; r < {n}LL; ++r) {{ const float v = pre_op({x}[{at}]); sum += v; sq += (double)v * v; }}
            mean = (float)(sum / {n}.0);
            const float var = (float)std::max(sq / {n}.0 - (double)mean * mean, 0.0);
            rstd = 1.0f / std::sqrt(var + {plan.eps!r}f);
            if (training) {{ {update} }}"""
    choose = f"if (training) {{ {batch} }} else {{ {running_stats} }}" if plan.running else f"{{ {batch} }}"
    return (
        src
        + f"""
void run_fused(const float* __restrict__ {x}{ptrs}, float* __restrict__ out, int64_t channels, bool training) {{
    // One channel at a time: its statistics over the batch and the spatial dims, then its elements normalized.
    #pragma omp parallel for schedule(static) if(channels * {n}LL >= {PARALLEL_ELEMENTS})
    for (int64_t c = 0; c < channels; ++c) {{
        float mean = 0.f, rstd = 1.f;
        {choose}
        for (int64_t r = 0; r < {n}LL; ++r) {{
            const int64_t k = {at};
            float t = (pre_op({x}[k]) - mean) * rstd; {scale}
            out[k] = epi_op(t);
        }}
    }}
}}
"""
    )


def cuda_batch_norm(plan, block):
    x = plan.main.name
    src = CUDA_PRELUDE.format(block=block) + WARP_REDUCE
    src += op_function("pre_op", ["LOAD_" + x], plan.prologue, "pre", "__device__ __forceinline__ ")
    src += op_function("epi_op", ["ROW"], plan.body, qualifier="__device__ __forceinline__ ")
    ptrs, update, running_stats, scale = _batch_norm_parts(plan, "c")
    n, at = plan.reduce, _batch_norm_index(plan, "c", "r")
    names = "".join(f", {o.name}" for o in plan.affine + plan.running)
    batch = f"""float s = 0.f, q = 0.f;
        for (int64_t r = threadIdx.x; r < {n}LL; r += BLOCK) {{ const float v = pre_op({x}[{at}]); s += v; q += v * v; }}
        s = block_reduce(s, [](float a, float b) {{ return a + b; }});
        q = block_reduce(q, [](float a, float b) {{ return a + b; }});
        mean = s / {n}.0f;
        const float var = fmaxf(q / {n}.0f - mean * mean, 0.f);
        rstd = rsqrtf(var + {plan.eps!r}f);
        if (training && threadIdx.x == 0) {{ {update} }}"""
    choose = f"if (training) {{ {batch} }} else {{ {running_stats} }}" if plan.running else f"{{ {batch} }}"
    return (
        src
        + f"""
__global__ void batch_norm_kernel(const float* __restrict__ {x}{ptrs}, float* __restrict__ out, bool training) {{
    const int64_t c = blockIdx.x;  // one block per channel
    float mean = 0.f, rstd = 1.f;
    {choose}
    for (int64_t r = threadIdx.x; r < {n}LL; r += BLOCK) {{
        const int64_t k = {at};
        float t = (pre_op({x}[k]) - mean) * rstd; {scale}
        out[k] = epi_op(t);
    }}
}}
void launch_fused(const float* {x}{ptrs.replace(" __restrict__", "")}, float* out, int64_t channels, bool training,
                  cudaStream_t stream) {{
    batch_norm_kernel<<<(unsigned)channels, BLOCK, 0, stream>>>({x}{names}, out, training);
}}
"""
    )


def cuda_rowwise(plan, block):
    if plan.row_op == "batch_norm":
        return cuda_batch_norm(plan, block)
    op = _norm_op(plan)
    index = _affine_index(plan, "row")
    affine = [o.name for o in plan.affine]
    src = CUDA_PRELUDE.format(block=block) + WARP_REDUCE
    src += op_function("pre_op", ["LOAD_" + plan.main.name], plan.prologue, "pre", "__device__ __forceinline__ ")
    x = plan.main.name
    epi_params = ["ROW"] + (["LOAD_" + x] if plan.normalize else [])
    src += op_function("epi_op", epi_params, plan.body, qualifier="__device__ __forceinline__ ")
    affine_ptrs = "".join(f", const float* __restrict__ {a}" for a in affine)
    if plan.inner > 1:
        # One thread per (outer, inner) position, its row strided by `inner` (adjacent threads read adjacent
        # addresses). The softmax family keeps an online max and sum in one pass, then writes.
        if op in SOFTMAX_FAMILY:
            loop = (
                "float m = -INFINITY, s = 0.f;\n        for (int64_t r = 0; r < R; ++r) {\n"
                "            const float v = pre_op(p[r * inner]);\n"
                "            if (v > m) { s = s * __expf(m - v) + 1.f; m = v; } else { s += __expf(v - m); }\n        }"
            )
            write = {
                "softmax": "for (int64_t r = 0; r < R; ++r) out[(o * R + r) * inner + i] = "
                "epi_op(__expf(pre_op(p[r * inner]) - m) / s);",
                "log_softmax": "for (int64_t r = 0; r < R; ++r) out[(o * R + r) * inner + i] = "
                "epi_op(pre_op(p[r * inner]) - m - logf(s));",
                "logsumexp": "out[t] = epi_op(m + logf(s));",
            }[op]
        else:
            init, step, fin = {
                "sum": ("0.f", "acc += v;", "acc"),
                "mean": ("0.f", "acc += v;", f"acc / {plan.reduce}.f"),
                "max": ("-INFINITY", "acc = fmaxf(acc, v);", "acc"),
                "min": ("INFINITY", "acc = fminf(acc, v);", "acc"),
                "norm": ("0.f", "acc += v * v;", "sqrtf(acc)"),
            }[op]
            loop = (
                f"float acc = {init};\n        "
                f"for (int64_t r = 0; r < R; ++r) {{ const float v = pre_op(p[r * inner]); {step} }}"
            )
            write = (
                f"const float row = {fin}; for (int64_t r = 0; r < R; ++r) out[(o * R + r) * inner + i] = "
                "epi_op(row, p[r * inner]);"
                if plan.normalize
                else f"out[t] = epi_op({fin});"
            )
        src += f"""
__global__ void row_kernel(const float* __restrict__ {x}, float* __restrict__ out, int64_t outer) {{
    const int64_t R = {plan.reduce}LL, inner = {plan.inner}LL;
    for (int64_t t = blockIdx.x * (int64_t)BLOCK + threadIdx.x; t < outer * inner; t += (int64_t)gridDim.x * BLOCK) {{
        const int64_t o = t / inner, i = t % inner;
        const float* p = {x} + o * R * inner + i;
        {loop}
        {write}
    }}
}}
void launch_fused(const float* {x}, float* out, int64_t outer, cudaStream_t stream) {{
    int64_t total = outer * {plan.inner}LL;
    int blocks = (int)((total + BLOCK - 1) / BLOCK); if (blocks > ks_grid_limit()) blocks = ks_grid_limit();
    row_kernel<<<blocks, BLOCK, 0, stream>>>({x}, out, outer);
}}
"""
        return src
    body = {
        "sum": (
            "float acc = 0.f;",
            "acc += v;",
            "acc = block_reduce(acc, [](float a, float b) { return a + b; });",
            "if (threadIdx.x == 0) out[row] = epi_op(acc);",
        ),
        "mean": (
            "float acc = 0.f;",
            "acc += v;",
            "acc = block_reduce(acc, [](float a, float b) { return a + b; });",
            f"if (threadIdx.x == 0) out[row] = epi_op(acc / {plan.reduce}.f);",
        ),
        "max": (
            "float acc = -INFINITY;",
            "acc = fmaxf(acc, v);",
            "acc = block_reduce(acc, [](float a, float b) { return fmaxf(a, b); });",
            "if (threadIdx.x == 0) out[row] = epi_op(acc);",
        ),
        "norm": (
            "float acc = 0.f;",
            "acc += v * v;",
            "acc = block_reduce(acc, [](float a, float b) { return a + b; });",
            "if (threadIdx.x == 0) out[row] = epi_op(sqrtf(acc));",
        ),
        "min": (
            "float acc = INFINITY;",
            "acc = fminf(acc, v);",
            "acc = block_reduce(acc, [](float a, float b) { return fminf(a, b); });",
            "if (threadIdx.x == 0) out[row] = epi_op(acc);",
        ),
        "softmax": (
            "MaxSum acc = {-INFINITY, 0.f};",
            "acc = combine(acc, MaxSum{v, 1.f});",
            "acc = block_reduce(acc, combine); const float inv = 1.f / acc.s;",
            "for (int64_t r = threadIdx.x; r < R; r += BLOCK) y[r] = epi_op(__expf(pre_op(x[r]) - acc.m) * inv);",
        ),
        "log_softmax": (
            "MaxSum acc = {-INFINITY, 0.f};",
            "acc = combine(acc, MaxSum{v, 1.f});",
            "acc = block_reduce(acc, combine); const float lse = acc.m + logf(acc.s);",
            "for (int64_t r = threadIdx.x; r < R; r += BLOCK) y[r] = epi_op(pre_op(x[r]) - lse);",
        ),
        "logsumexp": (
            "MaxSum acc = {-INFINITY, 0.f};",
            "acc = combine(acc, MaxSum{v, 1.f});",
            "acc = block_reduce(acc, combine);",
            "if (threadIdx.x == 0) out[row] = epi_op(acc.m + logf(acc.s));",
        ),
        "layer_norm": (
            "float2 acc = {0.f, 0.f};",
            "acc.x += v; acc.y += v * v;",
            "acc.x = block_reduce(acc.x, [](float a, float b) { return a + b; });"
            " acc.y = block_reduce(acc.y, [](float a, float b) { return a + b; });"
            f" const float mean = acc.x / {plan.reduce}.f;"
            f" const float rstd = rsqrtf(fmaxf(acc.y / {plan.reduce}.f - mean * mean, 0.f) + {plan.eps!r}f);",
            "for (int64_t r = threadIdx.x; r < R; r += BLOCK) { float t = (pre_op(x[r]) - mean) * rstd; "
            + (
                f"t = t * {affine[0]}[{index}]" + (f" + {affine[1]}[{index}]" if len(affine) > 1 else "") + "; "
                if affine
                else ""
            )
            + "y[r] = epi_op(t); }",
        ),
    }[op]
    init, step, reduce, write = body
    if plan.normalize:
        final = write.split("epi_op(", 1)[1].rsplit(");", 1)[0]
        write = f"const float row_value = {final}; for (int64_t r = threadIdx.x; r < R; r += BLOCK) y[r] = epi_op(row_value, x[r]);"
    src += f"""
__global__ void row_kernel(const float* __restrict__ {x}_all{affine_ptrs}, float* __restrict__ out) {{
    const int64_t R = {plan.reduce}LL;
    const int64_t row = blockIdx.x;
    const float* x = {x}_all + row * R;
    float* y = out + row * R;
    (void)y;
    {init}
    for (int64_t r = threadIdx.x; r < R; r += BLOCK) {{ const float v = pre_op(x[r]); {step} }}
    {reduce}
    {write}
}}
void launch_fused(const float* {x}{affine_ptrs}, float* out, int64_t outer, cudaStream_t stream) {{
    row_kernel<<<(unsigned)outer, BLOCK, 0, stream>>>({x}{"".join(", " + a for a in affine)}, out);
}}
"""
    return src


SUMMING = ("sum", "mean", "logsumexp")


def cuda_gemm(plan, block):
    names = [o.name for o in plan.operands]
    loads = ", ".join(f"{o.name}[{'0' if math.prod(o.shape) == 1 else 'i % N'}]" for o in plan.operands)
    ptrs = "".join(f"const float* __restrict__ {n}, " for n in names)
    params = ["acc"] + [f"LOAD_{n}" for n in names]
    src = CUDA_PRELUDE.format(block=block) + "#include <cublas_v2.h>\n#include <stdexcept>\n#include <string>\n"
    src += op_function("epi_op", params, plan.body, qualifier="__device__ __forceinline__ ")
    trivial = plan.body == ["const float result = acc;"]
    m, n, k = plan.m, plan.n, plan.k
    # TF32 keeps a GEMM's own outputs within 1e-2 of PyTorch's FP32, but a later sum over thousands of them adds
    # their errors up: with a summing stage after it (sum, mean, logsumexp), the GEMM computes in full FP32.
    compute = (
        "CUBLAS_COMPUTE_32F"
        if any(t.kind == "rowwise" and t.row_op in SUMMING for t in plan.tails)
        else "CUBLAS_COMPUTE_32F_FAST_TF32"
    )
    if plan.transposed_b:
        gemm = (
            f"cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, {n}, {m}, {k}, &alpha, w, CUDA_R_32F, {k}, x, CUDA_R_32F, {k}, "
            f"&beta, out, CUDA_R_32F, {n}, {compute}, CUBLAS_GEMM_DEFAULT)"
        )
    elif plan.batch > 1:
        gemm = (
            f"cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, {n}, {m}, {k}, &alpha, w, CUDA_R_32F, {n}, "
            f"{k * n}LL, x, CUDA_R_32F, {k}, {m * k}LL, &beta, out, CUDA_R_32F, {n}, {m * n}LL, {plan.batch}, "
            f"{compute}, CUBLAS_GEMM_DEFAULT)"
        )
    else:
        gemm = (
            f"cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, {n}, {m}, {k}, &alpha, w, CUDA_R_32F, {n}, x, CUDA_R_32F, {k}, "
            f"&beta, out, CUDA_R_32F, {n}, {compute}, CUBLAS_GEMM_DEFAULT)"
        )
    src += f"""
__global__ void epilogue_kernel({ptrs}float* __restrict__ out, int64_t total) {{
    const int64_t N = {n}LL;
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < total; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i]{"".join(", " + load for load in loads.split(", ") if load)});
}}

static cublasHandle_t handle() {{
    // One handle per process: creating one per call costs more than a small GEMM.
    static cublasHandle_t h = nullptr;
    if (!h && cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate failed");
    return h;
}}

void launch_fused(const float* x, const float* w, {ptrs}float* out, cudaStream_t stream) {{
    cublasHandle_t h = handle();
    cublasSetStream(h, stream);
    const float alpha = 1.0f, beta = 0.0f;
    cublasStatus_t status = {gemm};
    if (status != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cuBLAS GEMM failed: " + std::to_string((int)status));
"""
    if not trivial:
        total = plan.batch * m * n
        src += f"""    int blocks = (int)(({total}LL + BLOCK - 1) / BLOCK); if (blocks > ks_grid_limit()) blocks = ks_grid_limit();
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>({"".join(n_ + ", " for n_ in names)}out, {total}LL);
"""
    return src + "}\n"


def _conv_geometry(plan):
    """cuDNN wants at least two spatial dims: a 1-D convolution becomes a 2-D one of height 1."""
    c = plan.conv
    pad = 1 if c["dims"] == 1 else 0
    ins = c["in_shape"][:2] + [1] * pad + c["in_shape"][2:]
    ws = c["w_shape"][:2] + [1] * pad + c["w_shape"][2:]
    outs = c["conv_shape"][:2] + [1] * pad + c["conv_shape"][2:]
    stride, dilation = ([1] * pad + c[k] for k in ("stride", "dilation"))
    return ins, ws, outs, stride, [0] * pad + c["padding"], dilation


def _c_array(values):
    return "{" + ", ".join(f"(int){v}LL" for v in values) + "}"


def cuda_conv(plan, block):
    """cuDNN's convolution (or, for ConvTranspose, its data gradient, which is the same arithmetic) with the algorithm
    its heuristics rank first, chosen once per process, then one epilogue kernel for the bias and what follows."""
    names = [o.name for o in plan.operands]
    loads = "".join(f", {o.name}[{offset(o.shape, plan.out_shape)}]" for o in plan.operands)
    ptrs = "".join(f"const float* __restrict__ {n}, " for n in names)
    ins, ws, outs, stride, padding, dilation = _conv_geometry(plan)
    nd, spatial = len(ins), len(ins) - 2
    transposed = plan.conv["transposed"]
    # For ConvTranspose the input plays the forward convolution's output and the output its input.
    x_desc, y_desc = ("dy", "dx") if transposed else ("x", "y")
    if transposed:
        find = (
            "cudnnConvolutionBwdDataAlgoPerf_t perf[8]; int found = 0;\n"
            "        if (cudnn().cudnnFindConvolutionBackwardDataAlgorithm(h, s.w, s.x, s.conv, s.y, 8, &found, perf) != CUDNN_STATUS_SUCCESS || !found)\n"
            '            check(cudnn().cudnnGetConvolutionBackwardDataAlgorithm_v7(h, s.w, s.x, s.conv, s.y, 8, &found, perf), "find");\n'
            "        const auto& best = pick(perf, found);\n"
            '        check(cudnn().cudnnSetConvolutionMathType(s.conv, best.mathType), "math type");\n'
            '        check(cudnn().cudnnGetConvolutionBackwardDataWorkspaceSize(h, s.w, s.x, s.conv, s.y, best.algo, &s.bytes), "workspace");'
        )
        run = "cudnn().cudnnConvolutionBackwardData(h, &alpha, s.w, w, s.x, x, s.conv, s.algo, s.workspace, s.bytes, &beta, s.y, out)"
        algo_t = "cudnnConvolutionBwdDataAlgo_t"
    else:
        find = (
            "cudnnConvolutionFwdAlgoPerf_t perf[8]; int found = 0;\n"
            "        if (cudnn().cudnnFindConvolutionForwardAlgorithm(h, s.x, s.w, s.conv, s.y, 8, &found, perf) != CUDNN_STATUS_SUCCESS || !found)\n"
            '            check(cudnn().cudnnGetConvolutionForwardAlgorithm_v7(h, s.x, s.w, s.conv, s.y, 8, &found, perf), "find");\n'
            "        const auto& best = pick(perf, found);\n"
            '        check(cudnn().cudnnSetConvolutionMathType(s.conv, best.mathType), "math type");\n'
            '        check(cudnn().cudnnGetConvolutionForwardWorkspaceSize(h, s.x, s.w, s.conv, s.y, best.algo, &s.bytes), "workspace");'
        )
        run = "cudnn().cudnnConvolutionForward(h, &alpha, s.x, x, s.w, w, s.conv, s.algo, s.workspace, s.bytes, &beta, s.y, out)"
        algo_t = "cudnnConvolutionFwdAlgo_t"

    def strides(shape):
        out, acc = [], 1
        for size in reversed(shape):
            out.append(acc)
            acc *= size
        return list(reversed(out))

    trivial = plan.body == ["const float result = acc;"]
    total = math.prod(plan.out_shape)
    src = (
        CUDA_PRELUDE.format(block=block)
        + "#include <cudnn.h>\n#include <dlfcn.h>\n#include <map>\n#include <stdexcept>\n#include <string>\n"
    )
    src += op_function(
        "epi_op", ["acc"] + [f"LOAD_{n}" for n in names], plan.body, qualifier="__device__ __forceinline__ "
    )
    src += f"""
__global__ void epilogue_kernel({ptrs}float* __restrict__ out, int64_t n) {{
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i]{loads});
}}

// cuDNN is opened at run time, never linked: the library and its parts (ops, cnn, engines) come from the folder of
// the cuDNN the framework loaded, in the order that keeps a system-wide cuDNN of another version out of the process
// (two versions in one process crash it).
#define KS_CUDNN_API(X) X(cudnnCreate) X(cudnnSetStream) X(cudnnGetErrorString) X(cudnnCreateTensorDescriptor) \\
    X(cudnnCreateFilterDescriptor) X(cudnnCreateConvolutionDescriptor) X(cudnnSetTensorNdDescriptor) \\
    X(cudnnSetFilterNdDescriptor) X(cudnnSetConvolutionNdDescriptor) X(cudnnSetConvolutionGroupCount) \\
    X(cudnnSetConvolutionMathType) X(cudnnGetConvolutionForwardAlgorithm_v7) \\
    X(cudnnGetConvolutionForwardWorkspaceSize) X(cudnnConvolutionForward) \\
    X(cudnnGetConvolutionBackwardDataAlgorithm_v7) X(cudnnGetConvolutionBackwardDataWorkspaceSize) \\
    X(cudnnConvolutionBackwardData) X(cudnnFindConvolutionForwardAlgorithm) X(cudnnFindConvolutionBackwardDataAlgorithm)
struct CudnnApi {{
#define KS_FIELD(f) decltype(&::f) f = nullptr;
    KS_CUDNN_API(KS_FIELD)
#undef KS_FIELD
}};

static std::string loaded_folder(const char* soname) {{
    void* handle = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
    char origin[4096];
    if (!handle || dlinfo(handle, RTLD_DI_ORIGIN, origin) != 0) return "";
    return std::string(origin) + "/";
}}

static const CudnnApi& cudnn() {{
    static CudnnApi api;
    static bool loaded = false;
    if (loaded) return api;
    const std::string major = ".so." + std::to_string(CUDNN_MAJOR);
    std::string dir = loaded_folder(("libcudnn_graph" + major).c_str());
    if (dir.empty()) dir = loaded_folder(("libcudnn" + major).c_str());
    for (const char* part : {{"graph", "engines_runtime_compiled", "engines_precompiled", "heuristic", "ops", "cnn", "adv"}})
        dlopen((dir + "libcudnn_" + part + major).c_str(), RTLD_NOW | RTLD_GLOBAL);
    void* lib = dlopen((dir + "libcudnn" + major).c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!lib) throw std::runtime_error(std::string("cuDNN could not be opened: ") + dlerror());
#define KS_LOAD(f) api.f = (decltype(&::f))dlsym(lib, #f); \\
    if (!api.f) throw std::runtime_error("cuDNN lacks " #f);
    KS_CUDNN_API(KS_LOAD)
#undef KS_LOAD
    loaded = true;
    return api;
}}

static void check(cudnnStatus_t status, const char* what) {{
    if (status != CUDNN_STATUS_SUCCESS)
        throw std::runtime_error(std::string("cuDNN ") + what + " failed: " + cudnn().cudnnGetErrorString(status));
}}

template <typename Perf> static const Perf& pick(const Perf* perf, int found) {{
    // Ranked fastest first: measured once at the first call (as cudnn.benchmark does in the framework), or by
    // cuDNN's heuristics where measuring failed (short of memory). Take the first usable.
    for (int i = 0; i < found; ++i) if (perf[i].status == CUDNN_STATUS_SUCCESS) return perf[i];
    throw std::runtime_error("cuDNN has no algorithm for this convolution");
}}

struct ConvState {{
    cudnnHandle_t handle = nullptr;
    cudnnTensorDescriptor_t x, y;  // the {x_desc} and {y_desc} of cuDNN's terms
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    {algo_t} algo;
    size_t bytes = 0;
    void* workspace = nullptr;
}};

static ConvState& state(cudaStream_t stream) {{
    // Descriptors, the algorithm and its workspace are made once per batch size (the first's at the first call),
    // with one cuDNN handle for them all.
    static cudnnHandle_t h = nullptr;
    static std::map<int64_t, ConvState> states;
    if (!h) check(cudnn().cudnnCreate(&h), "create");
    ConvState& s = states[{ins[0]}LL];
    if (!s.handle) {{
        check(cudnn().cudnnSetStream(h, stream), "set stream");
        const int in_dims[] = {_c_array(ins)}, in_strides[] = {_c_array(strides(ins))};
        const int out_dims[] = {_c_array(outs)}, out_strides[] = {_c_array(strides(outs))};
        const int w_dims[] = {_c_array(ws)};
        const int pad[] = {_c_array(padding)}, stride[] = {_c_array(stride)}, dilation[] = {_c_array(dilation)};
        check(cudnn().cudnnCreateTensorDescriptor(&s.x), "tensor descriptor");
        check(cudnn().cudnnCreateTensorDescriptor(&s.y), "tensor descriptor");
        check(cudnn().cudnnCreateFilterDescriptor(&s.w), "filter descriptor");
        check(cudnn().cudnnCreateConvolutionDescriptor(&s.conv), "convolution descriptor");
        check(cudnn().cudnnSetTensorNdDescriptor(s.x, CUDNN_DATA_FLOAT, {nd}, in_dims, in_strides), "input shape");
        check(cudnn().cudnnSetTensorNdDescriptor(s.y, CUDNN_DATA_FLOAT, {nd}, out_dims, out_strides), "output shape");
        check(cudnn().cudnnSetFilterNdDescriptor(s.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, {nd}, w_dims), "weight shape");
        check(cudnn().cudnnSetConvolutionNdDescriptor(s.conv, {spatial}, pad, stride, dilation, CUDNN_CROSS_CORRELATION,
                                              CUDNN_DATA_FLOAT), "geometry");
        check(cudnn().cudnnSetConvolutionGroupCount(s.conv, {plan.conv["groups"]}), "groups");
        // The default math lets cuDNN use TF32 tensor cores for float data, as PyTorch does by default.
        check(cudnn().cudnnSetConvolutionMathType(s.conv, CUDNN_DEFAULT_MATH), "math type");
        {find}
        s.algo = best.algo;
        if (s.bytes && cudaMalloc(&s.workspace, s.bytes) != cudaSuccess) throw std::runtime_error("cuDNN workspace: out of memory");
        s.handle = h;
    }}
    check(cudnn().cudnnSetStream(s.handle, stream), "set stream");
    return s;
}}

void launch_fused(const float* x, const float* w, {ptrs}float* out, cudaStream_t stream) {{
    ConvState& s = state(stream);
    cudnnHandle_t h = s.handle;
    const float alpha = 1.0f, beta = 0.0f;
    check({run}, "convolution");
"""
    if not trivial:
        src += f"""    int blocks = (int)(({total}LL + BLOCK - 1) / BLOCK); if (blocks > ks_grid_limit()) blocks = ks_grid_limit();
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>({"".join(n_ + ", " for n_ in names)}out, {total}LL);
"""
    return src + "}\n"


# ----------------------------------------------------------------------------------------------------------
# C++ (the CPU target)
# ----------------------------------------------------------------------------------------------------------
def _inner_extent(plan):
    """The longest run of trailing output dims along which every operand is either contiguous and full, or
    constant: the inner loop over it vectorizes, with broadcast operands read once per outer step."""
    out = list(plan.out_shape)
    shapes = [[1] * (len(out) - len(o.shape)) + list(o.shape) for o in plan.operands]
    inner, kinds = 1, ["full" if list(sh) == out else "const" for sh in shapes]
    for d in range(len(out) - 1, -1, -1):
        ok = True
        for k, sh in enumerate(shapes):
            full = sh[d:] == out[d:]
            const = all(v == 1 for v in sh[d:])
            kinds[k] = "full" if full else ("const" if const else None)
            ok = ok and kinds[k] is not None
        if not ok:
            break
        inner *= out[d]
    if inner == 1:
        return 1, ["const" if math.prod(sh) == 1 else "gather" for sh in shapes]
    shapes_kinds = []
    for sh in shapes:
        d = len(out) - 1
        suffix = 1
        while d >= 0 and suffix < inner:
            suffix *= out[d]
            d -= 1
        start = d + 1
        shapes_kinds.append("full" if sh[start:] == out[start:] else "const")
    return inner, shapes_kinds


def cpp_elementwise(plan):
    names = [o.name for o in plan.operands]
    ptrs = "".join(f"const float* __restrict__ {n}, " for n in names)
    n = math.prod(plan.out_shape)
    inner, kinds = _inner_extent(plan)
    setup, args = [], []
    for o, kind in zip(plan.operands, kinds):
        if kind == "full":
            setup.append(f"const float* p_{o.name} = {o.name} + ({offset(o.shape, plan.out_shape, 'base')});")
            args.append(f"p_{o.name}[j]")
        elif kind == "const":
            setup.append(f"const float s_{o.name} = {o.name}[{offset(o.shape, plan.out_shape, 'base')}];")
            args.append(f"s_{o.name}")
        else:
            args.append(f"{o.name}[{offset(o.shape, plan.out_shape, '(base + j)')}]")
    setup_text = "\n        ".join(setup)
    return (
        CPP_PRELUDE
        + op_function("fused_op", [f"LOAD_{n_}" for n_ in names], plan.body, qualifier="static inline ")
        + f"""
void run_fused({ptrs}float* __restrict__ out, int64_t n) {{
    // {n // inner} outer step(s) of {inner} contiguous elements, cut in chunks of at most 8192 for the threads.
    const int64_t inner = {inner}LL, chunk = std::min<int64_t>(inner, 8192), chunks = (inner + chunk - 1) / chunk;
    #pragma omp parallel for schedule(static) if(n >= {PARALLEL_ELEMENTS})
    for (int64_t c = 0; c < (n / inner) * chunks; ++c) {{
        const int64_t base = (c / chunks) * inner;
        const int64_t j0 = (c % chunks) * chunk, j1 = std::min<int64_t>(inner, j0 + chunk);
        {setup_text}
        float* y = out + base;
        #pragma omp simd
        for (int64_t j = j0; j < j1; ++j) y[j] = fused_op({", ".join(args)});
    }}
}}
"""
    )


def cpp_rowwise(plan):
    if plan.row_op == "batch_norm":
        return cpp_batch_norm(plan)
    op, x = _norm_op(plan), plan.main.name
    index = _affine_index(plan, "o")
    affine = [o.name for o in plan.affine]
    src = CPP_PRELUDE + op_function("pre_op", ["LOAD_" + x], plan.prologue, "pre", "static inline ")
    src += op_function(
        "epi_op", ["ROW"] + (["LOAD_" + x] if plan.normalize else []), plan.body, qualifier="static inline "
    )
    affine_ptrs = "".join(f", const float* __restrict__ {a}" for a in affine)
    R, inner = plan.reduce, plan.inner
    red = {
        "sum": ("0.f", "acc += v;", "acc"),
        "mean": ("0.f", "acc += v;", f"acc / {R}.f"),
        "max": ("-INFINITY", "acc = std::max(acc, v);", "acc"),
        "min": ("INFINITY", "acc = std::min(acc, v);", "acc"),
        "norm": ("0.f", "acc += v * v;", "std::sqrt(acc)"),
    }
    if op in SOFTMAX_FAMILY and inner > 1:
        # Rows strided by `inner`: a running max and sum per inner position, the inner loop contiguous.
        write = {
            "softmax": f"for (int64_t r = 0; r < {R}LL; ++r) for (int64_t i = 0; i < {inner}LL; ++i) "
            f"yo[r * {inner}LL + i] = epi_op(expf(pre_op(xo[r * {inner}LL + i]) - m[i]) / s[i]);",
            "log_softmax": f"for (int64_t r = 0; r < {R}LL; ++r) for (int64_t i = 0; i < {inner}LL; ++i) "
            f"yo[r * {inner}LL + i] = epi_op(pre_op(xo[r * {inner}LL + i]) - m[i] - std::log(s[i]));",
            "logsumexp": f"for (int64_t i = 0; i < {inner}LL; ++i) out[o * {inner}LL + i] = "
            "epi_op(m[i] + std::log(s[i]));",
        }[op]
        return (
            src
            + f"""
#include <vector>
void run_fused(const float* __restrict__ {x}, float* __restrict__ out, int64_t outer) {{
    #pragma omp parallel for schedule(static) if(outer * {R * inner}LL >= {PARALLEL_ELEMENTS})
    for (int64_t o = 0; o < outer; ++o) {{
        const float* xo = {x} + o * {R * inner}LL;
        float* yo = out + o * {R * inner}LL;
        (void)yo;
        std::vector<float> m({inner}, -INFINITY), s({inner}, 0.f);
        for (int64_t r = 0; r < {R}LL; ++r)
            for (int64_t i = 0; i < {inner}LL; ++i) m[i] = std::max(m[i], pre_op(xo[r * {inner}LL + i]));
        for (int64_t r = 0; r < {R}LL; ++r)
            for (int64_t i = 0; i < {inner}LL; ++i) s[i] += expf(pre_op(xo[r * {inner}LL + i]) - m[i]);
        {write}
    }}
}}
"""
        )
    if op in red:
        init, step, fin = red[op]
        write = (
            f"const float row = {fin};\n            for (int64_t r = 0; r < {R}LL; ++r) {{ const int64_t k = (o * {R}LL + r) * "
            f"{inner}LL + i; out[k] = epi_op(row, {x}[k]); }}"
            if plan.normalize
            else f"out[o * {inner}LL + i] = epi_op({fin});"
        )
        return (
            src
            + f"""
void run_fused(const float* __restrict__ {x}, float* __restrict__ out, int64_t outer) {{
    #pragma omp parallel for schedule(static) if(outer * {R * inner}LL >= {PARALLEL_ELEMENTS})
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < {inner}LL; ++i) {{
            float acc = {init};
            for (int64_t r = 0; r < {R}LL; ++r) {{ const float v = pre_op({x}[(o * {R}LL + r) * {inner}LL + i]); {step} }}
            {write}
        }}
}}
"""
        )
    if op in ("softmax", "log_softmax", "logsumexp"):
        tail = {
            "softmax": f"const float inv = 1.0f / s;\n        #pragma omp simd\n        for (int64_t r = 0; r < {R}LL; ++r) y[r] = epi_op(y[r] * inv);",
            "log_softmax": f"const float lse = m + std::log(s);\n        #pragma omp simd\n        for (int64_t r = 0; r < {R}LL; ++r) y[r] = epi_op(pre_op(x[r]) - lse);",
            "logsumexp": "out[o] = epi_op(m + std::log(s));",
        }[op]
        # softmax keeps each exponential in the output row, so that it is computed once, not twice.
        keep = "y[r] = e;" if op == "softmax" else ""
        core = f"""float m = -INFINITY;
        #pragma omp simd reduction(max:m)
        for (int64_t r = 0; r < {R}LL; ++r) m = std::max(m, pre_op(x[r]));
        float s = 0.f;
        #pragma omp simd reduction(+:s)
        for (int64_t r = 0; r < {R}LL; ++r) {{ const float e = expf(pre_op(x[r]) - m); {keep} s += e; }}
        {tail}"""
    else:  # layer_norm
        scale = (
            (f"t = t * {affine[0]}[{index}]" + (f" + {affine[1]}[{index}]" if len(affine) > 1 else "") + ";")
            if affine
            else ""
        )
        core = f"""double sum = 0, sq = 0;
        for (int64_t r = 0; r < {R}LL; ++r) {{ const float v = pre_op(x[r]); sum += v; sq += (double)v * v; }}
        const float mean = (float)(sum / {R}.0);
        const float rstd = 1.0f / std::sqrt((float)std::max(sq / {R}.0 - (double)mean * mean, 0.0) + {plan.eps!r}f);
        for (int64_t r = 0; r < {R}LL; ++r) {{ float t = (pre_op(x[r]) - mean) * rstd; {scale} y[r] = epi_op(t); }}"""
    return (
        src
        + f"""
void run_fused(const float* __restrict__ {x}{affine_ptrs}, float* __restrict__ out, int64_t outer) {{
    #pragma omp parallel for schedule(static) if(outer * {R}LL >= {PARALLEL_ELEMENTS})
    for (int64_t o = 0; o < outer; ++o) {{
        const float* x = {x} + o * {R}LL;
        float* y = out + o * {R}LL;
        (void)y;
        {core}
    }}
}}
"""
    )


def _pool_geometry(plan):
    """The pool's shapes and window padded to three spatial dims (missing ones of size 1)."""
    p = plan.pool
    pad = 3 - p["dims"]
    ins = p["in_shape"][2:]
    outs = p["pool_shape"][2:]
    return (
        [1] * pad + ins,
        [1] * pad + outs,
        [1] * pad + p["kernel"],
        [1] * pad + p["stride"],
        [0] * pad + p["padding"],
        [1] * pad + p["dilation"],
    )


def _pool_body(plan):
    """The loop over one output's window (C, shared by the CUDA and C++ kernels): reads xc, leaves `pooled`."""
    (d_in, h_in, w_in), (d_out, h_out, w_out), (kd, kh, kw), (sd, sh, sw), (pd, ph, pw), (dd, dh, dw) = _pool_geometry(
        plan
    )
    is_max = plan.row_op == "max_pool"
    counted = not is_max and not plan.pool["count_include_pad"]  # the divisor is the window's elements inside
    step = "acc = fmaxf(acc, v);" if is_max else "acc += v;" + (" ++count;" if counted else "")
    final = "acc" if is_max else ("acc / (float)count" if counted else f"acc / {kd * kh * kw}.0f")
    return f"""const int64_t ow = i % {w_out}LL, oh = (i / {w_out}LL) % {h_out}LL, od = (i / {w_out * h_out}LL) % {d_out}LL;
        const float* xc = x + (i / {w_out * h_out * d_out}LL) * {d_in * h_in * w_in}LL;
        float acc = {"-INFINITY" if is_max else "0.f"};{" int count = 0;" if counted else ""}
        for (int64_t a = 0; a < {kd}; ++a) {{
            const int64_t id = od * {sd} - {pd} + a * {dd}; if (id < 0 || id >= {d_in}) continue;
            for (int64_t bb = 0; bb < {kh}; ++bb) {{
                const int64_t ih = oh * {sh} - {ph} + bb * {dh}; if (ih < 0 || ih >= {h_in}) continue;
                for (int64_t c = 0; c < {kw}; ++c) {{
                    const int64_t iw = ow * {sw} - {pw} + c * {dw}; if (iw < 0 || iw >= {w_in}) continue;
                    const float v = pre_op(xc[(id * {h_in} + ih) * {w_in}LL + iw]); {step}
                }}
            }}
        }}
        const float pooled = {final};"""


def _pool_functions(plan, qualifier):
    names = [o.name for o in plan.operands]
    src = op_function("pre_op", ["LOAD_" + plan.main.name], plan.prologue, "pre", qualifier)
    src += op_function("epi_op", ["POOL"] + [f"LOAD_{n}" for n in names], plan.body, qualifier=qualifier)
    loads = "".join(f", {o.name}[{offset(o.shape, plan.out_shape, 'i')}]" for o in plan.operands)
    ptrs = "".join(f"const float* __restrict__ {n}, " for n in names)
    return src, loads, ptrs


def cpp_pool(plan):
    src, loads, ptrs = _pool_functions(plan, "static inline ")
    total = math.prod(plan.out_shape)
    return (
        CPP_PRELUDE
        + src
        + f"""
void run_fused(const float* __restrict__ x, {ptrs}float* __restrict__ out) {{
    #pragma omp parallel for schedule(static) if({total}LL >= {PARALLEL_ELEMENTS})
    for (int64_t i = 0; i < {total}LL; ++i) {{
        {_pool_body(plan)}
        out[i] = epi_op(pooled{loads});
    }}
}}
"""
    )


def cuda_pool(plan, block):
    src, loads, ptrs = _pool_functions(plan, "__device__ __forceinline__ ")
    total = math.prod(plan.out_shape)
    names = "".join(o.name + ", " for o in plan.operands)
    return (
        CUDA_PRELUDE.format(block=block)
        + src
        + f"""
__global__ void pool_kernel(const float* __restrict__ x, {ptrs}float* __restrict__ out) {{
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < {total}LL; i += (int64_t)gridDim.x * BLOCK) {{
        {_pool_body(plan)}
        out[i] = epi_op(pooled{loads});
    }}
}}
void launch_fused(const float* x, {ptrs}float* out, cudaStream_t stream) {{
    int blocks = (int)(({total}LL + BLOCK - 1) / BLOCK); if (blocks > ks_grid_limit()) blocks = ks_grid_limit();
    pool_kernel<<<blocks, BLOCK, 0, stream>>>(x, {names}out);
}}
"""
    )


# ----------------------------------------------------------------------------------------------------------
# The binding and model_new.py
# ----------------------------------------------------------------------------------------------------------
def _plan_args(plan):
    """The operands one plan's kernel function takes, in order (a tail's main input is its head's result)."""
    args = []
    if plan.kind in ("rowwise", "gemm", "conv", "pool"):
        args.append(plan.main)
    if plan.kind in ("gemm", "conv"):
        args.append(plan.weight)
    return args + (plan.affine + plan.running if plan.kind == "rowwise" else plan.operands)


def _takes_mode(plan):
    """Whether a stage's kernel is told the module's mode (batch norm: batch or running statistics)."""
    return plan.kind == "rowwise" and plan.row_op == "batch_norm"


def _all_args(plan):
    """The operands of a plan and of its tails (whose main inputs are intermediates, not arguments)."""
    return _plan_args(plan) + [o for tail in plan.tails for o in _plan_args(tail)[1:]]


def _tensor_args(plan):
    """(C parameter name, Python expression, operand) of every tensor the op takes, in order."""
    params = _param_names(plan)

    def py(o):
        if o.source == "buffer":  # looked up each call: .to(device) replaces a buffer (a parameter stays)
            return f"self.get_buffer({o.ref!r})"
        return f"inputs[{o.ref}]" if o.source == "input" else f"self._ks_params[{params.index(o.ref)}]"

    return [(o.name, py(o), o) for o in _all_args(plan)]


def _checked(plan):
    """The binding's checks' arguments (batch.py): an input by its shape, a parameter or buffer by its element count
    (a bias is planned in the shape it broadcasts in, not its own)."""
    return [
        (name, f"input {o.ref}", list(o.shape), None)
        if o.source == "input"
        else (name, f"{o.source} {o.ref}", None, math.prod(o.shape))
        for name, _, o in _tensor_args(plan)
    ]


def batch_argument(plan, inputs):
    """The C name of the op's first argument that is one of the model's INPUTS (those that scale with the batch)."""
    for name, _, o in _tensor_args(plan):
        if o.source == "input" and o.ref in inputs:
            return name
    return None


def _launch(plan, device, space, ptrs, out):
    """(declaration, call) of PLAN's kernel function in namespace SPACE ('' for none), given its input pointers
    PTRS (C expressions) and OUT, the pointer it writes."""
    extent = {"elementwise": f", {math.prod(plan.out_shape)}LL", "rowwise": f", {plan.outer}LL"}.get(plan.kind, "")
    name = "launch_fused" if device == "cuda" else "run_fused"
    stream = ", cudaStream_t" if device == "cuda" else ""
    mode, mode_arg = (", bool", ", training") if _takes_mode(plan) else ("", "")
    decl = (
        f"void {name}({', '.join('const float*' for _ in ptrs)}, float*{', int64_t' if extent else ''}{mode}{stream});"
    )
    call = f"    {space + '::' if space else ''}{name}({', '.join(ptrs)}, {out}{extent}{mode_arg}" + (
        ", (cudaStream_t)stream);" if device == "cuda" else ");"
    )
    return (f"namespace {space} {{ {decl} }}" if space else decl), call


def binding(plan, device, batch=None, reason=None):
    """binding.cpp of PLAN: checks, intermediates, the stages' calls. BATCH: the C name of the input whose dim 0 the
    kernels read at run time (None: they keep the problem's shapes, for REASON)."""
    args = _tensor_args(plan)
    params = ", ".join(f"Tensor {name}" for name, _, _ in args)
    definitions, checks = binding_checks(_checked(plan), reason)
    first = args[0][0]
    ptr = "(const float*){}.data_ptr()".format
    # Each stage writes an intermediate (mid0, mid1, ...) that the next one reads; the last writes `out`.
    stages = [plan] + plan.tails
    writes = [f"mid{i}" for i in range(len(plan.tails))] + ["out"]
    decls, calls, allocate = [], [], ""
    for i, stage in enumerate(stages):
        space = "" if not plan.tails else "ks_head" if i == 0 else f"ks_tail{i - 1}"
        inputs = [ptr(o.name) for o in _plan_args(stage)]
        if i:
            inputs[0] = f"(const float*){writes[i - 1]}.data_ptr()"
        decl, call = _launch(stage, device, space, inputs, f"(float*){writes[i]}.data_ptr()")
        decls.append(decl)
        calls.append(call)
        if i < len(plan.tails):
            allocate += (
                f"    Tensor {writes[i]} = torch::stable::new_empty({first}, "
                f"{{{', '.join(str(d) for d in stage.out_shape)}}});\n"
            )
    decl, call = "\n".join(decls), "\n".join(calls)
    out_dims = ", ".join(str(d) for d in plan.result_shape)
    if device == "cuda":
        call = (
            f"    void* stream = nullptr;\n    aoti_torch_get_current_cuda_stream({first}.get_device(), &stream);\n"
            + call
        )
        includes = "#include <torch/csrc/inductor/aoti_torch/c/shim.h>\n#include <cuda_runtime.h>\n"
        key = "CUDA"
    else:
        includes, key = "", "CPU"
    schema = ", ".join(f"Tensor {name}" for name, _, _ in args)
    if any(_takes_mode(stage) for stage in [plan] + plan.tails):
        params, schema = params + ", bool training", schema + ", bool training"
    prologue = batch_prologue(batch, f"input {batch_input(plan, batch)}") if batch else ""
    return (
        HEADER.format(describe=plan.describe)
        + f"""#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
{includes}#include <initializer_list>
#include <stdexcept>
#include <string>

using torch::stable::Tensor;

{BATCH_DECLARATION if batch else ""}{decl}
{definitions}
Tensor fused({params}) {{
{prologue}{checks}{allocate}    Tensor out = torch::stable::new_empty({first}, {{{out_dims}}});
{call}
    return out;
}}

STABLE_TORCH_LIBRARY(KS_NAMESPACE, m) {{ m.def("fused({schema}) -> Tensor"); }}
STABLE_TORCH_LIBRARY_IMPL(KS_NAMESPACE, {key}, m) {{ m.impl("fused", TORCH_BOX(&fused)); }}
"""
    )


def batch_input(plan, name):
    return next(o.ref for n, _, o in _tensor_args(plan) if n == name)


def _param_names(plan):
    args = _all_args(plan)
    return list(dict.fromkeys(o.ref for o in args if o is not None and o.source == "param"))


def _mode_argument(plan):
    return ", self.training" if any(_takes_mode(stage) for stage in [plan] + plan.tails) else ""


# cuDNN opened by the kernel at run time crashes inside cuDNN unless its parts are already in the process, loaded
# globally from the folder of the cuDNN torch uses, before the extension: the solution loads them first.
CUDNN_PRELOAD = """
def _load_cudnn_parts():
    import ctypes, glob, os
    torch.backends.cudnn.version()  # torch's own cuDNN, loaded first
    try:
        import nvidia.cudnn
        folders = [os.path.join(path, "lib") for path in nvidia.cudnn.__path__]
    except ImportError:
        return
    for folder in folders:
        for part in ("graph", "engines_runtime_compiled", "engines_precompiled", "heuristic", "ops", "cnn", "adv", ""):
            for library in sorted(glob.glob(os.path.join(folder, f"libcudnn{'_' + part if part else ''}.so.*"))):
                ctypes.CDLL(library, mode=ctypes.RTLD_GLOBAL)


_load_cudnn_parts()
"""


def model_new(plan, problem_source, device="cpu"):
    # Parameters are contiguous by construction; only inputs need .contiguous() on every call.
    call = ", ".join(py if py.startswith("self.") else f"{py}.contiguous()" for _, py, _ in _tensor_args(plan))
    names = _param_names(plan)
    checks = scalar_checks(plan.scalars)
    # Any convolution stage, the first or a later one (BatchNorm2d -> Conv2d died of SIGSEGV without the preload)
    convolves = any(stage.kind == "conv" for stage in [plan] + plan.tails)
    preload = CUDNN_PRELOAD if convolves and device == "cuda" else ""
    mode = _mode_argument(plan)
    return model_new_source(plan.describe, preload, problem_source, names, checks, f"{call}{mode}")


def _chained(sources, prelude):
    """One kernel file of a product's source and its tails', all written after PRELUDE: the prelude once, then their
    includes, then each in a namespace of its own (ks_head, ks_tail0, ks_tail1, ...)."""
    includes, blocks = [], []
    for i, source in enumerate(sources):
        space = "ks_head" if i == 0 else f"ks_tail{i - 1}"
        assert source.startswith(prelude), "a kernel source that does not start with its prelude"
        lines = source[len(prelude) :].splitlines()
        includes += [line for line in lines if line.startswith("#include") and line not in includes]
        body = "\n".join(line for line in lines if not line.startswith("#include"))
        blocks.append(f"namespace {space} {{\n{body}\n}}  // namespace {space}\n")
    return prelude + "".join(line + "\n" for line in includes) + "\n".join(blocks)


def workspace_files(plan, device, problem_source, block=256):
    """The workspace's files of PLAN (a chain's or a DAG's) for DEVICE: kernels that read the batch size at run time
    where the plans at three batch sizes allow it (batch.py), else the problem's shapes, with the reason in the
    binding's errors."""
    from agent.heuristic.batch import Specialized, merge, merge_python, runtime_kernels

    batch = getattr(plan, "batch_plans", None) or {"reason": "planned without the batch sizes' analysis"}
    reason = batch.get("reason")
    plan.specialized = None  # why the files keep the problem's batch size (None: they read it at run time)
    if reason is None:
        try:
            versions, decisions = [], None
            for sample in batch["plans"]:  # the problem's first: its choices of kernel shape hold at every size
                versions.append(_files(sample, device, problem_source, block, batch["inputs"], None, decisions))
                decisions = decisions or getattr(getattr(sample, "writer", None), "decisions", None)
            if any(v.keys() != versions[0].keys() for v in versions):
                raise Specialized("the kernels at another batch size are other files")
            files = {}
            for path, text in versions[0].items():
                texts = [v[path] for v in versions]
                if path.endswith(".py"):
                    files[path] = merge_python(texts)
                    continue
                files[path] = merge(texts, batch["sizes"])
                if path.startswith("kernels/fused."):
                    files[path] = runtime_kernels(files[path], batch["size"], device == "cuda")
            return files
        except Specialized as exc:
            reason = str(exc)
        except Exception as exc:  # noqa: BLE001 -- the problem's own files stand: its batch size is kept, and why
            reason = f"writing the kernels at another batch size failed: {type(exc).__name__}: {exc}"
    plan.specialized = reason
    return _files(plan, device, problem_source, block, (), reason)


def _files(plan, device, problem_source, block, inputs, reason, decisions=None):
    """The files of PLAN at its own shapes; the binding reads the batch size from the first of the model's INPUTS
    it takes (none: it keeps the problem's shapes, for REASON). DECISIONS: a DAG plan's choices at another size."""
    if plan.kind == "graph":
        from agent.heuristic.dag.codegen import workspace_files as dag_files

        return dag_files(plan, device, problem_source, block, inputs, reason, decisions)
    batch = batch_argument(plan, inputs) if inputs else None
    if inputs and batch is None:
        from agent.heuristic.batch import Specialized

        raise Specialized("no input that scales with the batch reaches the kernels")
    if device == "cuda":
        kernel = {
            "elementwise": cuda_elementwise,
            "rowwise": cuda_rowwise,
            "gemm": cuda_gemm,
            "conv": cuda_conv,
            "pool": cuda_pool,
        }
        sources = [kernel[stage.kind](stage, block) for stage in [plan] + plan.tails]
        prelude, name = CUDA_PRELUDE.format(block=block), "kernels/fused.cu"
    else:
        kernel = {
            "elementwise": cpp_elementwise,
            "rowwise": cpp_rowwise,
            "gemm": cpp_gemm,
            "conv": cpp_conv,
            "pool": cpp_pool,
        }
        sources = [kernel[stage.kind](stage) for stage in [plan] + plan.tails]
        prelude, name = CPP_PRELUDE, "kernels/fused.cpp"
    source = _chained(sources, prelude) if plan.tails else sources[0]
    files = {
        name: HEADER.format(describe=plan.describe) + source,
        "binding.cpp": binding(plan, device, batch, reason),
        "model_new.py": model_new(plan, problem_source, device),
    }
    if device == "cpu":  # the library kernels' headers, included by name (kernels/ is on the include path)
        families = {"gemm": GEMM_HEADERS, "conv": CONV_HEADERS}
        for header in {h for stage in [plan] + plan.tails for h in families.get(stage.kind, ())}:
            files[f"kernels/{header}"] = template(header)
    return files
