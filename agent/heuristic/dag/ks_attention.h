// The attention family's C++ kernel (the CPU target): softmax(q k^T * scale + mask) v with an online softmax (running
// max and sum per query), so no score matrix is ever stored. A work item is one batch's block of query rows held
// transposed, so every step is vectorized across the block's queries: a score tile is several keys times the block
// (each key element broadcast against a vector of queries, no horizontal sums, no packing of k), the softmax's max,
// exp and sum are elementwise, and p v accumulates value dims times the block the same way.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <omp.h>

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

// Floats per vector register, and accumulators a micro-kernel keeps in registers (half the register file).
#if defined(__AVX512F__)
constexpr int KS_LANES = 16, KS_ACC = 16;
#elif defined(__AVX__)
constexpr int KS_LANES = 8, KS_ACC = 8;
#else
constexpr int KS_LANES = 4, KS_ACC = 8;
#endif
typedef float KsVec __attribute__((vector_size(KS_LANES * sizeof(float))));
typedef int32_t KsIntVec __attribute__((vector_size(KS_LANES * sizeof(int32_t))));
constexpr int64_t KS_KEY_TILE = 64;

static inline KsVec ks_splat(float x) {  // not {} + x: +0 + -0 is +0
    KsVec v;
    for (int i = 0; i < KS_LANES; ++i) v[i] = x;
    return v;
}

// exp elementwise (Cephes' polynomial, about 1 ulp), exact where the softmax needs it: exp(-inf) = 0, NaN stays NaN.
// Results below FLT_MIN are 0 (a probability that small changes no sum: the running max contributes exp(0) = 1), and
// arguments above 88 give inf (a softmax's never exceed 0).
static inline KsVec ks_exp(KsVec x) {
    const KsVec lo = ks_splat(-87.33654f), hi = ks_splat(88.f);
    const KsVec c = x < lo ? lo : (x > hi ? hi : x);  // NaN passes through
    const KsVec n = (c * 1.44269504f + 12582912.f) - 12582912.f;  // rounded to the nearest integer
    const KsVec r = c - n * 0.693359375f + n * 2.12194440e-4f;
    KsVec p = ks_splat(1.9875691500e-4f);
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.f;
    const KsIntVec bits = (__builtin_convertvector(n, KsIntVec) + 127) << 23;
    KsVec scale;
    std::memcpy(&scale, &bits, sizeof scale);
    const KsVec y = p * scale;
    return x < lo ? ks_splat(0.f) : (x > hi ? ks_splat(INFINITY) : (x != x ? x : y));
}

static inline KsVec ks_load(const float* p) {
    KsVec x;
    std::memcpy(&x, p, sizeof x);
    return x;
}

static inline void ks_store(float* p, KsVec x) { std::memcpy(p, &x, sizeof x); }

// One work item: rows [i0, i0 + n) of batch b, n <= NQ * KS_LANES. BUF holds the block's transposed q [e][QB], a
// score tile [KS_KEY_TILE][QB], the transposed accumulator [ev][QB] and the running max, sum and correction [QB].
template <int NQ, typename Mask>
static void ks_attention_block(const KsAttention& a, const float* q, const float* k, const float* v, const Mask* mask,
                               float* out, int64_t b, int64_t i0, int64_t n, float* buf) {
    constexpr int QB = NQ * KS_LANES, KR = std::min(8, KS_ACC / NQ);  // queries a block, keys (value dims) a step
    float* qt = buf;
    float* s = qt + a.e * QB;
    float* o = s + KS_KEY_TILE * QB;
    float *m = o + a.ev * QB, *l = m + QB, *corr = l + QB;
    for (int64_t d = 0; d < a.e; ++d)
        for (int r = 0; r < QB; ++r) qt[d * QB + r] = r < n ? q[(b * a.lq + i0 + r) * a.e + d] : 0.f;
    std::fill(o, o + a.ev * QB, 0.f);
    std::fill(m, m + QB, -INFINITY);
    std::fill(l, l + QB, 0.f);
    const float* kb = k + b * a.lk * a.e;
    const float* vb = v + b * a.lk * a.ev;
    const Mask* mb = mask ? mask + ks_mask_offset(a.mask, b) + i0 * a.mask.row : nullptr;
    const int64_t end = a.causal ? std::min(a.lk, i0 + n) : a.lk;
    for (int64_t j0 = 0; j0 < end; j0 += KS_KEY_TILE) {
        const int64_t nk = std::min(end - j0, KS_KEY_TILE);
        // scores: KR keys (the last group repeats the tile's last key) times the block's queries
        for (int64_t jj = 0; jj < nk; jj += KR) {
            const float* kr[KR];
            for (int r = 0; r < KR; ++r) kr[r] = kb + (j0 + std::min<int64_t>(jj + r, nk - 1)) * a.e;
            KsVec acc[KR][NQ] = {};
            for (int64_t d = 0; d < a.e; ++d) {
                KsVec qv[NQ];
                for (int c = 0; c < NQ; ++c) qv[c] = ks_load(qt + d * QB + c * KS_LANES);
                for (int r = 0; r < KR; ++r)
                    for (int c = 0; c < NQ; ++c) acc[r][c] += qv[c] * kr[r][d];
            }
            for (int r = 0; r < KR && jj + r < nk; ++r)
                for (int c = 0; c < NQ; ++c) ks_store(s + (jj + r) * QB + c * KS_LANES, acc[r][c] * a.scale);
        }
        if (a.mask_kind) {
            const int64_t row = a.mask.row, col = a.mask.col;
            for (int64_t j = 0; j < nk; ++j) {
                float* sj = s + j * QB;
                const Mask* mj = mb + (j0 + j) * col;
                if (row == 0 && a.mask_kind == 1) {  // a key padding or per-key bias: one value for the whole block
                    const float bias = (float)mj[0];
                    for (int r = 0; r < QB; ++r) sj[r] += bias;
                } else if (row == 0) {
                    if (!mj[0]) std::fill(sj, sj + QB, -INFINITY);
                } else if (a.mask_kind == 1) {
                    for (int64_t r = 0; r < n; ++r) sj[r] += (float)mj[r * row];
                } else {
                    for (int64_t r = 0; r < n; ++r)
                        if (!mj[r * row]) sj[r] = -INFINITY;
                }
            }
        }
        if (a.causal)  // key j0 + j is beyond query i0 + r when r < j0 + j - i0
            for (int64_t j = std::max<int64_t>(0, i0 + 1 - j0); j < nk; ++j)
                std::fill(s + j * QB, s + j * QB + std::min<int64_t>(QB, j0 + j - i0), -INFINITY);
        // the online softmax per query: a tile whose keys are all masked changes nothing; NaN wins the max, as in torch
        for (int c = 0; c < NQ; ++c) {
            KsVec mx = ks_splat(-INFINITY);
            for (int64_t j = 0; j < nk; ++j) {
                const KsVec x = ks_load(s + j * QB + c * KS_LANES);
                mx = x > mx || x != x ? x : mx;
            }
            const KsVec m_old = ks_load(m + c * KS_LANES);
            const KsVec m_new = mx == -INFINITY ? m_old : (mx > m_old || mx != mx ? mx : m_old);
            const KsVec cr =
                mx == -INFINITY ? ks_splat(1.f) : (m_old == -INFINITY ? ks_splat(0.f) : ks_exp(m_old - m_new));
            KsVec sum = {};
            for (int64_t j = 0; j < nk; ++j) {
                float* sj = s + j * QB + c * KS_LANES;
                const KsVec x = ks_load(sj);
                // a masked key's p is -0: it adds nothing below, and marks the key for the slow path
                const KsVec p = x == -INFINITY ? ks_splat(-0.f) : ks_exp(x - m_new);
                sum += p;
                ks_store(sj, p);
            }
            ks_store(m + c * KS_LANES, m_new);
            ks_store(corr + c * KS_LANES, cr);
            ks_store(l + c * KS_LANES, ks_load(l + c * KS_LANES) * cr + sum);
        }
        const float* vt = vb + j0 * a.ev;
        float nonfinite = 0.f;  // NaN when an inf or NaN is among the tile's values
        #pragma omp simd reduction(+ : nonfinite)
        for (int64_t x = 0; x < nk * a.ev; ++x) nonfinite += vt[x] * 0.f;
        if (nonfinite == 0.f) {
            // o = o * correction + p v: KR value dims (the last group repeats the last) times the block's queries
            for (int64_t d0 = 0; d0 < a.ev; d0 += KR) {
                int64_t dv[KR];
                for (int r = 0; r < KR; ++r) dv[r] = std::min<int64_t>(d0 + r, a.ev - 1);
                KsVec acc[KR][NQ];
                for (int r = 0; r < KR; ++r)
                    for (int c = 0; c < NQ; ++c)
                        acc[r][c] = ks_load(o + dv[r] * QB + c * KS_LANES) * ks_load(corr + c * KS_LANES);
                for (int64_t j = 0; j < nk; ++j) {
                    KsVec pv[NQ];
                    for (int c = 0; c < NQ; ++c) pv[c] = ks_load(s + j * QB + c * KS_LANES);
                    const float* vj = vt + j * a.ev;
                    for (int r = 0; r < KR; ++r)
                        for (int c = 0; c < NQ; ++c) acc[r][c] += pv[c] * vj[dv[r]];
                }
                for (int r = 0; r < KR && d0 + r < a.ev; ++r)
                    for (int c = 0; c < NQ; ++c) ks_store(o + dv[r] * QB + c * KS_LANES, acc[r][c]);
            }
        } else {
            // an inf or NaN value: a masked key's must not reach its rows (0 * inf is NaN), so masked keys are skipped
            for (int64_t d = 0; d < a.ev; ++d)
                for (int r = 0; r < QB; ++r) o[d * QB + r] *= corr[r];
            for (int64_t j = 0; j < nk; ++j)
                for (int r = 0; r < QB; ++r) {
                    const float p = s[j * QB + r];
                    if (p == 0.f && std::signbit(p)) continue;
                    for (int64_t d = 0; d < a.ev; ++d) o[d * QB + r] += p * vt[j * a.ev + d];
                }
        }
    }
    for (int64_t r = 0; r < n; ++r) {
        const float inv = l[r] > 0.f || l[r] != l[r] ? 1.f / l[r] : a.masked_row;  // every key masked: o is all zeros
        float* orow = out + (b * a.lq + i0 + r) * a.ev;
        for (int64_t d = 0; d < a.ev; ++d) orow[d] = o[d * QB + r] * inv;
    }
}

// One query row by itself, for sequences of a few queries (decoding), where a block would leave most lanes empty: a dot
// product over the head dim per key, p v vectorized over the value dims, masked keys skipped.
template <typename Mask>
static void ks_attention_row(const KsAttention& a, const float* q, const float* k, const float* v, const Mask* mask,
                             float* out, int64_t row) {
    const int64_t b = row / a.lq, i = row % a.lq;
    const float* qi = q + row * a.e;
    const float* kb = k + b * a.lk * a.e;
    const float* vb = v + b * a.lk * a.ev;
    const Mask* mrow = mask ? mask + ks_mask_offset(a.mask, b) + i * a.mask.row : nullptr;
    const int64_t mcol = a.mask.col;
    float* o = out + row * a.ev;  // the accumulator, rescaled as the running max grows
    for (int64_t d = 0; d < a.ev; ++d) o[d] = 0.f;
    float m = -INFINITY, l = 0.f, s[KS_KEY_TILE];
    const int64_t end = a.causal ? std::min(a.lk, i + 1) : a.lk;
    for (int64_t j0 = 0; j0 < end; j0 += KS_KEY_TILE) {
        const int64_t j1 = std::min(end, j0 + KS_KEY_TILE);
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

template <int NQ, typename Mask>
static void ks_attention_blocks(const KsAttention& a, const float* q, const float* k, const float* v, const Mask* mask,
                                float* out, bool parallel) {
    constexpr int64_t QB = NQ * KS_LANES;
    const int64_t blocks = (a.lq + QB - 1) / QB;
    const size_t bytes = ((a.e + KS_KEY_TILE + a.ev + 3) * QB * sizeof(float) + 63) / 64 * 64;
    #pragma omp parallel if(parallel)
    {
        float* buf = (float*)std::aligned_alloc(64, bytes);
        #pragma omp for schedule(dynamic)
        for (int64_t item = 0; item < a.batch * blocks; ++item) {
            const int64_t b = item / blocks, i0 = item % blocks * QB;
            ks_attention_block<NQ>(a, q, k, v, mask, out, b, i0, std::min(QB, a.lq - i0), buf);
        }
        std::free(buf);
    }
}

// Query blocks of up to 4 vectors: narrower for short sequences (no lanes wasted on rows that are not there) and
// where wide blocks would leave threads without work; rows one by one where even one vector would be mostly empty (a
// block of 1 query ran 3x slower than the row kernel, of 4 queries as fast, with 16 lanes).
template <typename Mask>
static void ks_attention(const KsAttention& a, const float* q, const float* k, const float* v, const Mask* mask,
                         float* out, bool parallel) {
    if (a.lq * 4 <= KS_LANES) {
        #pragma omp parallel for schedule(static) if(parallel)
        for (int64_t row = 0; row < a.batch * a.lq; ++row) ks_attention_row(a, q, k, v, mask, out, row);
        return;
    }
    const int64_t threads = parallel ? omp_get_max_threads() : 1;
    auto items = [&](int64_t nq) { return a.batch * ((a.lq + nq * KS_LANES - 1) / (nq * KS_LANES)); };
    if (a.lq > 2 * KS_LANES && items(4) >= 2 * threads)
        ks_attention_blocks<4>(a, q, k, v, mask, out, parallel);
    else if (a.lq > KS_LANES && items(2) >= 2 * threads)
        ks_attention_blocks<2>(a, q, k, v, mask, out, parallel);
    else
        ks_attention_blocks<1>(a, q, k, v, mask, out, parallel);
}
