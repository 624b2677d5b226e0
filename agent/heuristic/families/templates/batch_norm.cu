// The batch norm's CUDA kernel (families/batch_norm.py): one block per channel of [N, C, *spatial], its statistics
// over the batch and the spatial dims reduced in the block (or the running ones, in eval mode), then its elements
// normalized; the running statistics' update and choice are batch_norm.cpp's statements.
//@ kernel

__global__ void batch_norm_kernel(const float* __restrict__ ${x}${pointers}, float* __restrict__ out, bool training) {
    const int64_t c = blockIdx.x;  // one block per channel
    float mean = 0.f, rstd = 1.f;
    ${choose}
    for (int64_t r = threadIdx.x; r < ${n}LL; r += BLOCK) {
        const int64_t k = ${at};
        float t = (pre_op(${x}[k]) - mean) * rstd; ${scale}
        out[k] = epi_op(t);
    }
}
void launch_fused(const float* ${x}${launch_pointers}, float* out, int64_t channels, bool training,
                  cudaStream_t stream) {
    batch_norm_kernel<<<(unsigned)channels, BLOCK, 0, stream>>>(${x}${args}, out, training);
}
//@ batch_statistics
        float s = 0.f, q = 0.f;
        for (int64_t r = threadIdx.x; r < ${n}LL; r += BLOCK) { const float v = pre_op(${x}[${at}]); s += v; q += v * v; }
        s = block_reduce(s, [](float a, float b) { return a + b; });
        q = block_reduce(q, [](float a, float b) { return a + b; });
        mean = s / ${n}.0f;
        const float var = fmaxf(q / ${n}.0f - mean * mean, 0.f);
        rstd = rsqrtf(var + ${eps}f);
        if (training && threadIdx.x == 0) { ${update} }
