// The GEMM family's CUDA kernels (families/gemm.py): cuBLAS's GEMM (strided batched for a batch of products), then,
// unless nothing follows the product, one epilogue kernel for the bias and the operators fused after it.
//@ includes
#include <cublas_v2.h>
#include <stdexcept>
#include <string>
//@ launch

__global__ void epilogue_kernel(${pointers}float* __restrict__ out, int64_t total) {
    const int64_t N = ${n}LL;
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < total; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i]${loads});
}

static cublasHandle_t handle() {
    // One handle per process: creating one per call costs more than a small GEMM.
    static cublasHandle_t h = nullptr;
    if (!h && cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate failed");
    return h;
}

void launch_fused(const float* x, const float* w, ${pointers}float* out, cudaStream_t stream) {
    cublasHandle_t h = handle();
    cublasSetStream(h, stream);
    const float alpha = 1.0f, beta = 0.0f;
    cublasStatus_t status = ${gemm};
    if (status != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cuBLAS GEMM failed: " + std::to_string((int)status));
${epilogue}}
//@ launch_epilogue
    int blocks = (int)((${total}LL + BLOCK - 1) / BLOCK); if (blocks > ks_grid_limit()) blocks = ks_grid_limit();
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(${args}out, ${total}LL);
//@ gemm_transposed_b
cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, ${n}, ${m}, ${k}, &alpha, w, CUDA_R_32F, ${k}, x, CUDA_R_32F, ${k}, &beta, out, CUDA_R_32F, ${n}, ${compute}, CUBLAS_GEMM_DEFAULT)
//@ gemm_batched
cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, ${n}, ${m}, ${k}, &alpha, w, CUDA_R_32F, ${n}, ${w_stride}LL, x, CUDA_R_32F, ${k}, ${x_stride}LL, &beta, out, CUDA_R_32F, ${n}, ${out_stride}LL, ${batch}, ${compute}, CUBLAS_GEMM_DEFAULT)
//@ gemm
cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, ${n}, ${m}, ${k}, &alpha, w, CUDA_R_32F, ${n}, x, CUDA_R_32F, ${k}, &beta, out, CUDA_R_32F, ${n}, ${compute}, CUBLAS_GEMM_DEFAULT)
