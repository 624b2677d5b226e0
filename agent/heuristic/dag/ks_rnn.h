// The RNN family's C++ kernel (the CPU target): one direction of one recurrent layer over all its steps. The input
// projection of every step came before, as one GEMM; each step here is one sgemm h_{t-1} W_hh^T and one pass of the
// fused cell (ks_rnn_cell.h) that writes h_t into its row of the state buffer.
#pragma once
#include <cmath>
#include <cstdint>

#include "ks_gemm.h"
#include "ks_rnn_cell.h"

template <int MODE>
static void ks_rnn(const KsRnn& r, const float* xproj, const float* w_hh, const float* b_ih, const float* b_hh,
                   float* state, bool parallel_gemm, bool parallel_cells) {
    constexpr int G = ks_rnn_gates(MODE);
    const int64_t H = r.hidden, row = r.batch * H;
    const float* h0 = state + r.steps * row;
    float* c = state + (r.steps + 1) * row;  // LSTM only
    float* p = state + (r.steps + (MODE == KS_LSTM ? 2 : 1)) * row;
    const KsGemm g{1, r.batch, G * H, H, true, 0};  // p [batch, G * H] = h_{t-1} [batch, H] @ W_hh^T
    for (int64_t s = 0; s < r.steps; ++s) {
        const int64_t t = r.reverse ? r.steps - 1 - s : s;
        const float* h_prev = s == 0 ? h0 : state + (r.reverse ? t + 1 : t - 1) * row;
        float* h = state + t * row;
        ks_gemm(g, h_prev, w_hh, p, parallel_gemm, [](int64_t, int64_t, int64_t) {});
        #pragma omp parallel for schedule(static) if(parallel_cells)
        for (int64_t i = 0; i < row; ++i) {
            const int64_t b = i / H, j = i % H;
            const float* x = xproj + (t * r.x_time + b * r.x_batch) * G * H;
            h[i] = ks_rnn_cell<MODE>(x, p + b * G * H, b_ih, b_hh, j, H, h_prev[i], c + i);
        }
    }
}
