// CUDA kernels run on CPU threads, for tests on a machine without a GPU: a block's threads are std::threads meeting
// at a std::barrier for __syncthreads, warp shuffles go through the block's exchange buffer (every thread of the
// block must take part, as they do in the kernels tested here), blocks run one after another, and the dynamic shared
// memory is one buffer. Launches (`kernel<<<grid, threads, bytes, stream>>>(args)`) are rewritten by the test into
// ks_emulated_launch(grid, threads, bytes, stream, [&] { kernel(args); }).
#pragma once
#include <barrier>
#include <stdexcept>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
typedef void* cudaStream_t;
typedef int cudaError_t;
constexpr cudaError_t cudaSuccess = 0;
enum cudaDeviceAttr { cudaDevAttrMultiProcessorCount, cudaDevAttrMaxSharedMemoryPerBlockOptin };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize };

thread_local dim3 threadIdx, blockIdx;
dim3 blockDim, gridDim;
int ks_emulated_sms = 132;  // what the device reports as its multiprocessor count: the tests set it
constexpr int KS_EMULATED_SHARED = 227 * 1024;
alignas(16) float ks_tile[KS_EMULATED_SHARED / sizeof(float)];
static std::barrier<>* ks_block_barrier = nullptr;
static std::vector<float> ks_exchange;

inline void __syncthreads() { ks_block_barrier->arrive_and_wait(); }

inline float __shfl_xor_sync(unsigned, float value, int offset) {
    const unsigned t = threadIdx.x;
    ks_exchange[t] = value;
    __syncthreads();
    const float other = ks_exchange[(t & ~31u) | ((t & 31u) ^ (unsigned)offset)];
    __syncthreads();
    return other;
}

inline float __expf(float x) { return std::exp(x); }

inline cudaError_t cudaGetDevice(int* device) { return *device = 0, cudaSuccess; }
inline cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int) {
    *value = attr == cudaDevAttrMultiProcessorCount ? ks_emulated_sms : KS_EMULATED_SHARED;
    return cudaSuccess;
}
template <typename F>
inline cudaError_t cudaFuncSetAttribute(F, cudaFuncAttribute, int) { return cudaSuccess; }

inline void ks_emulated_launch(dim3 grid, dim3 block, size_t bytes, cudaStream_t, const std::function<void()>& kernel) {
    if (bytes > sizeof(ks_tile)) throw std::runtime_error("dynamic shared memory past the emulated device's");
    gridDim = grid;
    blockDim = block;
    const unsigned threads = block.x * block.y * block.z;
    std::barrier<> barrier((std::ptrdiff_t)threads);
    ks_block_barrier = &barrier;
    ks_exchange.assign(threads, 0.f);
    for (unsigned z = 0; z < grid.z; ++z)
        for (unsigned y = 0; y < grid.y; ++y)
            for (unsigned x = 0; x < grid.x; ++x) {
                std::vector<std::thread> pool;
                for (unsigned t = 0; t < threads; ++t)
                    pool.emplace_back([&, t] {
                        blockIdx = dim3(x, y, z);
                        threadIdx = dim3(t % block.x, t / block.x % block.y, t / (block.x * block.y));
                        kernel();
                    });
                for (auto& thread : pool) thread.join();
            }
    ks_block_barrier = nullptr;
}
