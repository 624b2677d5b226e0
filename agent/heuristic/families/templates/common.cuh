// What every CUDA kernel file of the chain planner's families starts with (families/common.py): its includes, the
// block size, and the grid of a grid-stride loop, asked of the device it runs on; then, for the families that reduce
// within a block (rows, batch norm), the block reduction.
//@ prelude
#include <cuda_runtime.h>
#include <cstdint>
#include <math.h>
#ifndef BLOCK
#define BLOCK ${block}
#endif
// A grid-stride loop's grid: 32 blocks per multiprocessor of the device it runs on (asked once, not assumed).
static inline int ks_grid_limit() {
    static int limit = 0;
    if (!limit) {
        int device = 0, sms = 0;
        cudaGetDevice(&device);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
        limit = (sms > 0 ? sms : 1) * 32;
    }
    return limit;
}
//@ block_reduce
#include <type_traits>

struct MaxSum { float m, s; };
__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
    float m = fmaxf(a.m, b.m);
    float s = (a.m == -INFINITY ? 0.f : a.s * __expf(a.m - m)) + (b.m == -INFINITY ? 0.f : b.s * __expf(b.m - m));
    return {m, s};
}
// A lane's value O lanes away: a scalar (float, double, integers; bool as int) or a MaxSum's two halves.
template <typename T> __device__ __forceinline__ T ks_shfl_xor(T v, int o) {
    if constexpr (std::is_same<T, MaxSum>::value) {
        return {__shfl_xor_sync(0xffffffff, v.m, o), __shfl_xor_sync(0xffffffff, v.s, o)};
    } else if constexpr (std::is_same<T, bool>::value) {
        return (bool)__shfl_xor_sync(0xffffffff, (int)v, o);
    } else {
        return __shfl_xor_sync(0xffffffff, v, o);
    }
}
template <typename T, typename F> __device__ T block_reduce(T v, F f) {
    __shared__ T shared[32];
    for (int o = 16; o > 0; o >>= 1) {
        v = f(v, ks_shfl_xor(v, o));
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    int warps = (blockDim.x + 31) >> 5;
    v = shared[lane < warps ? lane : 0];
    if (warp == 0) {
        for (int o = 16; o > 0; o >>= 1) {
            const T other = ks_shfl_xor(v, o);
            if (lane < warps && (lane ^ o) < warps) v = f(v, other);
        }
        if (lane == 0) shared[0] = v;
    }
    __syncthreads();
    T out = shared[0];
    __syncthreads();
    return out;
}
