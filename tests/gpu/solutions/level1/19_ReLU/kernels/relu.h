// Launchers of the ReLU kernels: plain pointers and a cudaStream_t passed as void*, so that the binding needs
// no CUDA headers. Each returns nullptr, or the CUDA error's text.
#pragma once
#include <cstdint>

const char* ks_relu(const float* x, float* y, int64_t n, int device, void* stream);
