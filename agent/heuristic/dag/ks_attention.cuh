// The attention family's CUDA kernel: softmax(q k^T * scale + mask) v, tiled with an online softmax. Each thread owns
// one query row (q and its accumulator in registers); a block's threads load tiles of keys and values into shared
// memory together, so every key is read from global memory once per block of queries.
#pragma once
#include <cstdint>
#include <cuda_runtime.h>
#include <stdexcept>
#include <string>

constexpr int KS_MASK_DIMS = 4;  // attention.py's MASK_DIMS: a mask needing more batch dims is stored whole

// Where the mask's element (b, i, j) lies, so a mask is read where it is, never expanded to the scores' shape: the
// flat batch index b split over the mask's batch dims (innermost last), each with its stride, 0 along a dim it is
// broadcast over (a key-padding mask's heads), then query i and key j by their own strides.
struct KsMask {
    int rank;
    int64_t size[KS_MASK_DIMS], stride[KS_MASK_DIMS];
    int64_t row, col;
};

__device__ __forceinline__ int64_t ks_mask_offset(const KsMask& m, int64_t b) {
    int64_t offset = 0;
    for (int d = m.rank - 1; d >= 0; --d) {
        offset += b % m.size[d] * m.stride[d];
        b /= m.size[d];
    }
    return offset;
}

template <int E, int EV, int TILE, typename Mask>
__global__ void ks_attention_kernel(const float* __restrict__ q, const float* __restrict__ k,
                                    const float* __restrict__ v, const Mask* __restrict__ mask, float* __restrict__ out,
                                    int64_t lq, int64_t lk, float scale, bool causal, int mask_kind,
                                    float masked_row, KsMask mm) {
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
    const Mask* mrow = mask ? mask + ks_mask_offset(mm, b) + i * mm.row : nullptr;
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
                    if (mask_kind == 1) score += (float)mrow[j * mm.col];
                    if (mask_kind == 2 && !mrow[j * mm.col]) score = -INFINITY;
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
        const float inv = l > 0.f ? 1.f / l : masked_row;  // every key masked: acc is still all zeros
        for (int d = 0; d < EV; ++d) out[(b * lq + i) * EV + d] = acc[d] * inv;
    }
}

// The tile's shared memory is checked against what this device gives a block (read from the device, not assumed).
template <int E, int EV, int TILE, typename Mask>
static void ks_attention(const float* q, const float* k, const float* v, const Mask* mask, float* out, int64_t batch,
                         int64_t lq, int64_t lk, float scale, bool causal, int mask_kind, float masked_row,
                         const KsMask& mm, cudaStream_t stream) {
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
                                                                         mask_kind, masked_row, mm);
}
