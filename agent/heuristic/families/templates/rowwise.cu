// The row-wise family's CUDA kernels (families/rowwise.py): a reduction, the softmax family or a layer norm (group
// and instance norms are layer norms of their rows) over rows of R elements, pre_op fused as it reads and epi_op as
// it writes. Rows strided by `inner` take one thread per (outer, inner) position, so that adjacent threads read
// adjacent addresses (the softmax family keeps a running max and sum in one pass, then writes); contiguous rows
// take one block each, reduced with block_reduce.
//@ strided

__global__ void row_kernel(const float* __restrict__ ${x}, float* __restrict__ out, int64_t outer) {
    const int64_t R = ${reduce}LL, inner = ${inner}LL;
    for (int64_t t = blockIdx.x * (int64_t)BLOCK + threadIdx.x; t < outer * inner; t += (int64_t)gridDim.x * BLOCK) {
        const int64_t o = t / inner, i = t % inner;
        const float* p = ${x} + o * R * inner + i;
        ${loop}
        ${write}
    }
}
void launch_fused(const float* ${x}, float* out, int64_t outer, cudaStream_t stream) {
    int64_t total = outer * ${inner}LL;
    int blocks = (int)((total + BLOCK - 1) / BLOCK); if (blocks > ks_grid_limit()) blocks = ks_grid_limit();
    row_kernel<<<blocks, BLOCK, 0, stream>>>(${x}, out, outer);
}
//@ strided_online_max_sum
        float m = -INFINITY, s = 0.f;
        for (int64_t r = 0; r < R; ++r) {
            const float v = pre_op(p[r * inner]);
            if (v > m) { s = s * __expf(m - v) + 1.f; m = v; } else { s += __expf(v - m); }
        }
//@ strided_reduce
        float acc = ${init};
        for (int64_t r = 0; r < R; ++r) { const float v = pre_op(p[r * inner]); ${step} }
//@ strided_write_softmax
        for (int64_t r = 0; r < R; ++r) out[(o * R + r) * inner + i] = epi_op(__expf(pre_op(p[r * inner]) - m) / s);
//@ strided_write_log_softmax
        for (int64_t r = 0; r < R; ++r) out[(o * R + r) * inner + i] = epi_op(pre_op(p[r * inner]) - m - logf(s));
//@ strided_write_logsumexp
        out[t] = epi_op(m + logf(s));
//@ strided_write_normalized
        const float row = ${value}; for (int64_t r = 0; r < R; ++r) out[(o * R + r) * inner + i] = epi_op(row, p[r * inner]);
//@ strided_write
        out[t] = epi_op(${value});
//@ rows

__global__ void row_kernel(const float* __restrict__ ${x}_all${affine_pointers}, float* __restrict__ out) {
    const int64_t R = ${reduce}LL;
    const int64_t row = blockIdx.x;
    const float* x = ${x}_all + row * R;
    float* y = out + row * R;
    (void)y;
    ${init}
    for (int64_t r = threadIdx.x; r < R; r += BLOCK) { const float v = pre_op(x[r]); ${step} }
    ${combine}
    ${write}
}
void launch_fused(const float* ${x}${affine_pointers}, float* out, int64_t outer, cudaStream_t stream) {
    row_kernel<<<(unsigned)outer, BLOCK, 0, stream>>>(${x}${affine_args}, out);
}
//@ rows_write_normalized
    const float row_value = ${value}; for (int64_t r = threadIdx.x; r < R; r += BLOCK) y[r] = epi_op(row_value, x[r]);
