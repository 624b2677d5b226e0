#include <cstdint>
#include <cuda_runtime.h>

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

// One block per row: coalesced float4 loads (when the row allows), a register accumulator per thread, warp
// shuffles, then one value per warp through shared memory and a final warp reduction.
__global__ void rowsum_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t cols, bool vec4) {
    const float* row = x + blockIdx.x * cols;
    float acc = 0.0f;
    int64_t j = 0;
    if (vec4) {
        const float4* row4 = reinterpret_cast<const float4*>(row);
        for (int64_t k = threadIdx.x; k < cols / 4; k += blockDim.x) {
            float4 v = row4[k];
            acc += (v.x + v.y) + (v.z + v.w);
        }
        j = cols / 4 * 4;
    }
    for (j += threadIdx.x; j < cols; j += blockDim.x) acc += row[j];
    acc = warp_sum(acc);
    __shared__ float partial[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) partial[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        acc = lane < (blockDim.x + 31) / 32 ? partial[lane] : 0.0f;
        acc = warp_sum(acc);
        if (lane == 0) out[blockIdx.x] = acc;
    }
}

void rowsum_launch(const float* x, float* out, int64_t rows, int64_t cols, cudaStream_t stream) {
    if (rows == 0) return;
    // float4 rows need a 16-byte aligned base and a row length divisible by 4.
    bool vec4 = (reinterpret_cast<uintptr_t>(x) & 15) == 0 && cols % 4 == 0;
    rowsum_kernel<<<(unsigned)rows, 256, 0, stream>>>(x, out, cols, vec4);
}
