// The convolution family's C++ kernel (the CPU target): im2col and OpenBLAS's sgemm for a convolution, sgemm and
// col2im for a transposed one, over blocks of the output that the OpenMP threads share, each thread finishing its own
// block with the fused epilogue while it is hot.
#pragma once
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ks_blas.h"

// Spatial dims are (depth, height, width); a 1-D or 2-D convolution has leading dims of size 1, kernel 1, stride 1.
struct KsConv {
    int64_t batch, cin, cout, groups;
    int64_t in[3], out[3], kernel[3], stride[3], padding[3], dilation[3];
};

// Half the L2 cache: a block of im2col (or col2im) columns is written and then read by sgemm (or the scatter) while
// it stays there.
static int64_t ks_block_bytes() {
    static const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return (l2 > 0 ? l2 : 512 * 1024) / 2;  // 512 KiB where the C library cannot tell
}

// The elements [lo, hi) of a run of N outputs whose input index is first + t * step lie inside [0, size).
static void ks_inside(int64_t first, int64_t step, int64_t n, int64_t size, int64_t& lo, int64_t& hi) {
    lo = first >= 0 ? 0 : (-first + step - 1) / step;
    hi = first > size - 1 ? 0 : (size - 1 - first) / step + 1;
    lo = std::min(lo, n);
    hi = std::max(lo, std::min(hi, n));
}

// Columns p0..p1 (flat output positions) of the im2col matrix of one sample's group of channels XS: row r is
// (input channel, kernel depth, height, width offset), so that w [cout/groups, rows] @ col is the output's block.
static void ks_im2col(const KsConv& c, const float* xs, int64_t p0, int64_t p1, float* col) {
    const int64_t kd = c.kernel[0], kh = c.kernel[1], kw = c.kernel[2];
    const int64_t cols = p1 - p0, rows = c.cin / c.groups * kd * kh * kw, in_plane = c.in[0] * c.in[1] * c.in[2];
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t q = r % kw, pb = r / kw % kh, pa = r / (kw * kh) % kd, ic = r / (kw * kh * kd);
        const float* xc = xs + ic * in_plane;
        float* dst = col + r * cols;
        int64_t ow = p0 % c.out[2], oh = p0 / c.out[2] % c.out[1], od = p0 / (c.out[2] * c.out[1]);
        // the part of a whole output row inside the input is the same for every row: divided once, not per run
        const int64_t sw = c.stride[2], row_first = q * c.dilation[2] - c.padding[2];
        int64_t row_lo, row_hi;
        ks_inside(row_first, sw, c.out[2], c.in[2], row_lo, row_hi);
        for (int64_t p = p0; p < p1;) {
            const int64_t run = std::min(p1 - p, c.out[2] - ow);
            const int64_t id = od * c.stride[0] - c.padding[0] + pa * c.dilation[0];
            const int64_t ih = oh * c.stride[1] - c.padding[1] + pb * c.dilation[1];
            float* d = dst + (p - p0);
            int64_t lo = 0, hi = 0;
            if (id >= 0 && id < c.in[0] && ih >= 0 && ih < c.in[1]) {
                const int64_t first = ow * sw + row_first;
                if (ow == 0) {
                    lo = std::min(row_lo, run);
                    hi = std::max(lo, std::min(row_hi, run));
                } else {
                    ks_inside(first, sw, run, c.in[2], lo, hi);
                }
                const float* row = xc + (id * c.in[1] + ih) * c.in[2];
                #pragma omp simd
                for (int64_t t = lo; t < hi; ++t) d[t] = row[first + t * sw];
            }
            std::fill(d, d + lo, 0.0f);
            std::fill(d + hi, d + run, 0.0f);
            p += run;
            ow = 0;
            if (++oh == c.out[1]) { oh = 0; ++od; }
        }
    }
}

// A convolution: tasks of (sample, group, block of output positions), each the im2col of its block (none for a 1x1
// convolution of stride 1 without padding, whose input is its own im2col), one sgemm, then the epilogue.
// EPILOGUE(plane, p0, p1) finishes positions [p0, p1) of output plane `plane` (= sample * cout + channel).
template <typename Epilogue>
static void ks_conv(const KsConv& c, const float* x, const float* w, float* out, bool parallel, Epilogue epilogue) {
    ks_blas_single_threaded();
    const int64_t cin_g = c.cin / c.groups, cout_g = c.cout / c.groups;
    const int64_t taps = c.kernel[0] * c.kernel[1] * c.kernel[2], rows = cin_g * taps;
    const int64_t in_plane = c.in[0] * c.in[1] * c.in[2], out_plane = c.out[0] * c.out[1] * c.out[2];
    const bool direct = taps == 1 && in_plane == out_plane && c.stride[0] * c.stride[1] * c.stride[2] == 1 &&
                        c.padding[0] + c.padding[1] + c.padding[2] == 0;
    // Blocks of whole multiples of 16 positions that fit the cache, and tasks enough for every thread.
    const int64_t planes = c.batch * c.groups, threads = parallel ? omp_get_max_threads() : 1;
    const int64_t wanted = (threads + planes - 1) / planes;
    int64_t cols = std::max<int64_t>(16, ks_block_bytes() / (rows * (int64_t)sizeof(float)) / 16 * 16);
    cols = std::min(cols, std::max<int64_t>(16, ((out_plane + wanted - 1) / wanted + 15) / 16 * 16));
    const int64_t blocks = (out_plane + cols - 1) / cols;
    #pragma omp parallel if(parallel)
    {
        static thread_local std::vector<float> col;
        if (!direct && (int64_t)col.size() < rows * cols) col.resize(rows * cols);
        #pragma omp for schedule(static)
        for (int64_t task = 0; task < planes * blocks; ++task) {
            const int64_t b = task / blocks / c.groups, g = task / blocks % c.groups;
            const int64_t p0 = task % blocks * cols, p1 = std::min(out_plane, p0 + cols);
            const float* xs = x + (b * c.cin + g * cin_g) * in_plane;
            if (!direct) ks_im2col(c, xs, p0, p1, col.data());
            scipy_cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)cout_g, (blasint)(p1 - p0),
                              (blasint)rows, 1.0f, w + g * cout_g * rows, (blasint)rows, direct ? xs + p0 : col.data(),
                              (blasint)(direct ? in_plane : p1 - p0), 0.0f,
                              out + (b * c.cout + g * cout_g) * out_plane + p0, (blasint)out_plane);
            for (int64_t oc = 0; oc < cout_g; ++oc) epilogue(b * c.cout + g * cout_g + oc, p0, p1);
        }
    }
}

// Adds one output channel's columns COL [taps, in_plane] (of w^T @ x) into its output plane Y: input position i with
// kernel offset k lands on output position i * stride - padding + k * dilation, where that is inside the plane.
static void ks_col2im(const KsConv& c, const float* col, float* y) {
    const int64_t kd = c.kernel[0], kh = c.kernel[1], kw = c.kernel[2];
    const int64_t in_plane = c.in[0] * c.in[1] * c.in[2], sw = c.stride[2];
    for (int64_t k = 0; k < kd * kh * kw; ++k) {
        const int64_t q = k % kw, pb = k / kw % kh, pa = k / (kw * kh);
        const int64_t first = q * c.dilation[2] - c.padding[2];
        int64_t lo, hi;  // input widths whose output width is inside the plane
        ks_inside(first, sw, c.in[2], c.out[2], lo, hi);
        for (int64_t id = 0; id < c.in[0]; ++id) {
            const int64_t od = id * c.stride[0] - c.padding[0] + pa * c.dilation[0];
            if (od < 0 || od >= c.out[0]) continue;
            for (int64_t ih = 0; ih < c.in[1]; ++ih) {
                const int64_t oh = ih * c.stride[1] - c.padding[1] + pb * c.dilation[1];
                if (oh < 0 || oh >= c.out[1]) continue;
                const float* src = col + k * in_plane + (id * c.in[1] + ih) * c.in[2];
                float* dst = y + (od * c.out[1] + oh) * c.out[2];
                #pragma omp simd
                for (int64_t iw = lo; iw < hi; ++iw) dst[first + iw * sw] += src[iw];
            }
        }
    }
}

// A transposed convolution: tasks of (sample, group, block of output channels), each one sgemm (w's block
// transposed, [channels * taps, cin/groups], by the sample's group of input channels), col2im into the channels'
// zeroed planes, then the epilogue over whole planes. ConvTranspose's weight is [cin, cout/groups, *kernel].
template <typename Epilogue>
static void ks_conv_transposed(const KsConv& c, const float* x, const float* w, float* out, bool parallel,
                               Epilogue epilogue) {
    ks_blas_single_threaded();
    const int64_t cin_g = c.cin / c.groups, cout_g = c.cout / c.groups;
    const int64_t taps = c.kernel[0] * c.kernel[1] * c.kernel[2];
    const int64_t in_plane = c.in[0] * c.in[1] * c.in[2], out_plane = c.out[0] * c.out[1] * c.out[2];
    const int64_t planes = c.batch * c.groups, threads = parallel ? omp_get_max_threads() : 1;
    const int64_t wanted = (threads + planes - 1) / planes;
    int64_t chans = std::max<int64_t>(1, ks_block_bytes() / (taps * in_plane * (int64_t)sizeof(float)));
    chans = std::min(chans, std::max<int64_t>(1, (cout_g + wanted - 1) / wanted));
    const int64_t blocks = (cout_g + chans - 1) / chans;
    #pragma omp parallel if(parallel)
    {
        static thread_local std::vector<float> col;
        if ((int64_t)col.size() < chans * taps * in_plane) col.resize(chans * taps * in_plane);
        #pragma omp for schedule(static)
        for (int64_t task = 0; task < planes * blocks; ++task) {
            const int64_t b = task / blocks / c.groups, g = task / blocks % c.groups;
            const int64_t c0 = task % blocks * chans, c1 = std::min(cout_g, c0 + chans);
            scipy_cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (blasint)((c1 - c0) * taps), (blasint)in_plane,
                              (blasint)cin_g, 1.0f, w + (g * cin_g * cout_g + c0) * taps, (blasint)(cout_g * taps),
                              x + (b * c.cin + g * cin_g) * in_plane, (blasint)in_plane, 0.0f, col.data(),
                              (blasint)in_plane);
            for (int64_t oc = c0; oc < c1; ++oc) {
                const int64_t plane = b * c.cout + g * cout_g + oc;
                float* y = out + plane * out_plane;
                std::memset(y, 0, out_plane * sizeof(float));
                ks_col2im(c, col.data() + (oc - c0) * taps * in_plane, y);
                epilogue(plane, 0, out_plane);
            }
        }
    }
}
