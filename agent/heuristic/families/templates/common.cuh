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

// The online softmax's statistics of a row: its max m and the sum s of exp(x - m) over it. A row of -inf alone has
// m = -inf and s = 0 (never exp(-inf - -inf), which is NaN); a +inf gives NaN, as exp(x - max(x)) does.
template <typename T> struct KsMaxSum { T m, s; };
__device__ __forceinline__ float ks_exp(float x) { return expf(x); }
__device__ __forceinline__ double ks_exp(double x) { return exp(x); }
// One more element v of the row: the sum rescaled to a new max first.
template <typename T> __device__ __forceinline__ KsMaxSum<T> ks_online(KsMaxSum<T> a, T v) {
    if (v > a.m) { a.s *= ks_exp(a.m - v); a.m = v; }
    if (a.m != -INFINITY) a.s += ks_exp(v - a.m);
    return a;
}
// Two parts of a row: each sum rescaled to the larger max.
template <typename T> __device__ __forceinline__ KsMaxSum<T> ks_merge(KsMaxSum<T> a, KsMaxSum<T> b) {
    const T m = a.m > b.m ? a.m : b.m;
    return {m, (a.m == -INFINITY ? T(0) : a.s * ks_exp(a.m - m)) + (b.m == -INFINITY ? T(0) : b.s * ks_exp(b.m - m))};
}
// A lane's value O lanes away: a scalar (float, double, integers; bool as int), or a KsMaxSum's two halves.
template <typename T> __device__ __forceinline__ KsMaxSum<T> ks_shfl_xor(KsMaxSum<T> v, int o) {
    return {__shfl_xor_sync(0xffffffff, v.m, o), __shfl_xor_sync(0xffffffff, v.s, o)};
}
template <typename T> __device__ __forceinline__ T ks_shfl_xor(T v, int o) {
    if constexpr (std::is_same<T, bool>::value) {
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
