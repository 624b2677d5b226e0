// Softmax over the last dimension, one block per row. Pass 1 keeps an online (max, sum of exp) per thread and
// merges them with warp shuffles and shared memory; pass 2 writes exp(x - max) / sum. Three passes over memory
// (read, read, write), with 16-byte accesses and several loads in flight per thread.
#include <cuda_runtime.h>

#include <cstdint>

#include "softmax.h"

namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
constexpr unsigned kFull = 0xffffffffu;

// (m, s) absorbs (m2, s2): the running max and the sum of exp(x - max) of the union.
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
  const float mn = fmaxf(m, m2);
  if (mn == -INFINITY) return;  // both still empty
  s = s * __expf(m - mn) + s2 * __expf(m2 - mn);
  m = mn;
}

__device__ __forceinline__ void absorb(float& m, float& s, float v) {
  if (v > m) {
    s *= __expf(m - v);
    m = v;
  }
  if (m != -INFINITY) s += __expf(v - m);  // -inf entries add nothing, even before the first finite one
}

__device__ __forceinline__ void absorb4(float& m, float& s, float4 v) {
  const float mv = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
  if (mv > m) {
    s *= __expf(m - mv);
    m = mv;
  }
  if (m == -INFINITY) return;
  s += __expf(v.x - m) + __expf(v.y - m) + __expf(v.z - m) + __expf(v.w - m);
}

// Every thread of the block ends with the row's (max, sum).
__device__ __forceinline__ void block_merge(float& m, float& s) {
  __shared__ float shared_m[kWarps], shared_s[kWarps];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    merge(m, s, __shfl_xor_sync(kFull, m, offset), __shfl_xor_sync(kFull, s, offset));
  }
  if (lane == 0) {
    shared_m[warp] = m;
    shared_s[warp] = s;
  }
  __syncthreads();
  if (warp == 0) {
    m = lane < kWarps ? shared_m[lane] : -INFINITY;
    s = lane < kWarps ? shared_s[lane] : 0.f;
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
      merge(m, s, __shfl_xor_sync(kFull, m, offset), __shfl_xor_sync(kFull, s, offset));
    }
    if (lane == 0) {
      shared_m[0] = m;
      shared_s[0] = s;
    }
  }
  __syncthreads();
  m = shared_m[0];
  s = shared_s[0];
}

__global__ void __launch_bounds__(kThreads) softmax_rows_vec4(const float* __restrict__ x, float* __restrict__ y,
                                                              int64_t cols) {
  const int64_t offset = static_cast<int64_t>(blockIdx.x) * cols;
  const float4* xr = reinterpret_cast<const float4*>(x + offset);
  float4* yr = reinterpret_cast<float4*>(y + offset);
  const int64_t n4 = cols / 4;
  float m = -INFINITY, s = 0.f;
  int64_t i = threadIdx.x;
  for (; i + 3 * kThreads < n4; i += 4 * kThreads) {
    const float4 a = __ldg(xr + i), b = __ldg(xr + i + kThreads);
    const float4 c = __ldg(xr + i + 2 * kThreads), d = __ldg(xr + i + 3 * kThreads);
    absorb4(m, s, a);
    absorb4(m, s, b);
    absorb4(m, s, c);
    absorb4(m, s, d);
  }
  for (; i < n4; i += kThreads) absorb4(m, s, __ldg(xr + i));
  block_merge(m, s);
  const float inv = 1.f / s;
#pragma unroll 4
  for (int64_t j = threadIdx.x; j < n4; j += kThreads) {
    const float4 v = __ldcs(xr + j);
    __stcs(yr + j, make_float4(__expf(v.x - m) * inv, __expf(v.y - m) * inv, __expf(v.z - m) * inv,
                               __expf(v.w - m) * inv));
  }
}

__global__ void __launch_bounds__(kThreads) softmax_rows_scalar(const float* __restrict__ x, float* __restrict__ y,
                                                                int64_t cols) {
  const int64_t offset = static_cast<int64_t>(blockIdx.x) * cols;
  const float* xr = x + offset;
  float* yr = y + offset;
  float m = -INFINITY, s = 0.f;
  for (int64_t i = threadIdx.x; i < cols; i += kThreads) absorb(m, s, __ldg(xr + i));
  block_merge(m, s);
  const float inv = 1.f / s;
  for (int64_t j = threadIdx.x; j < cols; j += kThreads) yr[j] = __expf(xr[j] - m) * inv;
}

}  // namespace

const char* ks_softmax_rows(const float* x, float* y, int64_t rows, int64_t cols, void* stream) {
  if (rows <= 0 || cols <= 0) return nullptr;
  if (rows > 0x7fffffffLL) return "more rows than one grid can hold";
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const bool aligned = ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) & 15) == 0;
  if (aligned && cols % 4 == 0) {
    softmax_rows_vec4<<<static_cast<unsigned>(rows), kThreads, 0, s>>>(x, y, cols);
  } else {
    softmax_rows_scalar<<<static_cast<unsigned>(rows), kThreads, 0, s>>>(x, y, cols);
  }
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}
