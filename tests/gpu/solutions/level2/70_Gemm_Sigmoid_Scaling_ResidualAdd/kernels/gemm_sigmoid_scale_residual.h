// Launcher of y = sigmoid(t) * scaling_factor + t with t = x W^T + b, for row-major float32 x (m x k),
// W (n x k), b (n): plain pointers and a cudaStream_t passed as void*, so that the binding needs no CUDA
// headers. Returns nullptr, or the error's text.
#pragma once
#include <cstdint>

const char* ks_gemm_sigmoid_scale_residual(const float* x, const float* w, const float* bias, float* y,
                                           int64_t m, int64_t k, int64_t n, float scaling_factor, int device,
                                           void* stream);
