// Launcher of the mean cross-entropy of logits (rows x cols) against int64 class targets: plain pointers and
// a cudaStream_t passed as void*, so that the binding needs no CUDA headers. `partial` holds at least
// `partial_size` floats of scratch. Returns nullptr, or the CUDA error's text.
#pragma once
#include <cstdint>

const char* ks_cross_entropy(const float* logits, const int64_t* target, float* partial, int64_t partial_size,
                             float* out, int64_t rows, int64_t cols, int device, void* stream);
