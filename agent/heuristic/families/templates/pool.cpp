// The pool family's C++ kernel (families/pool.py): each output element of [N, C, *spatial] the max or the average of
// its window (spatial dims padded to three, missing ones of size 1), pre_op fused as the window is read and epi_op
// as the result is written. The window's loop serves the CUDA kernel too (pool.cu).
//@ run

void run_fused(const float* __restrict__ x, ${pointers}float* __restrict__ out) {
    #pragma omp parallel for schedule(static) if(${total}LL >= ${parallel})
    for (int64_t i = 0; i < ${total}LL; ++i) {
        ${window}
        out[i] = epi_op(pooled${loads});
    }
}
//@ window
        const int64_t ow = i % ${w_out}LL, oh = (i / ${w_out}LL) % ${h_out}LL, od = (i / ${hw_out}LL) % ${d_out}LL;
        const float* xc = x + (i / ${dhw_out}LL) * ${dhw_in}LL;
        float acc = ${init};${count}
        for (int64_t a = 0; a < ${kd}; ++a) {
            const int64_t id = od * ${sd} - ${pd} + a * ${dd}; if (id < 0 || id >= ${d_in}) continue;
            for (int64_t bb = 0; bb < ${kh}; ++bb) {
                const int64_t ih = oh * ${sh} - ${ph} + bb * ${dh}; if (ih < 0 || ih >= ${h_in}) continue;
                for (int64_t c = 0; c < ${kw}; ++c) {
                    const int64_t iw = ow * ${sw} - ${pw} + c * ${dw}; if (iw < 0 || iw >= ${w_in}) continue;
                    const float v = pre_op(xc[(id * ${h_in} + ih) * ${w_in}LL + iw]); ${step}
                }
            }
        }
        const float pooled = ${final};
