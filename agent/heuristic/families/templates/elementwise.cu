// The elementwise family's CUDA kernels (families/elementwise.py): fused_op of every operand's element at each output
// index, in a grid-stride loop; a float4 version where every operand is read at the output's own index or is one
// number, launched when the pointers' alignment and the element count allow it.
//@ kernel

__global__ void fused_kernel(${pointers}float* __restrict__ out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK)
        out[i] = fused_op(${loads});
}
//@ kernel_vec4

__global__ void fused_kernel_vec4(${pointers}float* __restrict__ out, int64_t n4) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n4; i += (int64_t)gridDim.x * BLOCK) {
${vec_loads}
        float4 r;
        r.x = fused_op(${lane_x}); r.y = fused_op(${lane_y}); r.z = fused_op(${lane_z}); r.w = fused_op(${lane_w});
        reinterpret_cast<float4*>(out)[i] = r;
    }
}
//@ launch

void launch_fused(${pointers}float* out, int64_t n, cudaStream_t stream) {
    if (n == 0) return;
${launch_vec4}    int blocks = (int)((n + BLOCK - 1) / BLOCK); if (blocks > ks_grid_limit()) blocks = ks_grid_limit();
    fused_kernel<<<blocks, BLOCK, 0, stream>>>(${args}out, n);
}
//@ launch_vec4
    if (${aligned}) {
        int64_t n4 = n / 4;
        int blocks = (int)((n4 + BLOCK - 1) / BLOCK); if (blocks > ks_grid_limit()) blocks = ks_grid_limit();
        fused_kernel_vec4<<<blocks, BLOCK, 0, stream>>>(${args}out, n4);
        return;
    }
