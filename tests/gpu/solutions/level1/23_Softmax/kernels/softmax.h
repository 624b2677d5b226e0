// Launcher of the row-softmax kernel: plain pointers and a cudaStream_t passed as void*, so that the binding
// needs no CUDA headers. Returns nullptr, or the CUDA error's text.
#pragma once
#include <cstdint>

const char* ks_softmax_rows(const float* x, float* y, int64_t rows, int64_t cols, void* stream);
