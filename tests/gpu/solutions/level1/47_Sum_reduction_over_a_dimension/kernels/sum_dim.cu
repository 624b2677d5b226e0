// out[o, i] = sum_r x[o, r, i] for a contiguous x viewed as (outer, reduced, inner).
//
// inner > 1 (KernelBench: 128 x 4096 x 4095, summed over the 4096): a block owns 128 adjacent columns of one
// outer slice; its 8 warps split the rows, each lane keeps 4 column sums, so a warp reads 512 contiguous
// bytes per row with 16 loads in flight per thread (the 4095-float rows rule out 16-byte vectors). The 8
// partial sums meet in shared memory. inner == 1: one block per output, a strided read and a tree reduction.
#include <cuda_runtime.h>

#include <cstdint>

#include "sum_dim.h"

namespace {

constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
constexpr int kColsPerLane = 4;
constexpr int kTile = 32 * kColsPerLane;  // columns per block
constexpr unsigned kFull = 0xffffffffu;

__global__ void __launch_bounds__(kThreads) sum_columns(const float* __restrict__ x, float* __restrict__ out,
                                                        int64_t reduced, int64_t inner, int64_t tiles) {
  __shared__ float partial[kWarps][kTile];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t o = blockIdx.x / tiles;
  const int64_t c0 = (blockIdx.x % tiles) * kTile + lane;
  const float* base = x + o * reduced * inner + c0;
  float acc[kColsPerLane];
  bool live[kColsPerLane];
#pragma unroll
  for (int j = 0; j < kColsPerLane; ++j) {
    acc[j] = 0.f;
    live[j] = c0 + j * 32 < inner;
  }
#pragma unroll 4
  for (int64_t r = warp; r < reduced; r += kWarps) {
    const float* row = base + r * inner;
#pragma unroll
    for (int j = 0; j < kColsPerLane; ++j) {
      if (live[j]) acc[j] += __ldg(row + j * 32);
    }
  }
#pragma unroll
  for (int j = 0; j < kColsPerLane; ++j) partial[warp][lane + j * 32] = acc[j];
  __syncthreads();
  if (warp == 0) {
#pragma unroll
    for (int j = 0; j < kColsPerLane; ++j) {
      if (!live[j]) continue;
      float total = 0.f;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) total += partial[w][lane + j * 32];
      out[o * inner + c0 + j * 32] = total;
    }
  }
}

__global__ void __launch_bounds__(kThreads) sum_rows(const float* __restrict__ x, float* __restrict__ out,
                                                     int64_t reduced) {
  __shared__ float warp_sums[kWarps];
  const float* row = x + static_cast<int64_t>(blockIdx.x) * reduced;
  float acc = 0.f;
  for (int64_t r = threadIdx.x; r < reduced; r += kThreads) acc += __ldg(row + r);
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_xor_sync(kFull, acc, offset);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) total += warp_sums[w];
    out[blockIdx.x] = total;
  }
}

__global__ void fill_zero(float* __restrict__ out, int64_t n) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = 0.f;
  }
}

}  // namespace

const char* ks_sum_dim(const float* x, float* out, int64_t outer, int64_t reduced, int64_t inner, void* stream) {
  if (outer <= 0 || inner <= 0) return nullptr;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (reduced <= 0) {  // an empty sum is zero
    const int64_t n = outer * inner;
    fill_zero<<<static_cast<unsigned>((n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096), 256, 0, s>>>(out, n);
  } else if (inner == 1) {
    if (outer > 0x7fffffffLL) return "more outputs than one grid can hold";
    sum_rows<<<static_cast<unsigned>(outer), kThreads, 0, s>>>(x, out, reduced);
  } else {
    const int64_t tiles = (inner + kTile - 1) / kTile;
    if (outer * tiles > 0x7fffffffLL) return "more column tiles than one grid can hold";
    sum_columns<<<static_cast<unsigned>(outer * tiles), kThreads, 0, s>>>(x, out, reduced, inner, tiles);
  }
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}
