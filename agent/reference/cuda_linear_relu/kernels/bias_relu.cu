#include <cstdint>
#include <cuda_runtime.h>

__global__ void bias_relu_kernel(float* __restrict__ y, const float* __restrict__ bias, int64_t total, int64_t cols) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = fmaxf(y[i] + bias[i % cols], 0.0f);
}

void bias_relu_launch(float* y, const float* bias, int64_t rows, int64_t cols, cudaStream_t stream) {
    int64_t total = rows * cols;
    if (total == 0) return;
    int64_t blocks = (total + 255) / 256;
    if (blocks > 4096) blocks = 4096;
    bias_relu_kernel<<<(int)blocks, 256, 0, stream>>>(y, bias, total, cols);
}
