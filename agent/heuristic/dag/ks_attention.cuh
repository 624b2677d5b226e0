// The attention family's CUDA kernels: softmax(q k^T * scale + mask) v, tiled with an online softmax.
// - ks_attention_kernel: G threads own one query row (q and an accumulator each, in registers), thread g taking keys
//   g, g + G, ... of each tile, and merge their (max, sum, accumulator) by warp shuffles at the end; a block's threads
//   load tiles of keys and values into shared memory together, so every key is read from global memory once per block
//   of queries. G is chosen at launch: 1 when the query rows alone fill the device, up to 8 when they are few.
// - ks_attention_tiled_kernel: for many long rows, a block of 16 x RM query rows against tiles of 16 x CK keys, each
//   of its 256 threads computing an RM x CK patch of scores and an RM x ceil(EV / 16) patch of the output from shared
//   memory, so every value loaded from shared memory feeds several multiply-adds (the row kernel does one per load,
//   and keeps a whole query row and accumulator in registers, which spill past head dims of about 64).
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

// The tiled kernel: blockDim 256 = 16 (tx, key and value columns) x 16 (ty, query rows). Thread (ty, tx) owns query
// rows ty * RM + r of the block's BQ = 16 * RM and keys tx + 16 * c of each tile of BK = 16 * CK; the 16 threads of
// a row group are adjacent lanes of one warp, so a row's max and sum merge by shuffles within 16 lanes. Shared
// memory: q (scaled) and the key tile transposed ([E][BQ + 1], [E][BK + 1]: rows padded so that the loads' transposed
// writes and the column reads both spread over the banks), the value tile [BK][EV], the probabilities [BQ][BK + 1].
constexpr int KS_TILED_THREADS = 256;

template <int E, int EV, int RM, int CK>
constexpr size_t ks_tiled_floats() {
    return (size_t)E * (16 * RM + 1) + (size_t)E * (16 * CK + 1) + (size_t)(16 * CK) * EV + (size_t)(16 * RM) * (16 * CK + 1);
}

template <int E, int EV, int RM, int CK, typename Mask>
__global__ void __launch_bounds__(KS_TILED_THREADS)
ks_attention_tiled_kernel(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
                          const Mask* __restrict__ mask, float* __restrict__ out, int64_t lq, int64_t lk, float scale,
                          bool causal, int mask_kind, float masked_row, KsMask mm) {
    constexpr int BQ = 16 * RM, QP = BQ + 1, BK = 16 * CK, KP = BK + 1, CV = (EV + 15) / 16;
    extern __shared__ float ks_tile[];
    float* qt = ks_tile;          // [E][QP]
    float* kt = qt + E * QP;      // [E][KP]
    float* vt = kt + E * KP;      // [BK][EV]
    float* pt = vt + BK * EV;     // [BQ][KP]
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int64_t b = blockIdx.y, i0 = (int64_t)blockIdx.x * BQ;
    for (int t = threadIdx.x; t < BQ * E; t += KS_TILED_THREADS) {
        const int64_t i = i0 + t / E;
        qt[(t % E) * QP + t / E] = i < lq ? q[(b * lq + i) * E + t % E] * scale : 0.f;
    }
    const Mask* mbase = mask ? mask + ks_mask_offset(mm, b) : nullptr;
    float m[RM], l[RM], acc[RM][CV];
    #pragma unroll
    for (int r = 0; r < RM; ++r) {
        m[r] = -INFINITY;
        l[r] = 0.f;
        #pragma unroll
        for (int c = 0; c < CV; ++c) acc[r][c] = 0.f;
    }
    const int64_t last_row = i0 + BQ - 1;
    const int64_t end = causal ? (last_row + 1 < lk ? last_row + 1 : lk) : lk;
    for (int64_t j0 = 0; j0 < end; j0 += BK) {
        __syncthreads();  // the previous tile's keys, values and probabilities are read by every thread
        for (int t = threadIdx.x; t < BK * E; t += KS_TILED_THREADS) {
            const int64_t j = j0 + t / E;
            kt[(t % E) * KP + t / E] = j < lk ? k[(b * lk + j) * E + t % E] : 0.f;
        }
        for (int t = threadIdx.x; t < BK * EV; t += KS_TILED_THREADS) {
            const int64_t j = j0 + t / EV;
            vt[t] = j < lk ? v[(b * lk + j) * EV + t % EV] : 0.f;
        }
        __syncthreads();
        float s[RM][CK];
        #pragma unroll
        for (int r = 0; r < RM; ++r)
            #pragma unroll
            for (int c = 0; c < CK; ++c) s[r][c] = 0.f;
        #pragma unroll 4
        for (int d = 0; d < E; ++d) {
            float qv[RM], kv[CK];
            #pragma unroll
            for (int r = 0; r < RM; ++r) qv[r] = qt[d * QP + ty * RM + r];
            #pragma unroll
            for (int c = 0; c < CK; ++c) kv[c] = kt[d * KP + tx + 16 * c];
            #pragma unroll
            for (int r = 0; r < RM; ++r)
                #pragma unroll
                for (int c = 0; c < CK; ++c) s[r][c] += qv[r] * kv[c];
        }
        #pragma unroll
        for (int r = 0; r < RM; ++r) {
            const int64_t i = i0 + ty * RM + r;
            float tile_max = -INFINITY;
            #pragma unroll
            for (int c = 0; c < CK; ++c) {
                const int64_t j = j0 + tx + 16 * c;
                float score = s[r][c];
                if (j >= lk || (causal && j > i)) {
                    score = -INFINITY;
                } else if (mask_kind != 0 && i < lq) {
                    const Mask x = mbase[i * mm.row + j * mm.col];
                    if (mask_kind == 1) score += (float)x;
                    if (mask_kind == 2 && !x) score = -INFINITY;
                }
                s[r][c] = score;
                tile_max = score > tile_max || score != score ? score : tile_max;  // NaN wins, as in torch
            }
            #pragma unroll
            for (int offset = 8; offset > 0; offset /= 2) {  // within the row's 16 lanes
                const float other = __shfl_xor_sync(0xffffffffu, tile_max, offset);
                tile_max = other > tile_max || other != other ? other : tile_max;
            }
            const float m_new = tile_max > m[r] || tile_max != tile_max ? tile_max : m[r];
            const float correction = m[r] == -INFINITY ? 0.f : __expf(m[r] - m_new);
            float sum = 0.f;
            #pragma unroll
            for (int c = 0; c < CK; ++c) {
                const float p = s[r][c] == -INFINITY ? 0.f : __expf(s[r][c] - m_new);
                sum += p;
                pt[(ty * RM + r) * KP + tx + 16 * c] = p;
            }
            #pragma unroll
            for (int offset = 8; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
            l[r] = l[r] * correction + sum;
            m[r] = m_new;
            #pragma unroll
            for (int c = 0; c < CV; ++c) acc[r][c] *= correction;
        }
        __syncthreads();  // the tile's probabilities, from every thread of the row groups
        const int jn = end - j0 < BK ? (int)(end - j0) : BK;
        for (int jj = 0; jj < jn; ++jj) {
            float pv[RM], vv[CV];
            #pragma unroll
            for (int r = 0; r < RM; ++r) pv[r] = pt[(ty * RM + r) * KP + jj];
            #pragma unroll
            for (int c = 0; c < CV; ++c) vv[c] = tx + 16 * c < EV ? vt[jj * EV + tx + 16 * c] : 0.f;
            #pragma unroll
            for (int r = 0; r < RM; ++r)
                #pragma unroll
                for (int c = 0; c < CV; ++c) acc[r][c] += pv[r] * vv[c];
        }
    }
    #pragma unroll
    for (int r = 0; r < RM; ++r) {
        const int64_t i = i0 + ty * RM + r;
        if (i >= lq) continue;
        const float inv = l[r] > 0.f || l[r] != l[r] ? 1.f / l[r] : masked_row;  // every key masked: acc is zeros
        #pragma unroll
        for (int c = 0; c < CV; ++c)
            if (tx + 16 * c < EV) out[(b * lq + i) * EV + tx + 16 * c] = acc[r][c] * inv;
    }
}

// Whether the tiled kernel's shared memory fits what this device gives a block (opted in past 48 KB once), read
// from the device.
template <int E, int EV, int RM, int CK, typename Mask>
static bool ks_attention_tiled_fits(int device) {
    static int fits = -1;
    if (fits < 0) {
        int limit = 0;
        cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
        const size_t bytes = sizeof(float) * ks_tiled_floats<E, EV, RM, CK>();
        fits = bytes <= (size_t)limit;
        if (fits && bytes > 48 * 1024)
            fits = cudaFuncSetAttribute(ks_attention_tiled_kernel<E, EV, RM, CK, Mask>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes) == cudaSuccess;
    }
    return fits == 1;
}

template <int E, int EV, int RM, int CK, typename Mask>
static void ks_attention_tiled_launch(const float* q, const float* k, const float* v, const Mask* mask, float* out,
                                      int64_t batch, int64_t lq, int64_t lk, float scale, bool causal, int mask_kind,
                                      float masked_row, const KsMask& mm, cudaStream_t stream) {
    const size_t bytes = sizeof(float) * ks_tiled_floats<E, EV, RM, CK>();
    dim3 grid((unsigned)((lq + 16 * RM - 1) / (16 * RM)), (unsigned)batch);
    ks_attention_tiled_kernel<E, EV, RM, CK, Mask><<<grid, KS_TILED_THREADS, bytes, stream>>>(
        q, k, v, mask, out, lq, lk, scale, causal, mask_kind, masked_row, mm);
}

// The tiled kernel's shape: 4 query rows a thread, and 4 keys for heads up to 64 wide, 2 past that, whose shared
// memory grows with the head (nvcc for sm_90: 128 registers at 64 wide, no spills; 75 KB of shared memory at 128).
template <int E, int EV>
struct KsTiledShape {
    static constexpr int RM = 4;
    static constexpr int CK = (E > 64 || EV > 64) ? 2 : 4;
};

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
    // Many rows, each against two tiles of keys or more: the tiled kernel, when its blocks give every multiprocessor
    // one at least every other (256 threads each) and its shared memory fits.
    using Shape = KsTiledShape<E, EV>;
    const int64_t blocks = batch * ((lq + 16 * Shape::RM - 1) / (16 * Shape::RM));
    if (lk >= 16 * Shape::CK * 2 && 2 * blocks >= sms && ks_attention_tiled_fits<E, EV, Shape::RM, Shape::CK, Mask>(device))
        return ks_attention_tiled_launch<E, EV, Shape::RM, Shape::CK, Mask>(q, k, v, mask, out, batch, lq, lk, scale,
                                                                            causal, mask_kind, masked_row, mm, stream);
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
