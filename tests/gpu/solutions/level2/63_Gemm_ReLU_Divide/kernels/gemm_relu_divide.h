// Launcher of y = relu(x W^T + b) / divisor for row-major float32 x (m x k), W (n x k), b (n): plain pointers
// and a cudaStream_t passed as void*, so that the binding needs no CUDA headers. Returns nullptr, or the
// error's text.
#pragma once
#include <cstdint>

const char* ks_gemm_relu_divide(const float* x, const float* w, const float* bias, float* y, int64_t m, int64_t k,
                                int64_t n, float divisor, int device, void* stream);
