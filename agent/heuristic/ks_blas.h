// OpenBLAS (the scipy-openblas32 wheel the native build links; its functions are prefixed scipy_) as the CPU kernels
// of the GEMM and convolution families call it.
#pragma once
#include <cblas.h>
#include <omp.h>

// OpenBLAS runs single-threaded inside each OpenMP thread, whose count the sandbox sets (OMP_NUM_THREADS): its own
// thread pool beside OpenMP's would spin while the other works (a whole-output sgemm on OpenBLAS's threads, then an
// OpenMP epilogue pass, ran 2.2x slower on 2 cores: 8.0 ms against 3.7 ms for 256x1024x1024 with a GELU).
static void ks_blas_single_threaded() {
    static const bool once = (scipy_openblas_set_num_threads(1), true);
    (void)once;
}
