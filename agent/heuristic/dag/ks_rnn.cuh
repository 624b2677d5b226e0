// The RNN family's CUDA kernel: one direction of one recurrent layer over all its steps, on the caller's stream. The
// input projection of every step came before, as one GEMM; each step here is one cuBLAS GEMM h_{t-1} W_hh^T (FP32,
// as PyTorch's default) and one launch of the fused cell (ks_rnn_cell.h) that writes h_t into its row of the state.
#pragma once
#include <cstdint>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdexcept>
#include <string>

#include "ks_rnn_cell.h"

template <int MODE>
__global__ void ks_rnn_step(KsRnn r, int64_t t, const float* __restrict__ xproj, const float* __restrict__ p,
                            const float* __restrict__ b_ih, const float* __restrict__ b_hh,
                            const float* __restrict__ h_prev, float* __restrict__ c, float* __restrict__ h) {
    constexpr int G = ks_rnn_gates(MODE);
    const int64_t H = r.hidden, row = r.batch * H;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < row; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t b = i / H, j = i % H;
        const float* x = xproj + (t * r.x_time + b * r.x_batch) * G * H;
        h[i] = ks_rnn_cell<MODE>(x, p + b * G * H, b_ih, b_hh, j, H, h_prev[i], c + i);
    }
}

template <int MODE>
static void ks_rnn(const KsRnn& r, const float* xproj, const float* w_hh, const float* b_ih, const float* b_hh,
                   float* state, cublasHandle_t handle, cudaStream_t stream) {
    constexpr int G = ks_rnn_gates(MODE);
    constexpr int THREADS = 256;
    const int64_t H = r.hidden, row = r.batch * H;
    const float* h0 = state + r.steps * row;
    float* c = state + (r.steps + 1) * row;  // LSTM only
    float* p = state + (r.steps + (MODE == KS_LSTM ? 2 : 1)) * row;
    const int blocks = (int)((row + THREADS - 1) / THREADS);
    const float one = 1.0f, zero = 0.0f;
    cublasSetStream(handle, stream);
    for (int64_t s = 0; s < r.steps; ++s) {
        const int64_t t = r.reverse ? r.steps - 1 - s : s;
        const float* h_prev = s == 0 ? h0 : state + (r.reverse ? t + 1 : t - 1) * row;
        // row-major p [batch, G H] = h_prev [batch, H] @ W_hh^T, as column-major p^T = W_hh h_prev^T
        const cublasStatus_t status = cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, (int)(G * H), (int)r.batch,
                                                   (int)H, &one, w_hh, CUDA_R_32F, (int)H, h_prev, CUDA_R_32F, (int)H,
                                                   &zero, p, CUDA_R_32F, (int)(G * H), CUBLAS_COMPUTE_32F,
                                                   CUBLAS_GEMM_DEFAULT);
        if (status != CUBLAS_STATUS_SUCCESS)
            throw std::runtime_error("cuBLAS GEMM of an RNN step failed: " + std::to_string((int)status));
        ks_rnn_step<MODE><<<blocks, THREADS, 0, stream>>>(r, t, xproj, p, b_ih, b_hh, h_prev, c, state + t * row);
    }
}
