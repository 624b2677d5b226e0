// The convolution family's C++ kernel (families/conv.py): im2col (col2im for ConvTranspose), then OpenBLAS's sgemm,
// each output tile finished by the epilogue (agent/heuristic/ks_conv.h, copied into the workspace's kernels/).
//@ include
#include "ks_conv.h"
//@ run

void run_fused(const float* __restrict__ x, const float* __restrict__ w, ${pointers}float* __restrict__ out) {
    // batch, cin, cout, groups, then (depth, height, width) of input, output, kernel, stride, padding, dilation
    const KsConv c{${geometry}};
    ${run}(c, x, w, out, ${parallel}, ${epilogue});
}
