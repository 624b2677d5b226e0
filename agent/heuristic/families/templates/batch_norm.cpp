// The batch norm's C++ kernel (families/batch_norm.py): one channel of [N, C, *spatial] at a time, its statistics
// over the batch and the spatial dims (or the running ones, in eval mode), then its elements normalized; in training
// mode the module's running mean and variance are updated as torch does (the variance's unbiased estimate). The
// update and the running statistics' statements serve the CUDA kernel too (batch_norm.cu).
//@ run

void run_fused(const float* __restrict__ ${x}${pointers}, float* __restrict__ out, int64_t channels, bool training) {
    // One channel at a time: its statistics over the batch and the spatial dims, then its elements normalized.
    #pragma omp parallel for schedule(static) if(channels * ${n}LL >= ${parallel})
    for (int64_t c = 0; c < channels; ++c) {
        float mean = 0.f, rstd = 1.f;
        ${choose}
        for (int64_t r = 0; r < ${n}LL; ++r) {
            const int64_t k = ${at};
            float t = (pre_op(${x}[k]) - mean) * rstd; ${scale}
            out[k] = epi_op(t);
        }
    }
}
//@ batch_statistics
            double sum = 0, sq = 0;
            for (int64_t r = 0; r < ${n}LL; ++r) { const float v = pre_op(${x}[${at}]); sum += v; sq += (double)v * v; }
            mean = (float)(sum / ${n}.0);
            const float var = (float)std::max(sq / ${n}.0 - (double)mean * mean, 0.0);
            rstd = 1.0f / std::sqrt(var + ${eps}f);
            if (training) { ${update} }
//@ choose_statistics
if (training) { ${batch} } else { ${running} }
//@ batch_statistics_only
{ ${batch} }
//@ update_running
            float* rm = const_cast<float*>(${rm}); float* rv = const_cast<float*>(${rv});
            rm[${c}] = ${decay}f * rm[${c}] + ${momentum}f * mean;
            rv[${c}] = ${decay}f * rv[${c}] + ${momentum}f * var * (${n}.0f / ${n_minus_one}.0f);
//@ running_statistics
mean = ${rm}[${c}]; rstd = 1.0f / sqrtf(${rv}[${c}] + ${eps}f);
