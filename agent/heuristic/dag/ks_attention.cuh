// The attention family's CUDA kernel: softmax(q k^T * scale + mask) v, tiled with an online softmax. Each thread owns
// one query row (q and its accumulator in registers); a block's threads load tiles of keys and values into shared
// memory together, so every key is read from global memory once per block of queries.
#pragma once
#include <cstdint>
#include <cuda_runtime.h>
#include <stdexcept>
#include <string>

template <int E, int EV, int TILE, typename Mask>
__global__ void ks_attention_kernel(const float* __restrict__ q, const float* __restrict__ k,
                                    const float* __restrict__ v, const Mask* __restrict__ mask, float* __restrict__ out,
                                    int64_t lq, int64_t lk, float scale, bool causal, int mask_kind,
                                    int64_t mask_batch_stride) {
    extern __shared__ float ks_tile[];
    float* kt = ks_tile;             // [TILE, E]
    float* vt = ks_tile + TILE * E;  // [TILE, EV]
    const int64_t b = blockIdx.y;
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const bool active = i < lq;
    float qr[E], acc[EV];
    for (int d = 0; d < E; ++d) qr[d] = active ? q[(b * lq + i) * E + d] * scale : 0.f;
    for (int d = 0; d < EV; ++d) acc[d] = 0.f;
    float m = -INFINITY, l = 0.f;
    const int64_t last_row = ((int64_t)blockIdx.x + 1) * blockDim.x - 1;
    const int64_t end = causal ? (last_row + 1 < lk ? last_row + 1 : lk) : lk;
    const Mask* mrow = mask ? mask + b * mask_batch_stride + i * lk : nullptr;
    for (int64_t j0 = 0; j0 < end; j0 += TILE) {
        for (int t = threadIdx.x; t < TILE * E; t += blockDim.x) {
            const int64_t j = j0 + t / E;
            kt[t] = j < lk ? k[(b * lk + j) * E + t % E] : 0.f;
        }
        for (int t = threadIdx.x; t < TILE * EV; t += blockDim.x) {
            const int64_t j = j0 + t / EV;
            vt[t] = j < lk ? v[(b * lk + j) * EV + t % EV] : 0.f;
        }
        __syncthreads();
        if (active) {
            float s[TILE];
            float tile_max = -INFINITY;
            #pragma unroll 4
            for (int jj = 0; jj < TILE; ++jj) {
                const int64_t j = j0 + jj;
                float score = -INFINITY;
                if (j < lk && !(causal && j > i)) {
                    float dot = 0.f;
                    #pragma unroll
                    for (int d = 0; d < E; ++d) dot += qr[d] * kt[jj * E + d];
                    score = dot;
                    if (mask_kind == 1) score += (float)mrow[j];
                    if (mask_kind == 2 && !mrow[j]) score = -INFINITY;
                }
                s[jj] = score;
                tile_max = fmaxf(tile_max, score);
            }
            if (tile_max != -INFINITY) {
                const float m_new = fmaxf(m, tile_max);
                const float correction = m == -INFINITY ? 0.f : __expf(m - m_new);
                l *= correction;
                #pragma unroll
                for (int d = 0; d < EV; ++d) acc[d] *= correction;
                for (int jj = 0; jj < TILE; ++jj) {
                    if (s[jj] == -INFINITY) continue;
                    const float p = __expf(s[jj] - m_new);
                    l += p;
                    #pragma unroll
                    for (int d = 0; d < EV; ++d) acc[d] += p * vt[jj * EV + d];
                }
                m = m_new;
            }
        }
        __syncthreads();
    }
    if (active) {
        const float inv = l > 0.f ? 1.f / l : NAN;
        for (int d = 0; d < EV; ++d) out[(b * lq + i) * EV + d] = acc[d] * inv;
    }
}

// The tile's shared memory is checked against what this device gives a block (read from the device, not assumed).
template <int E, int EV, int TILE, typename Mask>
static void ks_attention(const float* q, const float* k, const float* v, const Mask* mask, float* out, int64_t batch,
                         int64_t lq, int64_t lk, float scale, bool causal, int mask_kind, int64_t mask_batch_stride,
                         cudaStream_t stream) {
    constexpr int ROWS = 64;
    const size_t bytes = sizeof(float) * TILE * (E + EV);
    static int limit = -1;
    if (limit < 0) {
        int device = 0;
        cudaGetDevice(&device);
        cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
        if (bytes > 48 * 1024 && bytes <= (size_t)limit)
            cudaFuncSetAttribute(ks_attention_kernel<E, EV, TILE, Mask>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)bytes);
    }
    if (bytes > (size_t)limit)
        throw std::runtime_error("attention tile needs " + std::to_string(bytes) + " bytes of shared memory; the "
                                 "device gives a block " + std::to_string(limit));
    dim3 grid((unsigned)((lq + ROWS - 1) / ROWS), (unsigned)batch);
    ks_attention_kernel<E, EV, TILE, Mask><<<grid, ROWS, bytes, stream>>>(q, k, v, mask, out, lq, lk, scale, causal,
                                                                         mask_kind, mask_batch_stride);
}
