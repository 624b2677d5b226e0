// The RNN family's cell, shared by its C++ (ks_rnn.h) and CUDA (ks_rnn.cuh) kernels: one element (batch entry b,
// hidden unit j) of one step of an LSTM, GRU or Elman RNN, in PyTorch's gate order and equations.
#pragma once
#include <cstdint>

#ifdef __CUDACC__
#define KS_RNN_FN __host__ __device__ inline
#else
#define KS_RNN_FN static inline
#endif

enum KsRnnMode { KS_LSTM = 0, KS_GRU = 1, KS_RNN_TANH = 2, KS_RNN_RELU = 3 };

// One direction of one layer. Its state buffer, [rows, batch, hidden] as the planner allocates it: h_t of every time t
// (rows 0 .. steps - 1, the layer's output), then h0, then the cell c (LSTM only: c0, updated in place to c_n), then
// the step's recurrent projection h W_hh^T ([batch, gates * hidden]).
struct KsRnn {
    int64_t steps, batch, hidden;
    int64_t x_time, x_batch;  // rows of the input projection [rows, gates * hidden] between steps, between batch entries
    bool reverse;             // the steps run from the last time to the first (a bidirectional layer's second half)
};

KS_RNN_FN constexpr int ks_rnn_gates(int mode) { return mode == KS_LSTM ? 4 : mode == KS_GRU ? 3 : 1; }

KS_RNN_FN float ks_rnn_bias(const float* b, int64_t k) { return b ? b[k] : 0.0f; }

KS_RNN_FN float ks_rnn_sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }

// h_t of unit j from x (its input projection x W_ih^T, gates * hidden values, without b_ih), p (its recurrent
// projection h_{t-1} W_hh^T, without b_hh), the biases (null without them), h_{t-1} and the cell *c (LSTM: updated).
template <int MODE>
KS_RNN_FN float ks_rnn_cell(const float* x, const float* p, const float* b_ih, const float* b_hh, int64_t j,
                            int64_t hidden, float h_prev, float* c) {
    auto gate = [&](int g) {
        const int64_t k = g * hidden + j;
        return x[k] + ks_rnn_bias(b_ih, k) + p[k] + ks_rnn_bias(b_hh, k);
    };
    if (MODE == KS_LSTM) {  // gates i, f, g, o
        const float i = ks_rnn_sigmoid(gate(0)), f = ks_rnn_sigmoid(gate(1)), o = ks_rnn_sigmoid(gate(3));
        const float cell = f * *c + i * tanhf(gate(2));
        *c = cell;
        return o * tanhf(cell);
    }
    if (MODE == KS_GRU) {  // gates r, z, n: b_hn stays inside r * (W_hn h + b_hn)
        const float r = ks_rnn_sigmoid(gate(0)), z = ks_rnn_sigmoid(gate(1));
        const int64_t k = 2 * hidden + j;
        const float n = tanhf(x[k] + ks_rnn_bias(b_ih, k) + r * (p[k] + ks_rnn_bias(b_hh, k)));
        return (1.0f - z) * n + z * h_prev;
    }
    const float v = gate(0);
    return MODE == KS_RNN_TANH ? tanhf(v) : (v > 0.0f ? v : 0.0f);
}
