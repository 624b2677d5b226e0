// The GEMM family's C++ kernel (families/gemm.py): OpenBLAS's sgemm per output tile, each tile finished by the
// epilogue while it is in cache (agent/heuristic/ks_gemm.h, copied into the workspace's kernels/).
//@ include
#include "ks_gemm.h"
//@ run

void run_fused(const float* __restrict__ x, const float* __restrict__ w, ${pointers}float* __restrict__ out) {
    // ${what}
    const KsGemm g{${batch}, ${m}, ${n}, ${k}, ${transposed_b}, ${w_stride}};
    ks_gemm(g, x, w, out, ${parallel}, ${epilogue});
}
