// Launcher of the sum over one dimension of a contiguous tensor viewed as (outer, reduced, inner): plain
// pointers and a cudaStream_t passed as void*, so that the binding needs no CUDA headers. Returns nullptr, or
// the CUDA error's text.
#pragma once
#include <cstdint>

const char* ks_sum_dim(const float* x, float* out, int64_t outer, int64_t reduced, int64_t inner, void* stream);
