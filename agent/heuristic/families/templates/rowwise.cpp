// The row-wise family's C++ kernels (families/rowwise.py): rows of R elements, `outer` of them, each strided by
// `inner`; pre_op fused as a row is read, epi_op as it is written. Reductions loop over the rows' elements for each
// inner position; the softmax family over strided rows keeps a running max and sum per inner position, the inner
// loop contiguous; over contiguous rows, the softmax family and the layer norm take a row at a time.
//@ strided_softmax

#include <vector>
void run_fused(const float* __restrict__ ${x}, float* __restrict__ out, int64_t outer) {
    #pragma omp parallel for schedule(static) if(outer * ${row_elements}LL >= ${parallel})
    for (int64_t o = 0; o < outer; ++o) {
        const float* xo = ${x} + o * ${row_elements}LL;
        float* yo = out + o * ${row_elements}LL;
        (void)yo;
        std::vector<float> m(${inner}, -INFINITY), s(${inner}, 0.f);
        for (int64_t r = 0; r < ${reduce}LL; ++r)
            for (int64_t i = 0; i < ${inner}LL; ++i) m[i] = std::max(m[i], pre_op(xo[r * ${inner}LL + i]));
        for (int64_t r = 0; r < ${reduce}LL; ++r)
            for (int64_t i = 0; i < ${inner}LL; ++i) s[i] += expf(pre_op(xo[r * ${inner}LL + i]) - m[i]);
        ${write}
    }
}
//@ strided_write_softmax
        for (int64_t r = 0; r < ${reduce}LL; ++r) for (int64_t i = 0; i < ${inner}LL; ++i) yo[r * ${inner}LL + i] = epi_op(expf(pre_op(xo[r * ${inner}LL + i]) - m[i]) / s[i]);
//@ strided_write_log_softmax
        for (int64_t r = 0; r < ${reduce}LL; ++r) for (int64_t i = 0; i < ${inner}LL; ++i) yo[r * ${inner}LL + i] = epi_op(pre_op(xo[r * ${inner}LL + i]) - m[i] - std::log(s[i]));
//@ strided_write_logsumexp
        for (int64_t i = 0; i < ${inner}LL; ++i) out[o * ${inner}LL + i] = epi_op(m[i] + std::log(s[i]));
//@ reduce

void run_fused(const float* __restrict__ ${x}, float* __restrict__ out, int64_t outer) {
    #pragma omp parallel for schedule(static) if(outer * ${row_elements}LL >= ${parallel})
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < ${inner}LL; ++i) {
            float acc = ${init};
            for (int64_t r = 0; r < ${reduce}LL; ++r) { const float v = pre_op(${x}[(o * ${reduce}LL + r) * ${inner}LL + i]); ${step} }
            ${write}
        }
}
//@ reduce_write_normalized
            const float row = ${value};
            for (int64_t r = 0; r < ${reduce}LL; ++r) { const int64_t k = (o * ${reduce}LL + r) * ${inner}LL + i; out[k] = epi_op(row, ${x}[k]); }
//@ reduce_write
            out[o * ${inner}LL + i] = epi_op(${value});
//@ rows

void run_fused(const float* __restrict__ ${x}${affine_pointers}, float* __restrict__ out, int64_t outer) {
    #pragma omp parallel for schedule(static) if(outer * ${reduce}LL >= ${parallel})
    for (int64_t o = 0; o < outer; ++o) {
        const float* x = ${x} + o * ${reduce}LL;
        float* y = out + o * ${reduce}LL;
        (void)y;
        ${core}
    }
}
//@ rows_softmax
        float m = -INFINITY;
        #pragma omp simd reduction(max:m)
        for (int64_t r = 0; r < ${reduce}LL; ++r) m = std::max(m, pre_op(x[r]));
        float s = 0.f;
        #pragma omp simd reduction(+:s)
        for (int64_t r = 0; r < ${reduce}LL; ++r) { const float e = expf(pre_op(x[r]) - m); ${keep} s += e; }
        ${write}
//@ rows_write_softmax
        const float inv = 1.0f / s;
        #pragma omp simd
        for (int64_t r = 0; r < ${reduce}LL; ++r) y[r] = epi_op(y[r] * inv);
//@ rows_write_log_softmax
        const float lse = m + std::log(s);
        #pragma omp simd
        for (int64_t r = 0; r < ${reduce}LL; ++r) y[r] = epi_op(pre_op(x[r]) - lse);
//@ rows_write_logsumexp
        out[o] = epi_op(m + std::log(s));
//@ rows_layer_norm
        double sum = 0, sq = 0;
        for (int64_t r = 0; r < ${reduce}LL; ++r) { const float v = pre_op(x[r]); sum += v; sq += (double)v * v; }
        const float mean = (float)(sum / ${reduce}.0);
        const float rstd = 1.0f / std::sqrt((float)std::max(sq / ${reduce}.0 - (double)mean * mean, 0.0) + ${eps}f);
        for (int64_t r = 0; r < ${reduce}LL; ++r) { float t = (pre_op(x[r]) - mean) * rstd; ${scale} y[r] = epi_op(t); }
