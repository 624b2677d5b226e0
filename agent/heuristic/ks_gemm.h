// The GEMM family's C++ kernel (the CPU target): OpenBLAS's sgemm on tiles of the output, each OpenMP thread
// finishing its own tile with the fused epilogue while it is hot.
#pragma once
#include <cstdint>

#include "ks_blas.h"

struct KsGemm {
    int64_t batch, m, n, k;  // out[b] = x[b] @ op(w[b]): x [batch, m, k], out [batch, m, n]
    bool transposed_b;       // w[b] is [n, k] (a linear layer's weight) rather than [k, n]
    int64_t w_stride;        // elements between consecutive w[b]; 0 when every b shares one w
};

// Rows [r0, r1) and columns [c0, c1) of out[b].
static void ks_gemm_tile(const KsGemm& g, const float* x, const float* w, float* out, int64_t b, int64_t r0, int64_t r1,
                         int64_t c0, int64_t c1) {
    if (r0 >= r1 || c0 >= c1) return;
    const float* a = x + (b * g.m + r0) * g.k;
    const float* wb = w + b * g.w_stride + (g.transposed_b ? c0 * g.k : c0);
    scipy_cblas_sgemm(CblasRowMajor, CblasNoTrans, g.transposed_b ? CblasTrans : CblasNoTrans, (blasint)(r1 - r0),
                      (blasint)(c1 - c0), (blasint)g.k, 1.0f, a, (blasint)g.k, wb,
                      (blasint)(g.transposed_b ? g.k : g.n), 0.0f, out + (b * g.m + r0) * g.n + c0, (blasint)g.n);
}

// The output split among the threads: whole matrices while there are at least as many as threads, else stripes of
// every matrix: of columns while each gets a few SIMD widths (a thread then packs only its part of w), else of rows.
// EPILOGUE(row, c0, c1) finishes columns [c0, c1) of output row `row` (of the [batch * m, n] output).
template <typename Epilogue>
static void ks_gemm(const KsGemm& shape, const float* x, const float* w, float* out, bool parallel, Epilogue epilogue) {
    ks_blas_single_threaded();
    // Matrices sharing one w are the rows of one product (x and out are contiguous): nn.MultiheadAttention's
    // sequence-first projection as 64 sgemms of 4 rows each packed the whole weight 64 times (3.8 ms against 0.3 ms).
    const KsGemm g = shape.w_stride == 0 ? KsGemm{1, shape.batch * shape.m, shape.n, shape.k, shape.transposed_b, 0}
                                         : shape;
    #pragma omp parallel if(parallel)
    {
        const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
        if (g.batch >= threads) {
            for (int64_t b = g.batch * t / threads; b < g.batch * (t + 1) / threads; ++b) {
                ks_gemm_tile(g, x, w, out, b, 0, g.m, 0, g.n);
                for (int64_t i = 0; i < g.m; ++i) epilogue(b * g.m + i, 0, g.n);
            }
        } else if (g.n >= 64 * threads || g.m < 8 * threads) {
            // Stripe edges on multiples of 16 columns keep every thread's rows aligned for the epilogue's vectors.
            const int64_t c0 = g.n * t / threads / 16 * 16;
            const int64_t c1 = t + 1 == threads ? g.n : g.n * (t + 1) / threads / 16 * 16;
            for (int64_t b = 0; b < g.batch; ++b) {
                ks_gemm_tile(g, x, w, out, b, 0, g.m, c0, c1);
                for (int64_t i = 0; i < g.m && c0 < c1; ++i) epilogue(b * g.m + i, c0, c1);
            }
        } else {
            const int64_t r0 = g.m * t / threads, r1 = g.m * (t + 1) / threads;
            for (int64_t b = 0; b < g.batch; ++b) {
                ks_gemm_tile(g, x, w, out, b, r0, r1, 0, g.n);
                for (int64_t i = r0; i < r1; ++i) epilogue(b * g.m + i, 0, g.n);
            }
        }
    }
}
