// The pool family's CUDA kernel (families/pool.py): one thread per output element in a grid-stride loop, its window
// read by pool.cpp's loop.
//@ kernel

__global__ void pool_kernel(const float* __restrict__ x, ${pointers}float* __restrict__ out) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < ${total}LL; i += (int64_t)gridDim.x * BLOCK) {
        ${window}
        out[i] = epi_op(pooled${loads});
    }
}
void launch_fused(const float* x, ${pointers}float* out, cudaStream_t stream) {
    int blocks = (int)((${total}LL + BLOCK - 1) / BLOCK); if (blocks > ks_grid_limit()) blocks = ks_grid_limit();
    pool_kernel<<<blocks, BLOCK, 0, stream>>>(x, ${args}out);
}
