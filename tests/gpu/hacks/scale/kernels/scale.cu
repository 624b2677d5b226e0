// y = 2x + 1, honest or misbehaving on purpose: the test double of tests/gpu/test_gpu_anti_hacking.py. An
// optional spin at the start of every thread (spin_us at the SM's peak clock, longer below it) makes the
// kernel long enough to time reliably; the grid is one wave, so the whole kernel takes about that long.
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>

#include "scale.h"

namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) scale_shift(const float* __restrict__ x, float* __restrict__ y, int64_t n,
                                                        int64_t spin_cycles) {
  if (spin_cycles > 0) {  // SM clock cycles: they always advance, whatever the platform's timers do
    const long long start = clock64();
    while (clock64() - start < spin_cycles) {
    }
  }
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) {
    y[i] = 2.f * x[i] + 1.f;
  }
}

__global__ void hang_forever(float* y) {
  volatile float* sink = y;
  for (;;) sink[0] = 0.f;  // a volatile store every turn: the loop cannot be optimized away
}

cudaStream_t side_stream(const char** error) {
  static std::once_flag once;
  static cudaStream_t stream = nullptr;
  static cudaError_t created = cudaSuccess;
  std::call_once(once, [] { created = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); });
  *error = created == cudaSuccess ? nullptr : cudaGetErrorString(created);
  return stream;
}

int64_t cycles_per_us(int device) {
  int khz = 0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device) != cudaSuccess || khz <= 0) khz = 1980000;
  return khz / 1000;
}

unsigned grid_for(int64_t n, int device) {
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || sms <= 0) sms = 132;
  const int64_t blocks = (n + kThreads - 1) / kThreads, resident = static_cast<int64_t>(sms) * (2048 / kThreads);
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks < resident ? blocks : resident));  // one wave
}

}  // namespace

const char* ks_scale(const float* x, float* y, int64_t n, int64_t behavior, int64_t spin_us, int device,
                     void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const int64_t spin = spin_us > 0 ? spin_us * cycles_per_us(device) : 0;
  switch (behavior) {
    case kHonest:
      scale_shift<<<grid_for(n, device), kThreads, 0, s>>>(x, y, n, spin);
      break;
    case kSideStream: {
      const char* error = nullptr;
      cudaStream_t side = side_stream(&error);
      if (error != nullptr) return error;
      scale_shift<<<grid_for(n, device), kThreads, 0, side>>>(x, y, n, spin);
      break;
    }
    case kIllegalAddress:
      scale_shift<<<grid_for(n, device), kThreads, 0, s>>>(x, reinterpret_cast<float*>(uintptr_t{64}), n, spin);
      break;
    case kHang:
      hang_forever<<<1, 1, 0, s>>>(y);
      break;
    case kHalfOutput:
      scale_shift<<<grid_for(n / 2, device), kThreads, 0, s>>>(x, y, n / 2, spin);
      break;
    default:
      return "unknown behaviour";
  }
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}
