// The attention family's C++ kernel (the CPU target): softmax(q k^T * scale + mask) v, one query row per OpenMP
// iteration, keys in tiles with an online softmax (running max and sum), so no score matrix is ever stored.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

constexpr int KS_MASK_DIMS = 4;  // attention.py's MASK_DIMS: a mask needing more batch dims is stored whole

// Where the mask's element (b, i, j) lies, so a mask is read where it is, never expanded to the scores' shape: the
// flat batch index b split over the mask's batch dims (innermost last), each with its stride, 0 along a dim it is
// broadcast over (a key-padding mask's heads), then query i and key j by their own strides.
struct KsMask {
    int rank;
    int64_t size[KS_MASK_DIMS], stride[KS_MASK_DIMS];
    int64_t row, col;
};

static inline int64_t ks_mask_offset(const KsMask& m, int64_t b) {
    int64_t offset = 0;
    for (int d = m.rank - 1; d >= 0; --d) {
        offset += b % m.size[d] * m.stride[d];
        b /= m.size[d];
    }
    return offset;
}

struct KsAttention {
    int64_t batch, lq, lk, e, ev;  // q [batch, lq, e], k [batch, lk, e], v [batch, lk, ev], out [batch, lq, ev]
    float scale;
    bool causal;       // key j takes part in query i's row only when j <= i (torch's is_causal)
    int mask_kind;     // 0 none, 1 added to the scores (float), 2 keep where true (bool)
    float masked_row;  // a row whose every key is masked: NaN for a written-out softmax, 0 for torch's SDPA
    KsMask mask;
};

template <typename Mask>
static void ks_attention(const KsAttention& a, const float* q, const float* k, const float* v, const Mask* mask,
                         float* out, bool parallel) {
    constexpr int64_t TILE = 64;
    #pragma omp parallel for schedule(static) if(parallel)
    for (int64_t row = 0; row < a.batch * a.lq; ++row) {
        const int64_t b = row / a.lq, i = row % a.lq;
        const float* qi = q + row * a.e;
        const float* kb = k + b * a.lk * a.e;
        const float* vb = v + b * a.lk * a.ev;
        const Mask* mrow = mask ? mask + ks_mask_offset(a.mask, b) + i * a.mask.row : nullptr;
        const int64_t mcol = a.mask.col;
        float* o = out + row * a.ev;  // the accumulator, rescaled as the running max grows
        for (int64_t d = 0; d < a.ev; ++d) o[d] = 0.f;
        float m = -INFINITY, l = 0.f, s[TILE];
        const int64_t end = a.causal ? std::min(a.lk, i + 1) : a.lk;
        for (int64_t j0 = 0; j0 < end; j0 += TILE) {
            const int64_t j1 = std::min(end, j0 + TILE);
            float tile_max = -INFINITY;
            for (int64_t j = j0; j < j1; ++j) {
                const float* kj = kb + j * a.e;
                float dot = 0.f;
                #pragma omp simd reduction(+ : dot)
                for (int64_t d = 0; d < a.e; ++d) dot += qi[d] * kj[d];
                float score = dot * a.scale;
                if (a.mask_kind == 1) score += (float)mrow[j * mcol];
                if (a.mask_kind == 2 && !mrow[j * mcol]) score = -INFINITY;
                s[j - j0] = score;
                tile_max = score > tile_max || score != score ? score : tile_max;  // NaN wins, as in torch
            }
            if (tile_max == -INFINITY) continue;
            const float m_new = tile_max > m || tile_max != tile_max ? tile_max : m;
            const float correction = m == -INFINITY ? 0.f : std::exp(m - m_new);
            l *= correction;
            #pragma omp simd
            for (int64_t d = 0; d < a.ev; ++d) o[d] *= correction;
            for (int64_t j = j0; j < j1; ++j) {
                if (s[j - j0] == -INFINITY) continue;
                const float p = std::exp(s[j - j0] - m_new);
                l += p;
                const float* vj = vb + j * a.ev;
                #pragma omp simd
                for (int64_t d = 0; d < a.ev; ++d) o[d] += p * vj[d];
            }
            m = m_new;
        }
        const float inv = l > 0.f || l != l ? 1.f / l : a.masked_row;  // every key masked: o is still all zeros
        #pragma omp simd
        for (int64_t d = 0; d < a.ev; ++d) o[d] *= inv;
    }
}
