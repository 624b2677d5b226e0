// The elementwise family's C++ kernel (families/elementwise.py): the output as outer steps of `inner` contiguous
// elements, cut in chunks for the threads, each chunk an `omp simd` loop of fused_op; operands contiguous along the
// inner run are read through a pointer, those constant along it once per step, any other through its offset.
//@ run

void run_fused(${pointers}float* __restrict__ out, int64_t n) {
    // ${outer} outer step(s) of ${inner} contiguous elements, cut in chunks of at most 8192 for the threads.
    const int64_t inner = ${inner}LL, chunk = std::min<int64_t>(inner, 8192), chunks = (inner + chunk - 1) / chunk;
    #pragma omp parallel for schedule(static) if(n >= ${parallel})
    for (int64_t c = 0; c < (n / inner) * chunks; ++c) {
        const int64_t base = (c / chunks) * inner;
        const int64_t j0 = (c % chunks) * chunk, j1 = std::min<int64_t>(inner, j0 + chunk);
        ${setup}
        float* y = out + base;
        #pragma omp simd
        for (int64_t j = j0; j < j1; ++j) y[j] = fused_op(${args});
    }
}
