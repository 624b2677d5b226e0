// Mean cross-entropy: loss_r = logsumexp(x_r) - x_r[target_r], averaged over rows.
//
// A warp per row (rows grid-strided over warps): each lane keeps an online (max, sum of exp) over 16-byte
// loads, the warp merges them with shuffles, lane 0 adds the row's loss. Each block writes one partial sum;
// a second one-block kernel adds the partials in double, in a fixed order (deterministic), and divides.
// One read of the logits, where log_softmax + nll_loss read them twice and write them once.
#include <cuda_runtime.h>

#include <cstdint>
#include <limits>

#include "cross_entropy.h"

namespace {

constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
constexpr int kFinishThreads = 256;
constexpr unsigned kFull = 0xffffffffu;

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
  if (m != -INFINITY) s += __expf(v - m);
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

template <bool kVec>
__global__ void __launch_bounds__(kThreads) row_losses(const float* __restrict__ logits,
                                                       const int64_t* __restrict__ target,
                                                       float* __restrict__ partial, int64_t rows, int64_t cols) {
  __shared__ float warp_sums[kWarps];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t step = static_cast<int64_t>(gridDim.x) * kWarps;
  float acc = 0.f;  // lane 0's running sum of this warp's row losses
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kWarps + warp; r < rows; r += step) {
    const float* xr = logits + r * cols;
    float m = -INFINITY, s = 0.f;
    if (kVec) {
      const float4* x4 = reinterpret_cast<const float4*>(xr);
      const int64_t n4 = cols / 4;
#pragma unroll 4
      for (int64_t i = lane; i < n4; i += 32) absorb4(m, s, __ldg(x4 + i));
    } else {
      for (int64_t i = lane; i < cols; i += 32) absorb(m, s, __ldg(xr + i));
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
      merge(m, s, __shfl_xor_sync(kFull, m, offset), __shfl_xor_sync(kFull, s, offset));
    }
    if (lane == 0) {
      const int64_t t = target[r];
      // An out-of-range class poisons the loss (PyTorch raises a device-side assert instead).
      const float picked = (t >= 0 && t < cols) ? __ldg(xr + t) : __int_as_float(0x7fc00000);
      acc += m + logf(s) - picked;
    }
  }
  if (lane == 0) warp_sums[warp] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) total += warp_sums[w];
    partial[blockIdx.x] = total;
  }
}

__global__ void __launch_bounds__(kFinishThreads) finish_mean(const float* __restrict__ partial, int n,
                                                              float* __restrict__ out, double inv_rows) {
  __shared__ double sums[kFinishThreads];
  double acc = 0.0;
  for (int i = threadIdx.x; i < n; i += kFinishThreads) acc += partial[i];
  sums[threadIdx.x] = acc;
  __syncthreads();
#pragma unroll
  for (int width = kFinishThreads / 2; width > 0; width >>= 1) {
    if (threadIdx.x < width) sums[threadIdx.x] += sums[threadIdx.x + width];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = static_cast<float>(sums[0] * inv_rows);
}

int resident_blocks(int device) {
  static int sms[64] = {};
  if (device < 0 || device >= 64) device = 0;
  if (sms[device] == 0) {
    int count = 0;
    if (cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || count <= 0) {
      count = 132;
    }
    sms[device] = count;
  }
  return sms[device] * (2048 / kThreads);
}

}  // namespace

const char* ks_cross_entropy(const float* logits, const int64_t* target, float* partial, int64_t partial_size,
                             float* out, int64_t rows, int64_t cols, int device, void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  int64_t blocks = (rows + kWarps - 1) / kWarps;
  if (blocks > resident_blocks(device)) blocks = resident_blocks(device);
  if (blocks > partial_size) blocks = partial_size;
  if (blocks < 1) blocks = 1;  // rows == 0 still writes the (NaN) mean, as PyTorch does
  const bool aligned = (reinterpret_cast<uintptr_t>(logits) & 15) == 0;
  if (aligned && cols % 4 == 0) {
    row_losses<true><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(logits, target, partial, rows, cols);
  } else {
    row_losses<false><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(logits, target, partial, rows, cols);
  }
  const double inv_rows = rows > 0 ? 1.0 / static_cast<double>(rows) : std::numeric_limits<double>::quiet_NaN();
  finish_mean<<<1, kFinishThreads, 0, s>>>(partial, static_cast<int>(blocks), out, inv_rows);
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}
