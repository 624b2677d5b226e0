// Launcher of C = A B for row-major float32 A (m x k) and B (k x n): plain pointers and a cudaStream_t passed
// as void*, so that the binding needs no CUDA headers. Returns nullptr, or the error's text.
#pragma once
#include <cstdint>

const char* ks_matmul(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n, int device,
                      void* stream);
