// The attention family's CUDA kernel: softmax(q k^T * scale + mask) v, tiled with an online softmax. G threads own
// one query row (q and an accumulator each, in registers), thread g taking keys g, g + G, ... of each tile, and merge
// their (max, sum, accumulator) by warp shuffles at the end; a block's threads load tiles of keys and values into
// shared memory together, so every key is read from global memory once per block of queries. G is chosen at launch:
// 1 when the query rows alone fill the device, up to 8 when they are few (a short sequence, a small batch).
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

template <int E, int EV, int TILE, int G, typename Mask>
__global__ void ks_attention_kernel(const float* __restrict__ q, const float* __restrict__ k,
                                    const float* __restrict__ v, const Mask* __restrict__ mask, float* __restrict__ out,
                                    int64_t lq, int64_t lk, float scale, bool causal, int mask_kind,
                                    float masked_row, KsMask mm) {
    static_assert(G >= 1 && G <= 32 && (G & (G - 1)) == 0 && TILE % G == 0, "G: a power of two dividing TILE");
    // A tile's rows padded by a float when G > 1, so that a row's G threads (reading G different keys) hit G banks
    constexpr int KS = E + (G > 1), VS = EV + (G > 1);
    extern __shared__ float ks_tile[];
    float* kt = ks_tile;              // [TILE, KS]
    float* vt = ks_tile + TILE * KS;  // [TILE, VS]
    const int64_t b = blockIdx.y;
    const int rows = blockDim.x / G, g = threadIdx.x % G;  // a row's G threads are adjacent lanes of one warp
    const int64_t i = (int64_t)blockIdx.x * rows + threadIdx.x / G;
    const bool active = i < lq;
    float qr[E], acc[EV];
    for (int d = 0; d < E; ++d) qr[d] = active ? q[(b * lq + i) * E + d] * scale : 0.f;
    for (int d = 0; d < EV; ++d) acc[d] = 0.f;
    float m = -INFINITY, l = 0.f;
    const int64_t last_row = ((int64_t)blockIdx.x + 1) * rows - 1;
    const int64_t end = causal ? (last_row + 1 < lk ? last_row + 1 : lk) : lk;
    const Mask* mrow = mask ? mask + ks_mask_offset(mm, b) + i * mm.row : nullptr;
    for (int64_t j0 = 0; j0 < end; j0 += TILE) {
        for (int t = threadIdx.x; t < TILE * E; t += blockDim.x) {
            const int64_t j = j0 + t / E;
            kt[t / E * KS + t % E] = j < lk ? k[(b * lk + j) * E + t % E] : 0.f;
        }
        for (int t = threadIdx.x; t < TILE * EV; t += blockDim.x) {
            const int64_t j = j0 + t / EV;
            vt[t / EV * VS + t % EV] = j < lk ? v[(b * lk + j) * EV + t % EV] : 0.f;
        }
        __syncthreads();
        if (active) {
            float s[TILE / G];
            float tile_max = -INFINITY;
            #pragma unroll 4
            for (int u = 0; u < TILE / G; ++u) {
                const int jj = u * G + g;
                const int64_t j = j0 + jj;
                float score = -INFINITY;
                if (j < lk && !(causal && j > i)) {
                    float dot = 0.f;
                    #pragma unroll
                    for (int d = 0; d < E; ++d) dot += qr[d] * kt[jj * KS + d];
                    score = dot;
                    if (mask_kind == 1) score += (float)mrow[j * mm.col];
                    if (mask_kind == 2 && !mrow[j * mm.col]) score = -INFINITY;
                }
                s[u] = score;
                tile_max = score > tile_max || score != score ? score : tile_max;  // NaN wins, as in torch
            }
            if (tile_max != -INFINITY) {
                const float m_new = tile_max > m || tile_max != tile_max ? tile_max : m;
                const float correction = m == -INFINITY ? 0.f : __expf(m - m_new);
                l *= correction;
                #pragma unroll
                for (int d = 0; d < EV; ++d) acc[d] *= correction;
                for (int u = 0; u < TILE / G; ++u) {
                    if (s[u] == -INFINITY) continue;
                    const float p = __expf(s[u] - m_new);
                    l += p;
                    const int jj = u * G + g;
                    #pragma unroll
                    for (int d = 0; d < EV; ++d) acc[d] += p * vt[jj * VS + d];
                }
                m = m_new;
            }
        }
        __syncthreads();
    }
    // The row's G partial softmaxes merged (every lane takes part, inactive rows' too: blockDim.x is a multiple of 32)
    #pragma unroll
    for (int offset = G / 2; offset > 0; offset /= 2) {
        const float m_other = __shfl_xor_sync(0xffffffffu, m, offset);
        const float l_other = __shfl_xor_sync(0xffffffffu, l, offset);
        const float m_new = m_other > m || m_other != m_other ? m_other : m;
        const float mine = m == -INFINITY ? 0.f : __expf(m - m_new);
        const float theirs = m_other == -INFINITY ? 0.f : __expf(m_other - m_new);
        l = l * mine + l_other * theirs;
        #pragma unroll
        for (int d = 0; d < EV; ++d) acc[d] = acc[d] * mine + __shfl_xor_sync(0xffffffffu, acc[d], offset) * theirs;
        m = m_new;
    }
    if (active && g == 0) {
        const float inv = l > 0.f || l != l ? 1.f / l : masked_row;  // every key masked: acc is still all zeros
        for (int d = 0; d < EV; ++d) out[(b * lq + i) * EV + d] = acc[d] * inv;
    }
}

// One launch of the kernel with G threads a query row; the tile's shared memory is checked against what this device
// gives a block (read from the device, not assumed).
template <int E, int EV, int TILE, int G, typename Mask>
static void ks_attention_launch(const float* q, const float* k, const float* v, const Mask* mask, float* out,
                                int64_t batch, int64_t lq, int64_t lk, float scale, bool causal, int mask_kind,
                                float masked_row, const KsMask& mm, int device, cudaStream_t stream) {
    constexpr int THREADS = G == 1 ? 64 : 128;
    const size_t bytes = sizeof(float) * TILE * (E + EV + 2 * (G > 1));
    static int limit = -1;
    if (limit < 0) {
        cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
        if (bytes > 48 * 1024 && bytes <= (size_t)limit)
            cudaFuncSetAttribute(ks_attention_kernel<E, EV, TILE, G, Mask>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    }
    if (bytes > (size_t)limit)
        throw std::runtime_error("attention tile needs " + std::to_string(bytes) + " bytes of shared memory; the "
                                 "device gives a block " + std::to_string(limit));
    constexpr int ROWS = THREADS / G;
    dim3 grid((unsigned)((lq + ROWS - 1) / ROWS), (unsigned)batch);
    ks_attention_kernel<E, EV, TILE, G, Mask><<<grid, THREADS, bytes, stream>>>(q, k, v, mask, out, lq, lk, scale,
                                                                               causal, mask_kind, masked_row, mm);
}

// G, the threads sharing a query row: the fewest (a power of two, at most 8) that put about 1024 threads on each of
// the device's multiprocessors, so that a short sequence or a small batch still fills it.
template <int E, int EV, int TILE, typename Mask>
static void ks_attention(const float* q, const float* k, const float* v, const Mask* mask, float* out, int64_t batch,
                         int64_t lq, int64_t lk, float scale, bool causal, int mask_kind, float masked_row,
                         const KsMask& mm, cudaStream_t stream) {
    static int device = -1, sms = 0;
    if (device < 0) {
        cudaGetDevice(&device);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    }
    int g = 1;
    while (g < 8 && batch * lq * g < (int64_t)sms * 1024) g *= 2;
    switch (g) {
        case 1: return ks_attention_launch<E, EV, TILE, 1, Mask>(q, k, v, mask, out, batch, lq, lk, scale, causal,
                                                                 mask_kind, masked_row, mm, device, stream);
        case 2: return ks_attention_launch<E, EV, TILE, 2, Mask>(q, k, v, mask, out, batch, lq, lk, scale, causal,
                                                                 mask_kind, masked_row, mm, device, stream);
        case 4: return ks_attention_launch<E, EV, TILE, 4, Mask>(q, k, v, mask, out, batch, lq, lk, scale, causal,
                                                                 mask_kind, masked_row, mm, device, stream);
        default: return ks_attention_launch<E, EV, TILE, 8, Mask>(q, k, v, mask, out, batch, lq, lk, scale, causal,
                                                                  mask_kind, masked_row, mm, device, stream);
    }
}
