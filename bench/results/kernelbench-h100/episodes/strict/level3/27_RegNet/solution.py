"""Kernel Studio solution of 27_RegNet.py (cuda): reward 0, 2.9829 ms, 0.79x eager

Exported by Kernel Studio from a native workspace (KernelBench style: defines ModelNew). The workspace's
sources below are written to a folder named by their hash and built by sandbox.native (kernel-studio must be
installed); ModelNew is the class of the workspace's model_new.py, loaded from that folder.
"""
import hashlib
import importlib.util
import json
import tempfile
from pathlib import Path

SOURCES = {
    'binding.cpp': r'''// Written by Kernel Studio's heuristic policy: Conv2d (8x3x224x224 -> 8x64x224x224) with 1 operator(s) fused after it, then one row-wise batch_norm kernel (rows of 401408), then Conv2d (8x64x224x224 -> 8x64x224x224) with 1 operator(s) fused after it, then one row-wise batch_norm kernel (rows of 401408), then one max pool kernel (2x2 windows), then Conv2d (8x64x112x112 -> 8x128x112x112) with 1 operator(s) fused after it, then one row-wise batch_norm kernel (rows of 100352), then Conv2d (8x128x112x112 -> 8x128x112x112) with 1 operator(s) fused after it, then one row-wise batch_norm kernel (rows of 100352), then one max pool kernel (2x2 windows), then Conv2d (8x128x56x56 -> 8x256x56x56) with 1 operator(s) fused after it, then one row-wise batch_norm kernel (rows of 25088), then Conv2d (8x256x56x56 -> 8x256x56x56) with 1 operator(s) fused after it, then one row-wise batch_norm kernel (rows of 25088), then one max pool kernel (2x2 windows), then one row-wise mean kernel (rows of 784), then GEMM (8x256 by 256x10) with 0 operator(s) fused after it.
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <cuda_runtime.h>
#include <stdexcept>
#include <string>

using torch::stable::Tensor;

namespace ks_head { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }
namespace ks_tail0 { void launch_fused(const float*, const float*, const float*, const float*, const float*, float*, int64_t, bool, cudaStream_t); }
namespace ks_tail1 { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }
namespace ks_tail2 { void launch_fused(const float*, const float*, const float*, const float*, const float*, float*, int64_t, bool, cudaStream_t); }
namespace ks_tail3 { void launch_fused(const float*, float*, cudaStream_t); }
namespace ks_tail4 { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }
namespace ks_tail5 { void launch_fused(const float*, const float*, const float*, const float*, const float*, float*, int64_t, bool, cudaStream_t); }
namespace ks_tail6 { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }
namespace ks_tail7 { void launch_fused(const float*, const float*, const float*, const float*, const float*, float*, int64_t, bool, cudaStream_t); }
namespace ks_tail8 { void launch_fused(const float*, float*, cudaStream_t); }
namespace ks_tail9 { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }
namespace ks_tail10 { void launch_fused(const float*, const float*, const float*, const float*, const float*, float*, int64_t, bool, cudaStream_t); }
namespace ks_tail11 { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }
namespace ks_tail12 { void launch_fused(const float*, const float*, const float*, const float*, const float*, float*, int64_t, bool, cudaStream_t); }
namespace ks_tail13 { void launch_fused(const float*, float*, cudaStream_t); }
namespace ks_tail14 { void launch_fused(const float*, float*, int64_t, cudaStream_t); }
namespace ks_tail15 { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }

static void check(const Tensor& t, int64_t numel, const char* name) {
    // The kernels are specialized to the problem's shapes: refuse anything else instead of reading past it.
    if (t.numel() != numel) throw std::runtime_error(std::string(name) + ": expected " + std::to_string(numel) +
                                                     " elements, got " + std::to_string(t.numel()));
    if (!t.is_contiguous()) throw std::runtime_error(std::string(name) + " must be contiguous");
}

Tensor fused(Tensor x, Tensor w, Tensor t0, Tensor u0_1, Tensor u0_2, Tensor u0_3, Tensor u0_4, Tensor u1_w, Tensor u1_0, Tensor u2_1, Tensor u2_2, Tensor u2_3, Tensor u2_4, Tensor u4_w, Tensor u4_0, Tensor u5_1, Tensor u5_2, Tensor u5_3, Tensor u5_4, Tensor u6_w, Tensor u6_0, Tensor u7_1, Tensor u7_2, Tensor u7_3, Tensor u7_4, Tensor u9_w, Tensor u9_0, Tensor u10_1, Tensor u10_2, Tensor u10_3, Tensor u10_4, Tensor u11_w, Tensor u11_0, Tensor u12_1, Tensor u12_2, Tensor u12_3, Tensor u12_4, Tensor u15_w, Tensor u15_1, bool training) {
    check(x, 1204224LL, "x");
    check(w, 1728LL, "w");
    check(t0, 64LL, "t0");
    check(u0_1, 64LL, "u0_1");
    check(u0_2, 64LL, "u0_2");
    check(u0_3, 64LL, "u0_3");
    check(u0_4, 64LL, "u0_4");
    check(u1_w, 36864LL, "u1_w");
    check(u1_0, 64LL, "u1_0");
    check(u2_1, 64LL, "u2_1");
    check(u2_2, 64LL, "u2_2");
    check(u2_3, 64LL, "u2_3");
    check(u2_4, 64LL, "u2_4");
    check(u4_w, 73728LL, "u4_w");
    check(u4_0, 128LL, "u4_0");
    check(u5_1, 128LL, "u5_1");
    check(u5_2, 128LL, "u5_2");
    check(u5_3, 128LL, "u5_3");
    check(u5_4, 128LL, "u5_4");
    check(u6_w, 147456LL, "u6_w");
    check(u6_0, 128LL, "u6_0");
    check(u7_1, 128LL, "u7_1");
    check(u7_2, 128LL, "u7_2");
    check(u7_3, 128LL, "u7_3");
    check(u7_4, 128LL, "u7_4");
    check(u9_w, 294912LL, "u9_w");
    check(u9_0, 256LL, "u9_0");
    check(u10_1, 256LL, "u10_1");
    check(u10_2, 256LL, "u10_2");
    check(u10_3, 256LL, "u10_3");
    check(u10_4, 256LL, "u10_4");
    check(u11_w, 589824LL, "u11_w");
    check(u11_0, 256LL, "u11_0");
    check(u12_1, 256LL, "u12_1");
    check(u12_2, 256LL, "u12_2");
    check(u12_3, 256LL, "u12_3");
    check(u12_4, 256LL, "u12_4");
    check(u15_w, 2560LL, "u15_w");
    check(u15_1, 10LL, "u15_1");
    Tensor mid0 = torch::stable::new_empty(x, {8, 64, 224, 224});
    Tensor mid1 = torch::stable::new_empty(x, {8, 64, 224, 224});
    Tensor mid2 = torch::stable::new_empty(x, {8, 64, 224, 224});
    Tensor mid3 = torch::stable::new_empty(x, {8, 64, 224, 224});
    Tensor mid4 = torch::stable::new_empty(x, {8, 64, 112, 112});
    Tensor mid5 = torch::stable::new_empty(x, {8, 128, 112, 112});
    Tensor mid6 = torch::stable::new_empty(x, {8, 128, 112, 112});
    Tensor mid7 = torch::stable::new_empty(x, {8, 128, 112, 112});
    Tensor mid8 = torch::stable::new_empty(x, {8, 128, 112, 112});
    Tensor mid9 = torch::stable::new_empty(x, {8, 128, 56, 56});
    Tensor mid10 = torch::stable::new_empty(x, {8, 256, 56, 56});
    Tensor mid11 = torch::stable::new_empty(x, {8, 256, 56, 56});
    Tensor mid12 = torch::stable::new_empty(x, {8, 256, 56, 56});
    Tensor mid13 = torch::stable::new_empty(x, {8, 256, 56, 56});
    Tensor mid14 = torch::stable::new_empty(x, {8, 256, 28, 28});
    Tensor mid15 = torch::stable::new_empty(x, {8, 256});
    Tensor out = torch::stable::new_empty(x, {8, 10});
    void* stream = nullptr;
    aoti_torch_get_current_cuda_stream(x.get_device(), &stream);
    ks_head::launch_fused((const float*)x.data_ptr(), (const float*)w.data_ptr(), (const float*)t0.data_ptr(), (float*)mid0.data_ptr(), (cudaStream_t)stream);
    ks_tail0::launch_fused((const float*)mid0.data_ptr(), (const float*)u0_1.data_ptr(), (const float*)u0_2.data_ptr(), (const float*)u0_3.data_ptr(), (const float*)u0_4.data_ptr(), (float*)mid1.data_ptr(), 64LL, training, (cudaStream_t)stream);
    ks_tail1::launch_fused((const float*)mid1.data_ptr(), (const float*)u1_w.data_ptr(), (const float*)u1_0.data_ptr(), (float*)mid2.data_ptr(), (cudaStream_t)stream);
    ks_tail2::launch_fused((const float*)mid2.data_ptr(), (const float*)u2_1.data_ptr(), (const float*)u2_2.data_ptr(), (const float*)u2_3.data_ptr(), (const float*)u2_4.data_ptr(), (float*)mid3.data_ptr(), 64LL, training, (cudaStream_t)stream);
    ks_tail3::launch_fused((const float*)mid3.data_ptr(), (float*)mid4.data_ptr(), (cudaStream_t)stream);
    ks_tail4::launch_fused((const float*)mid4.data_ptr(), (const float*)u4_w.data_ptr(), (const float*)u4_0.data_ptr(), (float*)mid5.data_ptr(), (cudaStream_t)stream);
    ks_tail5::launch_fused((const float*)mid5.data_ptr(), (const float*)u5_1.data_ptr(), (const float*)u5_2.data_ptr(), (const float*)u5_3.data_ptr(), (const float*)u5_4.data_ptr(), (float*)mid6.data_ptr(), 128LL, training, (cudaStream_t)stream);
    ks_tail6::launch_fused((const float*)mid6.data_ptr(), (const float*)u6_w.data_ptr(), (const float*)u6_0.data_ptr(), (float*)mid7.data_ptr(), (cudaStream_t)stream);
    ks_tail7::launch_fused((const float*)mid7.data_ptr(), (const float*)u7_1.data_ptr(), (const float*)u7_2.data_ptr(), (const float*)u7_3.data_ptr(), (const float*)u7_4.data_ptr(), (float*)mid8.data_ptr(), 128LL, training, (cudaStream_t)stream);
    ks_tail8::launch_fused((const float*)mid8.data_ptr(), (float*)mid9.data_ptr(), (cudaStream_t)stream);
    ks_tail9::launch_fused((const float*)mid9.data_ptr(), (const float*)u9_w.data_ptr(), (const float*)u9_0.data_ptr(), (float*)mid10.data_ptr(), (cudaStream_t)stream);
    ks_tail10::launch_fused((const float*)mid10.data_ptr(), (const float*)u10_1.data_ptr(), (const float*)u10_2.data_ptr(), (const float*)u10_3.data_ptr(), (const float*)u10_4.data_ptr(), (float*)mid11.data_ptr(), 256LL, training, (cudaStream_t)stream);
    ks_tail11::launch_fused((const float*)mid11.data_ptr(), (const float*)u11_w.data_ptr(), (const float*)u11_0.data_ptr(), (float*)mid12.data_ptr(), (cudaStream_t)stream);
    ks_tail12::launch_fused((const float*)mid12.data_ptr(), (const float*)u12_1.data_ptr(), (const float*)u12_2.data_ptr(), (const float*)u12_3.data_ptr(), (const float*)u12_4.data_ptr(), (float*)mid13.data_ptr(), 256LL, training, (cudaStream_t)stream);
    ks_tail13::launch_fused((const float*)mid13.data_ptr(), (float*)mid14.data_ptr(), (cudaStream_t)stream);
    ks_tail14::launch_fused((const float*)mid14.data_ptr(), (float*)mid15.data_ptr(), 2048LL, (cudaStream_t)stream);
    ks_tail15::launch_fused((const float*)mid15.data_ptr(), (const float*)u15_w.data_ptr(), (const float*)u15_1.data_ptr(), (float*)out.data_ptr(), (cudaStream_t)stream);
    return out;
}

STABLE_TORCH_LIBRARY(KS_NAMESPACE, m) { m.def("fused(Tensor x, Tensor w, Tensor t0, Tensor u0_1, Tensor u0_2, Tensor u0_3, Tensor u0_4, Tensor u1_w, Tensor u1_0, Tensor u2_1, Tensor u2_2, Tensor u2_3, Tensor u2_4, Tensor u4_w, Tensor u4_0, Tensor u5_1, Tensor u5_2, Tensor u5_3, Tensor u5_4, Tensor u6_w, Tensor u6_0, Tensor u7_1, Tensor u7_2, Tensor u7_3, Tensor u7_4, Tensor u9_w, Tensor u9_0, Tensor u10_1, Tensor u10_2, Tensor u10_3, Tensor u10_4, Tensor u11_w, Tensor u11_0, Tensor u12_1, Tensor u12_2, Tensor u12_3, Tensor u12_4, Tensor u15_w, Tensor u15_1, bool training) -> Tensor"); }
STABLE_TORCH_LIBRARY_IMPL(KS_NAMESPACE, CUDA, m) { m.impl("fused", TORCH_BOX(&fused)); }
''',
    'kernels/copy.cu': r'''#include <cstdint>
#include <cuda_runtime.h>

__global__ void copy_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = x[i];
}

void copy_launch(const float* x, float* y, int64_t n, cudaStream_t stream) {
    if (n == 0) return;
    int threads = 256;
    int blocks = (int)((n + threads - 1) / threads);
    if (blocks > 65535) blocks = 65535;
    copy_kernel<<<blocks, threads, 0, stream>>>(x, y, n);
}
''',
    'kernels/fused.cu': r'''// Written by Kernel Studio's heuristic policy: Conv2d (8x3x224x224 -> 8x64x224x224) with 1 operator(s) fused after it, then one row-wise batch_norm kernel (rows of 401408), then Conv2d (8x64x224x224 -> 8x64x224x224) with 1 operator(s) fused after it, then one row-wise batch_norm kernel (rows of 401408), then one max pool kernel (2x2 windows), then Conv2d (8x64x112x112 -> 8x128x112x112) with 1 operator(s) fused after it, then one row-wise batch_norm kernel (rows of 100352), then Conv2d (8x128x112x112 -> 8x128x112x112) with 1 operator(s) fused after it, then one row-wise batch_norm kernel (rows of 100352), then one max pool kernel (2x2 windows), then Conv2d (8x128x56x56 -> 8x256x56x56) with 1 operator(s) fused after it, then one row-wise batch_norm kernel (rows of 25088), then Conv2d (8x256x56x56 -> 8x256x56x56) with 1 operator(s) fused after it, then one row-wise batch_norm kernel (rows of 25088), then one max pool kernel (2x2 windows), then one row-wise mean kernel (rows of 784), then GEMM (8x256 by 256x10) with 0 operator(s) fused after it.
#include <cuda_runtime.h>
#include <cstdint>
#include <math.h>
#ifndef BLOCK
#define BLOCK 256
#endif
#include <cudnn.h>
#include <dlfcn.h>
#include <stdexcept>
#include <string>
#include <cublas_v2.h>
namespace ks_head {
__device__ __forceinline__ float epi_op(float acc, float LOAD_t0) {
    const float result = (acc + LOAD_t0);
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ t0, float* __restrict__ out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], t0[((i / 50176LL) % 64LL)]);
}

// cuDNN is opened at run time, never linked: the library and its parts (ops, cnn, engines) come from the folder of
// the cuDNN torch loaded, in the order that keeps a system-wide cuDNN of another version out of the process
// (two versions in one process crash it).
#define KS_CUDNN_API(X) X(cudnnCreate) X(cudnnSetStream) X(cudnnGetErrorString) X(cudnnCreateTensorDescriptor) \
    X(cudnnCreateFilterDescriptor) X(cudnnCreateConvolutionDescriptor) X(cudnnSetTensorNdDescriptor) \
    X(cudnnSetFilterNdDescriptor) X(cudnnSetConvolutionNdDescriptor) X(cudnnSetConvolutionGroupCount) \
    X(cudnnSetConvolutionMathType) X(cudnnGetConvolutionForwardAlgorithm_v7) \
    X(cudnnGetConvolutionForwardWorkspaceSize) X(cudnnConvolutionForward) \
    X(cudnnGetConvolutionBackwardDataAlgorithm_v7) X(cudnnGetConvolutionBackwardDataWorkspaceSize) \
    X(cudnnConvolutionBackwardData) X(cudnnFindConvolutionForwardAlgorithm) X(cudnnFindConvolutionBackwardDataAlgorithm)
struct CudnnApi {
#define KS_FIELD(f) decltype(&::f) f = nullptr;
    KS_CUDNN_API(KS_FIELD)
#undef KS_FIELD
};

static std::string loaded_folder(const char* soname) {
    void* handle = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
    char origin[4096];
    if (!handle || dlinfo(handle, RTLD_DI_ORIGIN, origin) != 0) return "";
    return std::string(origin) + "/";
}

static const CudnnApi& cudnn() {
    static CudnnApi api;
    static bool loaded = false;
    if (loaded) return api;
    const std::string major = ".so." + std::to_string(CUDNN_MAJOR);
    std::string dir = loaded_folder(("libcudnn_graph" + major).c_str());
    if (dir.empty()) dir = loaded_folder(("libcudnn" + major).c_str());
    for (const char* part : {"graph", "engines_runtime_compiled", "engines_precompiled", "heuristic", "ops", "cnn", "adv"})
        dlopen((dir + "libcudnn_" + part + major).c_str(), RTLD_NOW | RTLD_GLOBAL);
    void* lib = dlopen((dir + "libcudnn" + major).c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!lib) throw std::runtime_error(std::string("cuDNN could not be opened: ") + dlerror());
#define KS_LOAD(f) api.f = (decltype(&::f))dlsym(lib, #f); \
    if (!api.f) throw std::runtime_error("cuDNN lacks " #f);
    KS_CUDNN_API(KS_LOAD)
#undef KS_LOAD
    loaded = true;
    return api;
}

static void check(cudnnStatus_t status, const char* what) {
    if (status != CUDNN_STATUS_SUCCESS)
        throw std::runtime_error(std::string("cuDNN ") + what + " failed: " + cudnn().cudnnGetErrorString(status));
}

template <typename Perf> static const Perf& pick(const Perf* perf, int found) {
    // Ranked fastest first: measured once at the first call (as torch.backends.cudnn.benchmark does), or by
    // cuDNN's heuristics where measuring failed (short of memory). Take the first usable.
    for (int i = 0; i < found; ++i) if (perf[i].status == CUDNN_STATUS_SUCCESS) return perf[i];
    throw std::runtime_error("cuDNN has no algorithm for this convolution");
}

struct ConvState {
    cudnnHandle_t handle = nullptr;
    cudnnTensorDescriptor_t x, y;  // the x and y of cuDNN's terms
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    cudnnConvolutionFwdAlgo_t algo;
    size_t bytes = 0;
    void* workspace = nullptr;
};

static ConvState& state(cudaStream_t stream) {
    // Descriptors, the algorithm and its workspace are made once per process: the shapes are fixed.
    static ConvState s;
    if (!s.handle) {
        cudnnHandle_t h;
        check(cudnn().cudnnCreate(&h), "create");
        check(cudnn().cudnnSetStream(h, stream), "set stream");
        const int in_dims[] = {8, 3, 224, 224}, in_strides[] = {150528, 50176, 224, 1};
        const int out_dims[] = {8, 64, 224, 224}, out_strides[] = {3211264, 50176, 224, 1};
        const int w_dims[] = {64, 3, 3, 3};
        const int pad[] = {1, 1}, stride[] = {1, 1}, dilation[] = {1, 1};
        check(cudnn().cudnnCreateTensorDescriptor(&s.x), "tensor descriptor");
        check(cudnn().cudnnCreateTensorDescriptor(&s.y), "tensor descriptor");
        check(cudnn().cudnnCreateFilterDescriptor(&s.w), "filter descriptor");
        check(cudnn().cudnnCreateConvolutionDescriptor(&s.conv), "convolution descriptor");
        check(cudnn().cudnnSetTensorNdDescriptor(s.x, CUDNN_DATA_FLOAT, 4, in_dims, in_strides), "input shape");
        check(cudnn().cudnnSetTensorNdDescriptor(s.y, CUDNN_DATA_FLOAT, 4, out_dims, out_strides), "output shape");
        check(cudnn().cudnnSetFilterNdDescriptor(s.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, w_dims), "weight shape");
        check(cudnn().cudnnSetConvolutionNdDescriptor(s.conv, 2, pad, stride, dilation, CUDNN_CROSS_CORRELATION,
                                              CUDNN_DATA_FLOAT), "geometry");
        check(cudnn().cudnnSetConvolutionGroupCount(s.conv, 1), "groups");
        // The default math lets cuDNN use TF32 tensor cores for float data, as PyTorch does by default.
        check(cudnn().cudnnSetConvolutionMathType(s.conv, CUDNN_DEFAULT_MATH), "math type");
        cudnnConvolutionFwdAlgoPerf_t perf[8]; int found = 0;
        if (cudnn().cudnnFindConvolutionForwardAlgorithm(h, s.x, s.w, s.conv, s.y, 8, &found, perf) != CUDNN_STATUS_SUCCESS || !found)
            check(cudnn().cudnnGetConvolutionForwardAlgorithm_v7(h, s.x, s.w, s.conv, s.y, 8, &found, perf), "find");
        const auto& best = pick(perf, found);
        check(cudnn().cudnnSetConvolutionMathType(s.conv, best.mathType), "math type");
        check(cudnn().cudnnGetConvolutionForwardWorkspaceSize(h, s.x, s.w, s.conv, s.y, best.algo, &s.bytes), "workspace");
        s.algo = best.algo;
        if (s.bytes && cudaMalloc(&s.workspace, s.bytes) != cudaSuccess) throw std::runtime_error("cuDNN workspace: out of memory");
        s.handle = h;
    }
    check(cudnn().cudnnSetStream(s.handle, stream), "set stream");
    return s;
}

void launch_fused(const float* x, const float* w, const float* __restrict__ t0, float* out, cudaStream_t stream) {
    ConvState& s = state(stream);
    cudnnHandle_t h = s.handle;
    const float alpha = 1.0f, beta = 0.0f;
    check(cudnn().cudnnConvolutionForward(h, &alpha, s.x, x, s.w, w, s.conv, s.algo, s.workspace, s.bytes, &beta, s.y, out), "convolution");
    int blocks = (int)((25690112LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(t0, out, 25690112LL);
}
}  // namespace ks_head

namespace ks_tail0 {

struct MaxSum { float m, s; };
__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
    float m = fmaxf(a.m, b.m);
    float s = (a.m == -INFINITY ? 0.f : a.s * __expf(a.m - m)) + (b.m == -INFINITY ? 0.f : b.s * __expf(b.m - m));
    return {m, s};
}
template <typename T, typename F> __device__ T block_reduce(T v, F f) {
    __shared__ T shared[32];
    for (int o = 16; o > 0; o >>= 1) {
        T other;
        if constexpr (sizeof(T) == sizeof(float)) { other = __shfl_xor_sync(0xffffffff, v, o); }
        else { other = {__shfl_xor_sync(0xffffffff, v.m, o), __shfl_xor_sync(0xffffffff, v.s, o)}; }
        v = f(v, other);
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    int warps = (blockDim.x + 31) >> 5;
    v = shared[lane < warps ? lane : 0];
    if (warp == 0) {
        for (int o = 16; o > 0; o >>= 1) {
            T other;
            if constexpr (sizeof(T) == sizeof(float)) { other = __shfl_xor_sync(0xffffffff, v, o); }
            else { other = {__shfl_xor_sync(0xffffffff, v.m, o), __shfl_xor_sync(0xffffffff, v.s, o)}; }
            if (lane < warps && (lane ^ o) < warps) v = f(v, other);
        }
        if (lane == 0) shared[0] = v;
    }
    __syncthreads();
    T out = shared[0];
    __syncthreads();
    return out;
}
__device__ __forceinline__ float pre_op(float LOAD_u0_0) {
    const float pre = LOAD_u0_0;
    return pre;
}
__device__ __forceinline__ float epi_op(float ROW) {
    const float v_feature_extractor_0_2 = fmaxf(ROW, 0.0f);
    const float result = v_feature_extractor_0_2;
    return result;
}

__global__ void batch_norm_kernel(const float* __restrict__ u0_0, const float* __restrict__ u0_1, const float* __restrict__ u0_2, const float* __restrict__ u0_3, const float* __restrict__ u0_4, float* __restrict__ out, bool training) {
    const int64_t c = blockIdx.x;  // one block per channel
    float mean = 0.f, rstd = 1.f;
    if (training) { float s = 0.f, q = 0.f;
        for (int64_t r = threadIdx.x; r < 401408LL; r += BLOCK) { const float v = pre_op(u0_0[((r) / 50176LL * 64LL + (c)) * 50176LL + (r) % 50176LL]); s += v; q += v * v; }
        s = block_reduce(s, [](float a, float b) { return a + b; });
        q = block_reduce(q, [](float a, float b) { return a + b; });
        mean = s / 401408.0f;
        const float var = fmaxf(q / 401408.0f - mean * mean, 0.f);
        rstd = rsqrtf(var + 1e-05f);
        if (training && threadIdx.x == 0) { float* rm = const_cast<float*>(u0_3); float* rv = const_cast<float*>(u0_4);
            rm[c] = 0.9f * rm[c] + 0.1f * mean;
            rv[c] = 0.9f * rv[c] + 0.1f * var * (401408.0f / 401407.0f); } } else { mean = u0_3[c]; rstd = 1.0f / sqrtf(u0_4[c] + 1e-05f); }
    for (int64_t r = threadIdx.x; r < 401408LL; r += BLOCK) {
        const int64_t k = ((r) / 50176LL * 64LL + (c)) * 50176LL + (r) % 50176LL;
        float t = (pre_op(u0_0[k]) - mean) * rstd; t = t * u0_1[c] + u0_2[c];
        out[k] = epi_op(t);
    }
}
void launch_fused(const float* u0_0, const float* u0_1, const float* u0_2, const float* u0_3, const float* u0_4, float* out, int64_t channels, bool training,
                  cudaStream_t stream) {
    batch_norm_kernel<<<(unsigned)channels, BLOCK, 0, stream>>>(u0_0, u0_1, u0_2, u0_3, u0_4, out, training);
}
}  // namespace ks_tail0

namespace ks_tail1 {
__device__ __forceinline__ float epi_op(float acc, float LOAD_u1_0) {
    const float result = (acc + LOAD_u1_0);
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ u1_0, float* __restrict__ out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], u1_0[((i / 50176LL) % 64LL)]);
}

// cuDNN is opened at run time, never linked: the library and its parts (ops, cnn, engines) come from the folder of
// the cuDNN torch loaded, in the order that keeps a system-wide cuDNN of another version out of the process
// (two versions in one process crash it).
#define KS_CUDNN_API(X) X(cudnnCreate) X(cudnnSetStream) X(cudnnGetErrorString) X(cudnnCreateTensorDescriptor) \
    X(cudnnCreateFilterDescriptor) X(cudnnCreateConvolutionDescriptor) X(cudnnSetTensorNdDescriptor) \
    X(cudnnSetFilterNdDescriptor) X(cudnnSetConvolutionNdDescriptor) X(cudnnSetConvolutionGroupCount) \
    X(cudnnSetConvolutionMathType) X(cudnnGetConvolutionForwardAlgorithm_v7) \
    X(cudnnGetConvolutionForwardWorkspaceSize) X(cudnnConvolutionForward) \
    X(cudnnGetConvolutionBackwardDataAlgorithm_v7) X(cudnnGetConvolutionBackwardDataWorkspaceSize) \
    X(cudnnConvolutionBackwardData) X(cudnnFindConvolutionForwardAlgorithm) X(cudnnFindConvolutionBackwardDataAlgorithm)
struct CudnnApi {
#define KS_FIELD(f) decltype(&::f) f = nullptr;
    KS_CUDNN_API(KS_FIELD)
#undef KS_FIELD
};

static std::string loaded_folder(const char* soname) {
    void* handle = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
    char origin[4096];
    if (!handle || dlinfo(handle, RTLD_DI_ORIGIN, origin) != 0) return "";
    return std::string(origin) + "/";
}

static const CudnnApi& cudnn() {
    static CudnnApi api;
    static bool loaded = false;
    if (loaded) return api;
    const std::string major = ".so." + std::to_string(CUDNN_MAJOR);
    std::string dir = loaded_folder(("libcudnn_graph" + major).c_str());
    if (dir.empty()) dir = loaded_folder(("libcudnn" + major).c_str());
    for (const char* part : {"graph", "engines_runtime_compiled", "engines_precompiled", "heuristic", "ops", "cnn", "adv"})
        dlopen((dir + "libcudnn_" + part + major).c_str(), RTLD_NOW | RTLD_GLOBAL);
    void* lib = dlopen((dir + "libcudnn" + major).c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!lib) throw std::runtime_error(std::string("cuDNN could not be opened: ") + dlerror());
#define KS_LOAD(f) api.f = (decltype(&::f))dlsym(lib, #f); \
    if (!api.f) throw std::runtime_error("cuDNN lacks " #f);
    KS_CUDNN_API(KS_LOAD)
#undef KS_LOAD
    loaded = true;
    return api;
}

static void check(cudnnStatus_t status, const char* what) {
    if (status != CUDNN_STATUS_SUCCESS)
        throw std::runtime_error(std::string("cuDNN ") + what + " failed: " + cudnn().cudnnGetErrorString(status));
}

template <typename Perf> static const Perf& pick(const Perf* perf, int found) {
    // Ranked fastest first: measured once at the first call (as torch.backends.cudnn.benchmark does), or by
    // cuDNN's heuristics where measuring failed (short of memory). Take the first usable.
    for (int i = 0; i < found; ++i) if (perf[i].status == CUDNN_STATUS_SUCCESS) return perf[i];
    throw std::runtime_error("cuDNN has no algorithm for this convolution");
}

struct ConvState {
    cudnnHandle_t handle = nullptr;
    cudnnTensorDescriptor_t x, y;  // the x and y of cuDNN's terms
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    cudnnConvolutionFwdAlgo_t algo;
    size_t bytes = 0;
    void* workspace = nullptr;
};

static ConvState& state(cudaStream_t stream) {
    // Descriptors, the algorithm and its workspace are made once per process: the shapes are fixed.
    static ConvState s;
    if (!s.handle) {
        cudnnHandle_t h;
        check(cudnn().cudnnCreate(&h), "create");
        check(cudnn().cudnnSetStream(h, stream), "set stream");
        const int in_dims[] = {8, 64, 224, 224}, in_strides[] = {3211264, 50176, 224, 1};
        const int out_dims[] = {8, 64, 224, 224}, out_strides[] = {3211264, 50176, 224, 1};
        const int w_dims[] = {64, 64, 3, 3};
        const int pad[] = {1, 1}, stride[] = {1, 1}, dilation[] = {1, 1};
        check(cudnn().cudnnCreateTensorDescriptor(&s.x), "tensor descriptor");
        check(cudnn().cudnnCreateTensorDescriptor(&s.y), "tensor descriptor");
        check(cudnn().cudnnCreateFilterDescriptor(&s.w), "filter descriptor");
        check(cudnn().cudnnCreateConvolutionDescriptor(&s.conv), "convolution descriptor");
        check(cudnn().cudnnSetTensorNdDescriptor(s.x, CUDNN_DATA_FLOAT, 4, in_dims, in_strides), "input shape");
        check(cudnn().cudnnSetTensorNdDescriptor(s.y, CUDNN_DATA_FLOAT, 4, out_dims, out_strides), "output shape");
        check(cudnn().cudnnSetFilterNdDescriptor(s.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, w_dims), "weight shape");
        check(cudnn().cudnnSetConvolutionNdDescriptor(s.conv, 2, pad, stride, dilation, CUDNN_CROSS_CORRELATION,
                                              CUDNN_DATA_FLOAT), "geometry");
        check(cudnn().cudnnSetConvolutionGroupCount(s.conv, 1), "groups");
        // The default math lets cuDNN use TF32 tensor cores for float data, as PyTorch does by default.
        check(cudnn().cudnnSetConvolutionMathType(s.conv, CUDNN_DEFAULT_MATH), "math type");
        cudnnConvolutionFwdAlgoPerf_t perf[8]; int found = 0;
        if (cudnn().cudnnFindConvolutionForwardAlgorithm(h, s.x, s.w, s.conv, s.y, 8, &found, perf) != CUDNN_STATUS_SUCCESS || !found)
            check(cudnn().cudnnGetConvolutionForwardAlgorithm_v7(h, s.x, s.w, s.conv, s.y, 8, &found, perf), "find");
        const auto& best = pick(perf, found);
        check(cudnn().cudnnSetConvolutionMathType(s.conv, best.mathType), "math type");
        check(cudnn().cudnnGetConvolutionForwardWorkspaceSize(h, s.x, s.w, s.conv, s.y, best.algo, &s.bytes), "workspace");
        s.algo = best.algo;
        if (s.bytes && cudaMalloc(&s.workspace, s.bytes) != cudaSuccess) throw std::runtime_error("cuDNN workspace: out of memory");
        s.handle = h;
    }
    check(cudnn().cudnnSetStream(s.handle, stream), "set stream");
    return s;
}

void launch_fused(const float* x, const float* w, const float* __restrict__ u1_0, float* out, cudaStream_t stream) {
    ConvState& s = state(stream);
    cudnnHandle_t h = s.handle;
    const float alpha = 1.0f, beta = 0.0f;
    check(cudnn().cudnnConvolutionForward(h, &alpha, s.x, x, s.w, w, s.conv, s.algo, s.workspace, s.bytes, &beta, s.y, out), "convolution");
    int blocks = (int)((25690112LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(u1_0, out, 25690112LL);
}
}  // namespace ks_tail1

namespace ks_tail2 {

struct MaxSum { float m, s; };
__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
    float m = fmaxf(a.m, b.m);
    float s = (a.m == -INFINITY ? 0.f : a.s * __expf(a.m - m)) + (b.m == -INFINITY ? 0.f : b.s * __expf(b.m - m));
    return {m, s};
}
template <typename T, typename F> __device__ T block_reduce(T v, F f) {
    __shared__ T shared[32];
    for (int o = 16; o > 0; o >>= 1) {
        T other;
        if constexpr (sizeof(T) == sizeof(float)) { other = __shfl_xor_sync(0xffffffff, v, o); }
        else { other = {__shfl_xor_sync(0xffffffff, v.m, o), __shfl_xor_sync(0xffffffff, v.s, o)}; }
        v = f(v, other);
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    int warps = (blockDim.x + 31) >> 5;
    v = shared[lane < warps ? lane : 0];
    if (warp == 0) {
        for (int o = 16; o > 0; o >>= 1) {
            T other;
            if constexpr (sizeof(T) == sizeof(float)) { other = __shfl_xor_sync(0xffffffff, v, o); }
            else { other = {__shfl_xor_sync(0xffffffff, v.m, o), __shfl_xor_sync(0xffffffff, v.s, o)}; }
            if (lane < warps && (lane ^ o) < warps) v = f(v, other);
        }
        if (lane == 0) shared[0] = v;
    }
    __syncthreads();
    T out = shared[0];
    __syncthreads();
    return out;
}
__device__ __forceinline__ float pre_op(float LOAD_u2_0) {
    const float pre = LOAD_u2_0;
    return pre;
}
__device__ __forceinline__ float epi_op(float ROW) {
    const float v_feature_extractor_0_5 = fmaxf(ROW, 0.0f);
    const float result = v_feature_extractor_0_5;
    return result;
}

__global__ void batch_norm_kernel(const float* __restrict__ u2_0, const float* __restrict__ u2_1, const float* __restrict__ u2_2, const float* __restrict__ u2_3, const float* __restrict__ u2_4, float* __restrict__ out, bool training) {
    const int64_t c = blockIdx.x;  // one block per channel
    float mean = 0.f, rstd = 1.f;
    if (training) { float s = 0.f, q = 0.f;
        for (int64_t r = threadIdx.x; r < 401408LL; r += BLOCK) { const float v = pre_op(u2_0[((r) / 50176LL * 64LL + (c)) * 50176LL + (r) % 50176LL]); s += v; q += v * v; }
        s = block_reduce(s, [](float a, float b) { return a + b; });
        q = block_reduce(q, [](float a, float b) { return a + b; });
        mean = s / 401408.0f;
        const float var = fmaxf(q / 401408.0f - mean * mean, 0.f);
        rstd = rsqrtf(var + 1e-05f);
        if (training && threadIdx.x == 0) { float* rm = const_cast<float*>(u2_3); float* rv = const_cast<float*>(u2_4);
            rm[c] = 0.9f * rm[c] + 0.1f * mean;
            rv[c] = 0.9f * rv[c] + 0.1f * var * (401408.0f / 401407.0f); } } else { mean = u2_3[c]; rstd = 1.0f / sqrtf(u2_4[c] + 1e-05f); }
    for (int64_t r = threadIdx.x; r < 401408LL; r += BLOCK) {
        const int64_t k = ((r) / 50176LL * 64LL + (c)) * 50176LL + (r) % 50176LL;
        float t = (pre_op(u2_0[k]) - mean) * rstd; t = t * u2_1[c] + u2_2[c];
        out[k] = epi_op(t);
    }
}
void launch_fused(const float* u2_0, const float* u2_1, const float* u2_2, const float* u2_3, const float* u2_4, float* out, int64_t channels, bool training,
                  cudaStream_t stream) {
    batch_norm_kernel<<<(unsigned)channels, BLOCK, 0, stream>>>(u2_0, u2_1, u2_2, u2_3, u2_4, out, training);
}
}  // namespace ks_tail2

namespace ks_tail3 {
__device__ __forceinline__ float pre_op(float LOAD_u3_0) {
    const float pre = LOAD_u3_0;
    return pre;
}
__device__ __forceinline__ float epi_op(float POOL) {
    const float result = POOL;
    return result;
}

__global__ void pool_kernel(const float* __restrict__ x, float* __restrict__ out) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < 6422528LL; i += (int64_t)gridDim.x * BLOCK) {
        const int64_t ow = i % 112LL, oh = (i / 112LL) % 112LL, od = (i / 12544LL) % 1LL;
        const float* xc = x + (i / 12544LL) * 50176LL;
        float acc = -INFINITY;
        for (int64_t a = 0; a < 1; ++a) {
            const int64_t id = od * 1 - 0 + a * 1; if (id < 0 || id >= 1) continue;
            for (int64_t bb = 0; bb < 2; ++bb) {
                const int64_t ih = oh * 2 - 0 + bb * 1; if (ih < 0 || ih >= 224) continue;
                for (int64_t c = 0; c < 2; ++c) {
                    const int64_t iw = ow * 2 - 0 + c * 1; if (iw < 0 || iw >= 224) continue;
                    const float v = pre_op(xc[(id * 224 + ih) * 224LL + iw]); acc = fmaxf(acc, v);
                }
            }
        }
        const float pooled = acc;
        out[i] = epi_op(pooled);
    }
}
void launch_fused(const float* x, float* out, cudaStream_t stream) {
    int blocks = (int)((6422528LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    pool_kernel<<<blocks, BLOCK, 0, stream>>>(x, out);
}
}  // namespace ks_tail3

namespace ks_tail4 {
__device__ __forceinline__ float epi_op(float acc, float LOAD_u4_0) {
    const float result = (acc + LOAD_u4_0);
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ u4_0, float* __restrict__ out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], u4_0[((i / 12544LL) % 128LL)]);
}

// cuDNN is opened at run time, never linked: the library and its parts (ops, cnn, engines) come from the folder of
// the cuDNN torch loaded, in the order that keeps a system-wide cuDNN of another version out of the process
// (two versions in one process crash it).
#define KS_CUDNN_API(X) X(cudnnCreate) X(cudnnSetStream) X(cudnnGetErrorString) X(cudnnCreateTensorDescriptor) \
    X(cudnnCreateFilterDescriptor) X(cudnnCreateConvolutionDescriptor) X(cudnnSetTensorNdDescriptor) \
    X(cudnnSetFilterNdDescriptor) X(cudnnSetConvolutionNdDescriptor) X(cudnnSetConvolutionGroupCount) \
    X(cudnnSetConvolutionMathType) X(cudnnGetConvolutionForwardAlgorithm_v7) \
    X(cudnnGetConvolutionForwardWorkspaceSize) X(cudnnConvolutionForward) \
    X(cudnnGetConvolutionBackwardDataAlgorithm_v7) X(cudnnGetConvolutionBackwardDataWorkspaceSize) \
    X(cudnnConvolutionBackwardData) X(cudnnFindConvolutionForwardAlgorithm) X(cudnnFindConvolutionBackwardDataAlgorithm)
struct CudnnApi {
#define KS_FIELD(f) decltype(&::f) f = nullptr;
    KS_CUDNN_API(KS_FIELD)
#undef KS_FIELD
};

static std::string loaded_folder(const char* soname) {
    void* handle = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
    char origin[4096];
    if (!handle || dlinfo(handle, RTLD_DI_ORIGIN, origin) != 0) return "";
    return std::string(origin) + "/";
}

static const CudnnApi& cudnn() {
    static CudnnApi api;
    static bool loaded = false;
    if (loaded) return api;
    const std::string major = ".so." + std::to_string(CUDNN_MAJOR);
    std::string dir = loaded_folder(("libcudnn_graph" + major).c_str());
    if (dir.empty()) dir = loaded_folder(("libcudnn" + major).c_str());
    for (const char* part : {"graph", "engines_runtime_compiled", "engines_precompiled", "heuristic", "ops", "cnn", "adv"})
        dlopen((dir + "libcudnn_" + part + major).c_str(), RTLD_NOW | RTLD_GLOBAL);
    void* lib = dlopen((dir + "libcudnn" + major).c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!lib) throw std::runtime_error(std::string("cuDNN could not be opened: ") + dlerror());
#define KS_LOAD(f) api.f = (decltype(&::f))dlsym(lib, #f); \
    if (!api.f) throw std::runtime_error("cuDNN lacks " #f);
    KS_CUDNN_API(KS_LOAD)
#undef KS_LOAD
    loaded = true;
    return api;
}

static void check(cudnnStatus_t status, const char* what) {
    if (status != CUDNN_STATUS_SUCCESS)
        throw std::runtime_error(std::string("cuDNN ") + what + " failed: " + cudnn().cudnnGetErrorString(status));
}

template <typename Perf> static const Perf& pick(const Perf* perf, int found) {
    // Ranked fastest first: measured once at the first call (as torch.backends.cudnn.benchmark does), or by
    // cuDNN's heuristics where measuring failed (short of memory). Take the first usable.
    for (int i = 0; i < found; ++i) if (perf[i].status == CUDNN_STATUS_SUCCESS) return perf[i];
    throw std::runtime_error("cuDNN has no algorithm for this convolution");
}

struct ConvState {
    cudnnHandle_t handle = nullptr;
    cudnnTensorDescriptor_t x, y;  // the x and y of cuDNN's terms
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    cudnnConvolutionFwdAlgo_t algo;
    size_t bytes = 0;
    void* workspace = nullptr;
};

static ConvState& state(cudaStream_t stream) {
    // Descriptors, the algorithm and its workspace are made once per process: the shapes are fixed.
    static ConvState s;
    if (!s.handle) {
        cudnnHandle_t h;
        check(cudnn().cudnnCreate(&h), "create");
        check(cudnn().cudnnSetStream(h, stream), "set stream");
        const int in_dims[] = {8, 64, 112, 112}, in_strides[] = {802816, 12544, 112, 1};
        const int out_dims[] = {8, 128, 112, 112}, out_strides[] = {1605632, 12544, 112, 1};
        const int w_dims[] = {128, 64, 3, 3};
        const int pad[] = {1, 1}, stride[] = {1, 1}, dilation[] = {1, 1};
        check(cudnn().cudnnCreateTensorDescriptor(&s.x), "tensor descriptor");
        check(cudnn().cudnnCreateTensorDescriptor(&s.y), "tensor descriptor");
        check(cudnn().cudnnCreateFilterDescriptor(&s.w), "filter descriptor");
        check(cudnn().cudnnCreateConvolutionDescriptor(&s.conv), "convolution descriptor");
        check(cudnn().cudnnSetTensorNdDescriptor(s.x, CUDNN_DATA_FLOAT, 4, in_dims, in_strides), "input shape");
        check(cudnn().cudnnSetTensorNdDescriptor(s.y, CUDNN_DATA_FLOAT, 4, out_dims, out_strides), "output shape");
        check(cudnn().cudnnSetFilterNdDescriptor(s.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, w_dims), "weight shape");
        check(cudnn().cudnnSetConvolutionNdDescriptor(s.conv, 2, pad, stride, dilation, CUDNN_CROSS_CORRELATION,
                                              CUDNN_DATA_FLOAT), "geometry");
        check(cudnn().cudnnSetConvolutionGroupCount(s.conv, 1), "groups");
        // The default math lets cuDNN use TF32 tensor cores for float data, as PyTorch does by default.
        check(cudnn().cudnnSetConvolutionMathType(s.conv, CUDNN_DEFAULT_MATH), "math type");
        cudnnConvolutionFwdAlgoPerf_t perf[8]; int found = 0;
        if (cudnn().cudnnFindConvolutionForwardAlgorithm(h, s.x, s.w, s.conv, s.y, 8, &found, perf) != CUDNN_STATUS_SUCCESS || !found)
            check(cudnn().cudnnGetConvolutionForwardAlgorithm_v7(h, s.x, s.w, s.conv, s.y, 8, &found, perf), "find");
        const auto& best = pick(perf, found);
        check(cudnn().cudnnSetConvolutionMathType(s.conv, best.mathType), "math type");
        check(cudnn().cudnnGetConvolutionForwardWorkspaceSize(h, s.x, s.w, s.conv, s.y, best.algo, &s.bytes), "workspace");
        s.algo = best.algo;
        if (s.bytes && cudaMalloc(&s.workspace, s.bytes) != cudaSuccess) throw std::runtime_error("cuDNN workspace: out of memory");
        s.handle = h;
    }
    check(cudnn().cudnnSetStream(s.handle, stream), "set stream");
    return s;
}

void launch_fused(const float* x, const float* w, const float* __restrict__ u4_0, float* out, cudaStream_t stream) {
    ConvState& s = state(stream);
    cudnnHandle_t h = s.handle;
    const float alpha = 1.0f, beta = 0.0f;
    check(cudnn().cudnnConvolutionForward(h, &alpha, s.x, x, s.w, w, s.conv, s.algo, s.workspace, s.bytes, &beta, s.y, out), "convolution");
    int blocks = (int)((12845056LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(u4_0, out, 12845056LL);
}
}  // namespace ks_tail4

namespace ks_tail5 {

struct MaxSum { float m, s; };
__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
    float m = fmaxf(a.m, b.m);
    float s = (a.m == -INFINITY ? 0.f : a.s * __expf(a.m - m)) + (b.m == -INFINITY ? 0.f : b.s * __expf(b.m - m));
    return {m, s};
}
template <typename T, typename F> __device__ T block_reduce(T v, F f) {
    __shared__ T shared[32];
    for (int o = 16; o > 0; o >>= 1) {
        T other;
        if constexpr (sizeof(T) == sizeof(float)) { other = __shfl_xor_sync(0xffffffff, v, o); }
        else { other = {__shfl_xor_sync(0xffffffff, v.m, o), __shfl_xor_sync(0xffffffff, v.s, o)}; }
        v = f(v, other);
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    int warps = (blockDim.x + 31) >> 5;
    v = shared[lane < warps ? lane : 0];
    if (warp == 0) {
        for (int o = 16; o > 0; o >>= 1) {
            T other;
            if constexpr (sizeof(T) == sizeof(float)) { other = __shfl_xor_sync(0xffffffff, v, o); }
            else { other = {__shfl_xor_sync(0xffffffff, v.m, o), __shfl_xor_sync(0xffffffff, v.s, o)}; }
            if (lane < warps && (lane ^ o) < warps) v = f(v, other);
        }
        if (lane == 0) shared[0] = v;
    }
    __syncthreads();
    T out = shared[0];
    __syncthreads();
    return out;
}
__device__ __forceinline__ float pre_op(float LOAD_u5_0) {
    const float pre = LOAD_u5_0;
    return pre;
}
__device__ __forceinline__ float epi_op(float ROW) {
    const float v_feature_extractor_1_2 = fmaxf(ROW, 0.0f);
    const float result = v_feature_extractor_1_2;
    return result;
}

__global__ void batch_norm_kernel(const float* __restrict__ u5_0, const float* __restrict__ u5_1, const float* __restrict__ u5_2, const float* __restrict__ u5_3, const float* __restrict__ u5_4, float* __restrict__ out, bool training) {
    const int64_t c = blockIdx.x;  // one block per channel
    float mean = 0.f, rstd = 1.f;
    if (training) { float s = 0.f, q = 0.f;
        for (int64_t r = threadIdx.x; r < 100352LL; r += BLOCK) { const float v = pre_op(u5_0[((r) / 12544LL * 128LL + (c)) * 12544LL + (r) % 12544LL]); s += v; q += v * v; }
        s = block_reduce(s, [](float a, float b) { return a + b; });
        q = block_reduce(q, [](float a, float b) { return a + b; });
        mean = s / 100352.0f;
        const float var = fmaxf(q / 100352.0f - mean * mean, 0.f);
        rstd = rsqrtf(var + 1e-05f);
        if (training && threadIdx.x == 0) { float* rm = const_cast<float*>(u5_3); float* rv = const_cast<float*>(u5_4);
            rm[c] = 0.9f * rm[c] + 0.1f * mean;
            rv[c] = 0.9f * rv[c] + 0.1f * var * (100352.0f / 100351.0f); } } else { mean = u5_3[c]; rstd = 1.0f / sqrtf(u5_4[c] + 1e-05f); }
    for (int64_t r = threadIdx.x; r < 100352LL; r += BLOCK) {
        const int64_t k = ((r) / 12544LL * 128LL + (c)) * 12544LL + (r) % 12544LL;
        float t = (pre_op(u5_0[k]) - mean) * rstd; t = t * u5_1[c] + u5_2[c];
        out[k] = epi_op(t);
    }
}
void launch_fused(const float* u5_0, const float* u5_1, const float* u5_2, const float* u5_3, const float* u5_4, float* out, int64_t channels, bool training,
                  cudaStream_t stream) {
    batch_norm_kernel<<<(unsigned)channels, BLOCK, 0, stream>>>(u5_0, u5_1, u5_2, u5_3, u5_4, out, training);
}
}  // namespace ks_tail5

namespace ks_tail6 {
__device__ __forceinline__ float epi_op(float acc, float LOAD_u6_0) {
    const float result = (acc + LOAD_u6_0);
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ u6_0, float* __restrict__ out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], u6_0[((i / 12544LL) % 128LL)]);
}

// cuDNN is opened at run time, never linked: the library and its parts (ops, cnn, engines) come from the folder of
// the cuDNN torch loaded, in the order that keeps a system-wide cuDNN of another version out of the process
// (two versions in one process crash it).
#define KS_CUDNN_API(X) X(cudnnCreate) X(cudnnSetStream) X(cudnnGetErrorString) X(cudnnCreateTensorDescriptor) \
    X(cudnnCreateFilterDescriptor) X(cudnnCreateConvolutionDescriptor) X(cudnnSetTensorNdDescriptor) \
    X(cudnnSetFilterNdDescriptor) X(cudnnSetConvolutionNdDescriptor) X(cudnnSetConvolutionGroupCount) \
    X(cudnnSetConvolutionMathType) X(cudnnGetConvolutionForwardAlgorithm_v7) \
    X(cudnnGetConvolutionForwardWorkspaceSize) X(cudnnConvolutionForward) \
    X(cudnnGetConvolutionBackwardDataAlgorithm_v7) X(cudnnGetConvolutionBackwardDataWorkspaceSize) \
    X(cudnnConvolutionBackwardData) X(cudnnFindConvolutionForwardAlgorithm) X(cudnnFindConvolutionBackwardDataAlgorithm)
struct CudnnApi {
#define KS_FIELD(f) decltype(&::f) f = nullptr;
    KS_CUDNN_API(KS_FIELD)
#undef KS_FIELD
};

static std::string loaded_folder(const char* soname) {
    void* handle = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
    char origin[4096];
    if (!handle || dlinfo(handle, RTLD_DI_ORIGIN, origin) != 0) return "";
    return std::string(origin) + "/";
}

static const CudnnApi& cudnn() {
    static CudnnApi api;
    static bool loaded = false;
    if (loaded) return api;
    const std::string major = ".so." + std::to_string(CUDNN_MAJOR);
    std::string dir = loaded_folder(("libcudnn_graph" + major).c_str());
    if (dir.empty()) dir = loaded_folder(("libcudnn" + major).c_str());
    for (const char* part : {"graph", "engines_runtime_compiled", "engines_precompiled", "heuristic", "ops", "cnn", "adv"})
        dlopen((dir + "libcudnn_" + part + major).c_str(), RTLD_NOW | RTLD_GLOBAL);
    void* lib = dlopen((dir + "libcudnn" + major).c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!lib) throw std::runtime_error(std::string("cuDNN could not be opened: ") + dlerror());
#define KS_LOAD(f) api.f = (decltype(&::f))dlsym(lib, #f); \
    if (!api.f) throw std::runtime_error("cuDNN lacks " #f);
    KS_CUDNN_API(KS_LOAD)
#undef KS_LOAD
    loaded = true;
    return api;
}

static void check(cudnnStatus_t status, const char* what) {
    if (status != CUDNN_STATUS_SUCCESS)
        throw std::runtime_error(std::string("cuDNN ") + what + " failed: " + cudnn().cudnnGetErrorString(status));
}

template <typename Perf> static const Perf& pick(const Perf* perf, int found) {
    // Ranked fastest first: measured once at the first call (as torch.backends.cudnn.benchmark does), or by
    // cuDNN's heuristics where measuring failed (short of memory). Take the first usable.
    for (int i = 0; i < found; ++i) if (perf[i].status == CUDNN_STATUS_SUCCESS) return perf[i];
    throw std::runtime_error("cuDNN has no algorithm for this convolution");
}

struct ConvState {
    cudnnHandle_t handle = nullptr;
    cudnnTensorDescriptor_t x, y;  // the x and y of cuDNN's terms
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    cudnnConvolutionFwdAlgo_t algo;
    size_t bytes = 0;
    void* workspace = nullptr;
};

static ConvState& state(cudaStream_t stream) {
    // Descriptors, the algorithm and its workspace are made once per process: the shapes are fixed.
    static ConvState s;
    if (!s.handle) {
        cudnnHandle_t h;
        check(cudnn().cudnnCreate(&h), "create");
        check(cudnn().cudnnSetStream(h, stream), "set stream");
        const int in_dims[] = {8, 128, 112, 112}, in_strides[] = {1605632, 12544, 112, 1};
        const int out_dims[] = {8, 128, 112, 112}, out_strides[] = {1605632, 12544, 112, 1};
        const int w_dims[] = {128, 128, 3, 3};
        const int pad[] = {1, 1}, stride[] = {1, 1}, dilation[] = {1, 1};
        check(cudnn().cudnnCreateTensorDescriptor(&s.x), "tensor descriptor");
        check(cudnn().cudnnCreateTensorDescriptor(&s.y), "tensor descriptor");
        check(cudnn().cudnnCreateFilterDescriptor(&s.w), "filter descriptor");
        check(cudnn().cudnnCreateConvolutionDescriptor(&s.conv), "convolution descriptor");
        check(cudnn().cudnnSetTensorNdDescriptor(s.x, CUDNN_DATA_FLOAT, 4, in_dims, in_strides), "input shape");
        check(cudnn().cudnnSetTensorNdDescriptor(s.y, CUDNN_DATA_FLOAT, 4, out_dims, out_strides), "output shape");
        check(cudnn().cudnnSetFilterNdDescriptor(s.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, w_dims), "weight shape");
        check(cudnn().cudnnSetConvolutionNdDescriptor(s.conv, 2, pad, stride, dilation, CUDNN_CROSS_CORRELATION,
                                              CUDNN_DATA_FLOAT), "geometry");
        check(cudnn().cudnnSetConvolutionGroupCount(s.conv, 1), "groups");
        // The default math lets cuDNN use TF32 tensor cores for float data, as PyTorch does by default.
        check(cudnn().cudnnSetConvolutionMathType(s.conv, CUDNN_DEFAULT_MATH), "math type");
        cudnnConvolutionFwdAlgoPerf_t perf[8]; int found = 0;
        if (cudnn().cudnnFindConvolutionForwardAlgorithm(h, s.x, s.w, s.conv, s.y, 8, &found, perf) != CUDNN_STATUS_SUCCESS || !found)
            check(cudnn().cudnnGetConvolutionForwardAlgorithm_v7(h, s.x, s.w, s.conv, s.y, 8, &found, perf), "find");
        const auto& best = pick(perf, found);
        check(cudnn().cudnnSetConvolutionMathType(s.conv, best.mathType), "math type");
        check(cudnn().cudnnGetConvolutionForwardWorkspaceSize(h, s.x, s.w, s.conv, s.y, best.algo, &s.bytes), "workspace");
        s.algo = best.algo;
        if (s.bytes && cudaMalloc(&s.workspace, s.bytes) != cudaSuccess) throw std::runtime_error("cuDNN workspace: out of memory");
        s.handle = h;
    }
    check(cudnn().cudnnSetStream(s.handle, stream), "set stream");
    return s;
}

void launch_fused(const float* x, const float* w, const float* __restrict__ u6_0, float* out, cudaStream_t stream) {
    ConvState& s = state(stream);
    cudnnHandle_t h = s.handle;
    const float alpha = 1.0f, beta = 0.0f;
    check(cudnn().cudnnConvolutionForward(h, &alpha, s.x, x, s.w, w, s.conv, s.algo, s.workspace, s.bytes, &beta, s.y, out), "convolution");
    int blocks = (int)((12845056LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(u6_0, out, 12845056LL);
}
}  // namespace ks_tail6

namespace ks_tail7 {

struct MaxSum { float m, s; };
__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
    float m = fmaxf(a.m, b.m);
    float s = (a.m == -INFINITY ? 0.f : a.s * __expf(a.m - m)) + (b.m == -INFINITY ? 0.f : b.s * __expf(b.m - m));
    return {m, s};
}
template <typename T, typename F> __device__ T block_reduce(T v, F f) {
    __shared__ T shared[32];
    for (int o = 16; o > 0; o >>= 1) {
        T other;
        if constexpr (sizeof(T) == sizeof(float)) { other = __shfl_xor_sync(0xffffffff, v, o); }
        else { other = {__shfl_xor_sync(0xffffffff, v.m, o), __shfl_xor_sync(0xffffffff, v.s, o)}; }
        v = f(v, other);
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    int warps = (blockDim.x + 31) >> 5;
    v = shared[lane < warps ? lane : 0];
    if (warp == 0) {
        for (int o = 16; o > 0; o >>= 1) {
            T other;
            if constexpr (sizeof(T) == sizeof(float)) { other = __shfl_xor_sync(0xffffffff, v, o); }
            else { other = {__shfl_xor_sync(0xffffffff, v.m, o), __shfl_xor_sync(0xffffffff, v.s, o)}; }
            if (lane < warps && (lane ^ o) < warps) v = f(v, other);
        }
        if (lane == 0) shared[0] = v;
    }
    __syncthreads();
    T out = shared[0];
    __syncthreads();
    return out;
}
__device__ __forceinline__ float pre_op(float LOAD_u7_0) {
    const float pre = LOAD_u7_0;
    return pre;
}
__device__ __forceinline__ float epi_op(float ROW) {
    const float v_feature_extractor_1_5 = fmaxf(ROW, 0.0f);
    const float result = v_feature_extractor_1_5;
    return result;
}

__global__ void batch_norm_kernel(const float* __restrict__ u7_0, const float* __restrict__ u7_1, const float* __restrict__ u7_2, const float* __restrict__ u7_3, const float* __restrict__ u7_4, float* __restrict__ out, bool training) {
    const int64_t c = blockIdx.x;  // one block per channel
    float mean = 0.f, rstd = 1.f;
    if (training) { float s = 0.f, q = 0.f;
        for (int64_t r = threadIdx.x; r < 100352LL; r += BLOCK) { const float v = pre_op(u7_0[((r) / 12544LL * 128LL + (c)) * 12544LL + (r) % 12544LL]); s += v; q += v * v; }
        s = block_reduce(s, [](float a, float b) { return a + b; });
        q = block_reduce(q, [](float a, float b) { return a + b; });
        mean = s / 100352.0f;
        const float var = fmaxf(q / 100352.0f - mean * mean, 0.f);
        rstd = rsqrtf(var + 1e-05f);
        if (training && threadIdx.x == 0) { float* rm = const_cast<float*>(u7_3); float* rv = const_cast<float*>(u7_4);
            rm[c] = 0.9f * rm[c] + 0.1f * mean;
            rv[c] = 0.9f * rv[c] + 0.1f * var * (100352.0f / 100351.0f); } } else { mean = u7_3[c]; rstd = 1.0f / sqrtf(u7_4[c] + 1e-05f); }
    for (int64_t r = threadIdx.x; r < 100352LL; r += BLOCK) {
        const int64_t k = ((r) / 12544LL * 128LL + (c)) * 12544LL + (r) % 12544LL;
        float t = (pre_op(u7_0[k]) - mean) * rstd; t = t * u7_1[c] + u7_2[c];
        out[k] = epi_op(t);
    }
}
void launch_fused(const float* u7_0, const float* u7_1, const float* u7_2, const float* u7_3, const float* u7_4, float* out, int64_t channels, bool training,
                  cudaStream_t stream) {
    batch_norm_kernel<<<(unsigned)channels, BLOCK, 0, stream>>>(u7_0, u7_1, u7_2, u7_3, u7_4, out, training);
}
}  // namespace ks_tail7

namespace ks_tail8 {
__device__ __forceinline__ float pre_op(float LOAD_u8_0) {
    const float pre = LOAD_u8_0;
    return pre;
}
__device__ __forceinline__ float epi_op(float POOL) {
    const float result = POOL;
    return result;
}

__global__ void pool_kernel(const float* __restrict__ x, float* __restrict__ out) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < 3211264LL; i += (int64_t)gridDim.x * BLOCK) {
        const int64_t ow = i % 56LL, oh = (i / 56LL) % 56LL, od = (i / 3136LL) % 1LL;
        const float* xc = x + (i / 3136LL) * 12544LL;
        float acc = -INFINITY;
        for (int64_t a = 0; a < 1; ++a) {
            const int64_t id = od * 1 - 0 + a * 1; if (id < 0 || id >= 1) continue;
            for (int64_t bb = 0; bb < 2; ++bb) {
                const int64_t ih = oh * 2 - 0 + bb * 1; if (ih < 0 || ih >= 112) continue;
                for (int64_t c = 0; c < 2; ++c) {
                    const int64_t iw = ow * 2 - 0 + c * 1; if (iw < 0 || iw >= 112) continue;
                    const float v = pre_op(xc[(id * 112 + ih) * 112LL + iw]); acc = fmaxf(acc, v);
                }
            }
        }
        const float pooled = acc;
        out[i] = epi_op(pooled);
    }
}
void launch_fused(const float* x, float* out, cudaStream_t stream) {
    int blocks = (int)((3211264LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    pool_kernel<<<blocks, BLOCK, 0, stream>>>(x, out);
}
}  // namespace ks_tail8

namespace ks_tail9 {
__device__ __forceinline__ float epi_op(float acc, float LOAD_u9_0) {
    const float result = (acc + LOAD_u9_0);
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ u9_0, float* __restrict__ out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], u9_0[((i / 3136LL) % 256LL)]);
}

// cuDNN is opened at run time, never linked: the library and its parts (ops, cnn, engines) come from the folder of
// the cuDNN torch loaded, in the order that keeps a system-wide cuDNN of another version out of the process
// (two versions in one process crash it).
#define KS_CUDNN_API(X) X(cudnnCreate) X(cudnnSetStream) X(cudnnGetErrorString) X(cudnnCreateTensorDescriptor) \
    X(cudnnCreateFilterDescriptor) X(cudnnCreateConvolutionDescriptor) X(cudnnSetTensorNdDescriptor) \
    X(cudnnSetFilterNdDescriptor) X(cudnnSetConvolutionNdDescriptor) X(cudnnSetConvolutionGroupCount) \
    X(cudnnSetConvolutionMathType) X(cudnnGetConvolutionForwardAlgorithm_v7) \
    X(cudnnGetConvolutionForwardWorkspaceSize) X(cudnnConvolutionForward) \
    X(cudnnGetConvolutionBackwardDataAlgorithm_v7) X(cudnnGetConvolutionBackwardDataWorkspaceSize) \
    X(cudnnConvolutionBackwardData) X(cudnnFindConvolutionForwardAlgorithm) X(cudnnFindConvolutionBackwardDataAlgorithm)
struct CudnnApi {
#define KS_FIELD(f) decltype(&::f) f = nullptr;
    KS_CUDNN_API(KS_FIELD)
#undef KS_FIELD
};

static std::string loaded_folder(const char* soname) {
    void* handle = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
    char origin[4096];
    if (!handle || dlinfo(handle, RTLD_DI_ORIGIN, origin) != 0) return "";
    return std::string(origin) + "/";
}

static const CudnnApi& cudnn() {
    static CudnnApi api;
    static bool loaded = false;
    if (loaded) return api;
    const std::string major = ".so." + std::to_string(CUDNN_MAJOR);
    std::string dir = loaded_folder(("libcudnn_graph" + major).c_str());
    if (dir.empty()) dir = loaded_folder(("libcudnn" + major).c_str());
    for (const char* part : {"graph", "engines_runtime_compiled", "engines_precompiled", "heuristic", "ops", "cnn", "adv"})
        dlopen((dir + "libcudnn_" + part + major).c_str(), RTLD_NOW | RTLD_GLOBAL);
    void* lib = dlopen((dir + "libcudnn" + major).c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!lib) throw std::runtime_error(std::string("cuDNN could not be opened: ") + dlerror());
#define KS_LOAD(f) api.f = (decltype(&::f))dlsym(lib, #f); \
    if (!api.f) throw std::runtime_error("cuDNN lacks " #f);
    KS_CUDNN_API(KS_LOAD)
#undef KS_LOAD
    loaded = true;
    return api;
}

static void check(cudnnStatus_t status, const char* what) {
    if (status != CUDNN_STATUS_SUCCESS)
        throw std::runtime_error(std::string("cuDNN ") + what + " failed: " + cudnn().cudnnGetErrorString(status));
}

template <typename Perf> static const Perf& pick(const Perf* perf, int found) {
    // Ranked fastest first: measured once at the first call (as torch.backends.cudnn.benchmark does), or by
    // cuDNN's heuristics where measuring failed (short of memory). Take the first usable.
    for (int i = 0; i < found; ++i) if (perf[i].status == CUDNN_STATUS_SUCCESS) return perf[i];
    throw std::runtime_error("cuDNN has no algorithm for this convolution");
}

struct ConvState {
    cudnnHandle_t handle = nullptr;
    cudnnTensorDescriptor_t x, y;  // the x and y of cuDNN's terms
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    cudnnConvolutionFwdAlgo_t algo;
    size_t bytes = 0;
    void* workspace = nullptr;
};

static ConvState& state(cudaStream_t stream) {
    // Descriptors, the algorithm and its workspace are made once per process: the shapes are fixed.
    static ConvState s;
    if (!s.handle) {
        cudnnHandle_t h;
        check(cudnn().cudnnCreate(&h), "create");
        check(cudnn().cudnnSetStream(h, stream), "set stream");
        const int in_dims[] = {8, 128, 56, 56}, in_strides[] = {401408, 3136, 56, 1};
        const int out_dims[] = {8, 256, 56, 56}, out_strides[] = {802816, 3136, 56, 1};
        const int w_dims[] = {256, 128, 3, 3};
        const int pad[] = {1, 1}, stride[] = {1, 1}, dilation[] = {1, 1};
        check(cudnn().cudnnCreateTensorDescriptor(&s.x), "tensor descriptor");
        check(cudnn().cudnnCreateTensorDescriptor(&s.y), "tensor descriptor");
        check(cudnn().cudnnCreateFilterDescriptor(&s.w), "filter descriptor");
        check(cudnn().cudnnCreateConvolutionDescriptor(&s.conv), "convolution descriptor");
        check(cudnn().cudnnSetTensorNdDescriptor(s.x, CUDNN_DATA_FLOAT, 4, in_dims, in_strides), "input shape");
        check(cudnn().cudnnSetTensorNdDescriptor(s.y, CUDNN_DATA_FLOAT, 4, out_dims, out_strides), "output shape");
        check(cudnn().cudnnSetFilterNdDescriptor(s.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, w_dims), "weight shape");
        check(cudnn().cudnnSetConvolutionNdDescriptor(s.conv, 2, pad, stride, dilation, CUDNN_CROSS_CORRELATION,
                                              CUDNN_DATA_FLOAT), "geometry");
        check(cudnn().cudnnSetConvolutionGroupCount(s.conv, 1), "groups");
        // The default math lets cuDNN use TF32 tensor cores for float data, as PyTorch does by default.
        check(cudnn().cudnnSetConvolutionMathType(s.conv, CUDNN_DEFAULT_MATH), "math type");
        cudnnConvolutionFwdAlgoPerf_t perf[8]; int found = 0;
        if (cudnn().cudnnFindConvolutionForwardAlgorithm(h, s.x, s.w, s.conv, s.y, 8, &found, perf) != CUDNN_STATUS_SUCCESS || !found)
            check(cudnn().cudnnGetConvolutionForwardAlgorithm_v7(h, s.x, s.w, s.conv, s.y, 8, &found, perf), "find");
        const auto& best = pick(perf, found);
        check(cudnn().cudnnSetConvolutionMathType(s.conv, best.mathType), "math type");
        check(cudnn().cudnnGetConvolutionForwardWorkspaceSize(h, s.x, s.w, s.conv, s.y, best.algo, &s.bytes), "workspace");
        s.algo = best.algo;
        if (s.bytes && cudaMalloc(&s.workspace, s.bytes) != cudaSuccess) throw std::runtime_error("cuDNN workspace: out of memory");
        s.handle = h;
    }
    check(cudnn().cudnnSetStream(s.handle, stream), "set stream");
    return s;
}

void launch_fused(const float* x, const float* w, const float* __restrict__ u9_0, float* out, cudaStream_t stream) {
    ConvState& s = state(stream);
    cudnnHandle_t h = s.handle;
    const float alpha = 1.0f, beta = 0.0f;
    check(cudnn().cudnnConvolutionForward(h, &alpha, s.x, x, s.w, w, s.conv, s.algo, s.workspace, s.bytes, &beta, s.y, out), "convolution");
    int blocks = (int)((6422528LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(u9_0, out, 6422528LL);
}
}  // namespace ks_tail9

namespace ks_tail10 {

struct MaxSum { float m, s; };
__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
    float m = fmaxf(a.m, b.m);
    float s = (a.m == -INFINITY ? 0.f : a.s * __expf(a.m - m)) + (b.m == -INFINITY ? 0.f : b.s * __expf(b.m - m));
    return {m, s};
}
template <typename T, typename F> __device__ T block_reduce(T v, F f) {
    __shared__ T shared[32];
    for (int o = 16; o > 0; o >>= 1) {
        T other;
        if constexpr (sizeof(T) == sizeof(float)) { other = __shfl_xor_sync(0xffffffff, v, o); }
        else { other = {__shfl_xor_sync(0xffffffff, v.m, o), __shfl_xor_sync(0xffffffff, v.s, o)}; }
        v = f(v, other);
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    int warps = (blockDim.x + 31) >> 5;
    v = shared[lane < warps ? lane : 0];
    if (warp == 0) {
        for (int o = 16; o > 0; o >>= 1) {
            T other;
            if constexpr (sizeof(T) == sizeof(float)) { other = __shfl_xor_sync(0xffffffff, v, o); }
            else { other = {__shfl_xor_sync(0xffffffff, v.m, o), __shfl_xor_sync(0xffffffff, v.s, o)}; }
            if (lane < warps && (lane ^ o) < warps) v = f(v, other);
        }
        if (lane == 0) shared[0] = v;
    }
    __syncthreads();
    T out = shared[0];
    __syncthreads();
    return out;
}
__device__ __forceinline__ float pre_op(float LOAD_u10_0) {
    const float pre = LOAD_u10_0;
    return pre;
}
__device__ __forceinline__ float epi_op(float ROW) {
    const float v_feature_extractor_2_2 = fmaxf(ROW, 0.0f);
    const float result = v_feature_extractor_2_2;
    return result;
}

__global__ void batch_norm_kernel(const float* __restrict__ u10_0, const float* __restrict__ u10_1, const float* __restrict__ u10_2, const float* __restrict__ u10_3, const float* __restrict__ u10_4, float* __restrict__ out, bool training) {
    const int64_t c = blockIdx.x;  // one block per channel
    float mean = 0.f, rstd = 1.f;
    if (training) { float s = 0.f, q = 0.f;
        for (int64_t r = threadIdx.x; r < 25088LL; r += BLOCK) { const float v = pre_op(u10_0[((r) / 3136LL * 256LL + (c)) * 3136LL + (r) % 3136LL]); s += v; q += v * v; }
        s = block_reduce(s, [](float a, float b) { return a + b; });
        q = block_reduce(q, [](float a, float b) { return a + b; });
        mean = s / 25088.0f;
        const float var = fmaxf(q / 25088.0f - mean * mean, 0.f);
        rstd = rsqrtf(var + 1e-05f);
        if (training && threadIdx.x == 0) { float* rm = const_cast<float*>(u10_3); float* rv = const_cast<float*>(u10_4);
            rm[c] = 0.9f * rm[c] + 0.1f * mean;
            rv[c] = 0.9f * rv[c] + 0.1f * var * (25088.0f / 25087.0f); } } else { mean = u10_3[c]; rstd = 1.0f / sqrtf(u10_4[c] + 1e-05f); }
    for (int64_t r = threadIdx.x; r < 25088LL; r += BLOCK) {
        const int64_t k = ((r) / 3136LL * 256LL + (c)) * 3136LL + (r) % 3136LL;
        float t = (pre_op(u10_0[k]) - mean) * rstd; t = t * u10_1[c] + u10_2[c];
        out[k] = epi_op(t);
    }
}
void launch_fused(const float* u10_0, const float* u10_1, const float* u10_2, const float* u10_3, const float* u10_4, float* out, int64_t channels, bool training,
                  cudaStream_t stream) {
    batch_norm_kernel<<<(unsigned)channels, BLOCK, 0, stream>>>(u10_0, u10_1, u10_2, u10_3, u10_4, out, training);
}
}  // namespace ks_tail10

namespace ks_tail11 {
__device__ __forceinline__ float epi_op(float acc, float LOAD_u11_0) {
    const float result = (acc + LOAD_u11_0);
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ u11_0, float* __restrict__ out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], u11_0[((i / 3136LL) % 256LL)]);
}

// cuDNN is opened at run time, never linked: the library and its parts (ops, cnn, engines) come from the folder of
// the cuDNN torch loaded, in the order that keeps a system-wide cuDNN of another version out of the process
// (two versions in one process crash it).
#define KS_CUDNN_API(X) X(cudnnCreate) X(cudnnSetStream) X(cudnnGetErrorString) X(cudnnCreateTensorDescriptor) \
    X(cudnnCreateFilterDescriptor) X(cudnnCreateConvolutionDescriptor) X(cudnnSetTensorNdDescriptor) \
    X(cudnnSetFilterNdDescriptor) X(cudnnSetConvolutionNdDescriptor) X(cudnnSetConvolutionGroupCount) \
    X(cudnnSetConvolutionMathType) X(cudnnGetConvolutionForwardAlgorithm_v7) \
    X(cudnnGetConvolutionForwardWorkspaceSize) X(cudnnConvolutionForward) \
    X(cudnnGetConvolutionBackwardDataAlgorithm_v7) X(cudnnGetConvolutionBackwardDataWorkspaceSize) \
    X(cudnnConvolutionBackwardData) X(cudnnFindConvolutionForwardAlgorithm) X(cudnnFindConvolutionBackwardDataAlgorithm)
struct CudnnApi {
#define KS_FIELD(f) decltype(&::f) f = nullptr;
    KS_CUDNN_API(KS_FIELD)
#undef KS_FIELD
};

static std::string loaded_folder(const char* soname) {
    void* handle = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
    char origin[4096];
    if (!handle || dlinfo(handle, RTLD_DI_ORIGIN, origin) != 0) return "";
    return std::string(origin) + "/";
}

static const CudnnApi& cudnn() {
    static CudnnApi api;
    static bool loaded = false;
    if (loaded) return api;
    const std::string major = ".so." + std::to_string(CUDNN_MAJOR);
    std::string dir = loaded_folder(("libcudnn_graph" + major).c_str());
    if (dir.empty()) dir = loaded_folder(("libcudnn" + major).c_str());
    for (const char* part : {"graph", "engines_runtime_compiled", "engines_precompiled", "heuristic", "ops", "cnn", "adv"})
        dlopen((dir + "libcudnn_" + part + major).c_str(), RTLD_NOW | RTLD_GLOBAL);
    void* lib = dlopen((dir + "libcudnn" + major).c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!lib) throw std::runtime_error(std::string("cuDNN could not be opened: ") + dlerror());
#define KS_LOAD(f) api.f = (decltype(&::f))dlsym(lib, #f); \
    if (!api.f) throw std::runtime_error("cuDNN lacks " #f);
    KS_CUDNN_API(KS_LOAD)
#undef KS_LOAD
    loaded = true;
    return api;
}

static void check(cudnnStatus_t status, const char* what) {
    if (status != CUDNN_STATUS_SUCCESS)
        throw std::runtime_error(std::string("cuDNN ") + what + " failed: " + cudnn().cudnnGetErrorString(status));
}

template <typename Perf> static const Perf& pick(const Perf* perf, int found) {
    // Ranked fastest first: measured once at the first call (as torch.backends.cudnn.benchmark does), or by
    // cuDNN's heuristics where measuring failed (short of memory). Take the first usable.
    for (int i = 0; i < found; ++i) if (perf[i].status == CUDNN_STATUS_SUCCESS) return perf[i];
    throw std::runtime_error("cuDNN has no algorithm for this convolution");
}

struct ConvState {
    cudnnHandle_t handle = nullptr;
    cudnnTensorDescriptor_t x, y;  // the x and y of cuDNN's terms
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    cudnnConvolutionFwdAlgo_t algo;
    size_t bytes = 0;
    void* workspace = nullptr;
};

static ConvState& state(cudaStream_t stream) {
    // Descriptors, the algorithm and its workspace are made once per process: the shapes are fixed.
    static ConvState s;
    if (!s.handle) {
        cudnnHandle_t h;
        check(cudnn().cudnnCreate(&h), "create");
        check(cudnn().cudnnSetStream(h, stream), "set stream");
        const int in_dims[] = {8, 256, 56, 56}, in_strides[] = {802816, 3136, 56, 1};
        const int out_dims[] = {8, 256, 56, 56}, out_strides[] = {802816, 3136, 56, 1};
        const int w_dims[] = {256, 256, 3, 3};
        const int pad[] = {1, 1}, stride[] = {1, 1}, dilation[] = {1, 1};
        check(cudnn().cudnnCreateTensorDescriptor(&s.x), "tensor descriptor");
        check(cudnn().cudnnCreateTensorDescriptor(&s.y), "tensor descriptor");
        check(cudnn().cudnnCreateFilterDescriptor(&s.w), "filter descriptor");
        check(cudnn().cudnnCreateConvolutionDescriptor(&s.conv), "convolution descriptor");
        check(cudnn().cudnnSetTensorNdDescriptor(s.x, CUDNN_DATA_FLOAT, 4, in_dims, in_strides), "input shape");
        check(cudnn().cudnnSetTensorNdDescriptor(s.y, CUDNN_DATA_FLOAT, 4, out_dims, out_strides), "output shape");
        check(cudnn().cudnnSetFilterNdDescriptor(s.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, w_dims), "weight shape");
        check(cudnn().cudnnSetConvolutionNdDescriptor(s.conv, 2, pad, stride, dilation, CUDNN_CROSS_CORRELATION,
                                              CUDNN_DATA_FLOAT), "geometry");
        check(cudnn().cudnnSetConvolutionGroupCount(s.conv, 1), "groups");
        // The default math lets cuDNN use TF32 tensor cores for float data, as PyTorch does by default.
        check(cudnn().cudnnSetConvolutionMathType(s.conv, CUDNN_DEFAULT_MATH), "math type");
        cudnnConvolutionFwdAlgoPerf_t perf[8]; int found = 0;
        if (cudnn().cudnnFindConvolutionForwardAlgorithm(h, s.x, s.w, s.conv, s.y, 8, &found, perf) != CUDNN_STATUS_SUCCESS || !found)
            check(cudnn().cudnnGetConvolutionForwardAlgorithm_v7(h, s.x, s.w, s.conv, s.y, 8, &found, perf), "find");
        const auto& best = pick(perf, found);
        check(cudnn().cudnnSetConvolutionMathType(s.conv, best.mathType), "math type");
        check(cudnn().cudnnGetConvolutionForwardWorkspaceSize(h, s.x, s.w, s.conv, s.y, best.algo, &s.bytes), "workspace");
        s.algo = best.algo;
        if (s.bytes && cudaMalloc(&s.workspace, s.bytes) != cudaSuccess) throw std::runtime_error("cuDNN workspace: out of memory");
        s.handle = h;
    }
    check(cudnn().cudnnSetStream(s.handle, stream), "set stream");
    return s;
}

void launch_fused(const float* x, const float* w, const float* __restrict__ u11_0, float* out, cudaStream_t stream) {
    ConvState& s = state(stream);
    cudnnHandle_t h = s.handle;
    const float alpha = 1.0f, beta = 0.0f;
    check(cudnn().cudnnConvolutionForward(h, &alpha, s.x, x, s.w, w, s.conv, s.algo, s.workspace, s.bytes, &beta, s.y, out), "convolution");
    int blocks = (int)((6422528LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(u11_0, out, 6422528LL);
}
}  // namespace ks_tail11

namespace ks_tail12 {

struct MaxSum { float m, s; };
__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
    float m = fmaxf(a.m, b.m);
    float s = (a.m == -INFINITY ? 0.f : a.s * __expf(a.m - m)) + (b.m == -INFINITY ? 0.f : b.s * __expf(b.m - m));
    return {m, s};
}
template <typename T, typename F> __device__ T block_reduce(T v, F f) {
    __shared__ T shared[32];
    for (int o = 16; o > 0; o >>= 1) {
        T other;
        if constexpr (sizeof(T) == sizeof(float)) { other = __shfl_xor_sync(0xffffffff, v, o); }
        else { other = {__shfl_xor_sync(0xffffffff, v.m, o), __shfl_xor_sync(0xffffffff, v.s, o)}; }
        v = f(v, other);
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    int warps = (blockDim.x + 31) >> 5;
    v = shared[lane < warps ? lane : 0];
    if (warp == 0) {
        for (int o = 16; o > 0; o >>= 1) {
            T other;
            if constexpr (sizeof(T) == sizeof(float)) { other = __shfl_xor_sync(0xffffffff, v, o); }
            else { other = {__shfl_xor_sync(0xffffffff, v.m, o), __shfl_xor_sync(0xffffffff, v.s, o)}; }
            if (lane < warps && (lane ^ o) < warps) v = f(v, other);
        }
        if (lane == 0) shared[0] = v;
    }
    __syncthreads();
    T out = shared[0];
    __syncthreads();
    return out;
}
__device__ __forceinline__ float pre_op(float LOAD_u12_0) {
    const float pre = LOAD_u12_0;
    return pre;
}
__device__ __forceinline__ float epi_op(float ROW) {
    const float v_feature_extractor_2_5 = fmaxf(ROW, 0.0f);
    const float result = v_feature_extractor_2_5;
    return result;
}

__global__ void batch_norm_kernel(const float* __restrict__ u12_0, const float* __restrict__ u12_1, const float* __restrict__ u12_2, const float* __restrict__ u12_3, const float* __restrict__ u12_4, float* __restrict__ out, bool training) {
    const int64_t c = blockIdx.x;  // one block per channel
    float mean = 0.f, rstd = 1.f;
    if (training) { float s = 0.f, q = 0.f;
        for (int64_t r = threadIdx.x; r < 25088LL; r += BLOCK) { const float v = pre_op(u12_0[((r) / 3136LL * 256LL + (c)) * 3136LL + (r) % 3136LL]); s += v; q += v * v; }
        s = block_reduce(s, [](float a, float b) { return a + b; });
        q = block_reduce(q, [](float a, float b) { return a + b; });
        mean = s / 25088.0f;
        const float var = fmaxf(q / 25088.0f - mean * mean, 0.f);
        rstd = rsqrtf(var + 1e-05f);
        if (training && threadIdx.x == 0) { float* rm = const_cast<float*>(u12_3); float* rv = const_cast<float*>(u12_4);
            rm[c] = 0.9f * rm[c] + 0.1f * mean;
            rv[c] = 0.9f * rv[c] + 0.1f * var * (25088.0f / 25087.0f); } } else { mean = u12_3[c]; rstd = 1.0f / sqrtf(u12_4[c] + 1e-05f); }
    for (int64_t r = threadIdx.x; r < 25088LL; r += BLOCK) {
        const int64_t k = ((r) / 3136LL * 256LL + (c)) * 3136LL + (r) % 3136LL;
        float t = (pre_op(u12_0[k]) - mean) * rstd; t = t * u12_1[c] + u12_2[c];
        out[k] = epi_op(t);
    }
}
void launch_fused(const float* u12_0, const float* u12_1, const float* u12_2, const float* u12_3, const float* u12_4, float* out, int64_t channels, bool training,
                  cudaStream_t stream) {
    batch_norm_kernel<<<(unsigned)channels, BLOCK, 0, stream>>>(u12_0, u12_1, u12_2, u12_3, u12_4, out, training);
}
}  // namespace ks_tail12

namespace ks_tail13 {
__device__ __forceinline__ float pre_op(float LOAD_u13_0) {
    const float pre = LOAD_u13_0;
    return pre;
}
__device__ __forceinline__ float epi_op(float POOL) {
    const float result = POOL;
    return result;
}

__global__ void pool_kernel(const float* __restrict__ x, float* __restrict__ out) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < 1605632LL; i += (int64_t)gridDim.x * BLOCK) {
        const int64_t ow = i % 28LL, oh = (i / 28LL) % 28LL, od = (i / 784LL) % 1LL;
        const float* xc = x + (i / 784LL) * 3136LL;
        float acc = -INFINITY;
        for (int64_t a = 0; a < 1; ++a) {
            const int64_t id = od * 1 - 0 + a * 1; if (id < 0 || id >= 1) continue;
            for (int64_t bb = 0; bb < 2; ++bb) {
                const int64_t ih = oh * 2 - 0 + bb * 1; if (ih < 0 || ih >= 56) continue;
                for (int64_t c = 0; c < 2; ++c) {
                    const int64_t iw = ow * 2 - 0 + c * 1; if (iw < 0 || iw >= 56) continue;
                    const float v = pre_op(xc[(id * 56 + ih) * 56LL + iw]); acc = fmaxf(acc, v);
                }
            }
        }
        const float pooled = acc;
        out[i] = epi_op(pooled);
    }
}
void launch_fused(const float* x, float* out, cudaStream_t stream) {
    int blocks = (int)((1605632LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    pool_kernel<<<blocks, BLOCK, 0, stream>>>(x, out);
}
}  // namespace ks_tail13

namespace ks_tail14 {

struct MaxSum { float m, s; };
__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
    float m = fmaxf(a.m, b.m);
    float s = (a.m == -INFINITY ? 0.f : a.s * __expf(a.m - m)) + (b.m == -INFINITY ? 0.f : b.s * __expf(b.m - m));
    return {m, s};
}
template <typename T, typename F> __device__ T block_reduce(T v, F f) {
    __shared__ T shared[32];
    for (int o = 16; o > 0; o >>= 1) {
        T other;
        if constexpr (sizeof(T) == sizeof(float)) { other = __shfl_xor_sync(0xffffffff, v, o); }
        else { other = {__shfl_xor_sync(0xffffffff, v.m, o), __shfl_xor_sync(0xffffffff, v.s, o)}; }
        v = f(v, other);
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    int warps = (blockDim.x + 31) >> 5;
    v = shared[lane < warps ? lane : 0];
    if (warp == 0) {
        for (int o = 16; o > 0; o >>= 1) {
            T other;
            if constexpr (sizeof(T) == sizeof(float)) { other = __shfl_xor_sync(0xffffffff, v, o); }
            else { other = {__shfl_xor_sync(0xffffffff, v.m, o), __shfl_xor_sync(0xffffffff, v.s, o)}; }
            if (lane < warps && (lane ^ o) < warps) v = f(v, other);
        }
        if (lane == 0) shared[0] = v;
    }
    __syncthreads();
    T out = shared[0];
    __syncthreads();
    return out;
}
__device__ __forceinline__ float pre_op(float LOAD_u14_0) {
    const float pre = LOAD_u14_0;
    return pre;
}
__device__ __forceinline__ float epi_op(float ROW) {
    const float result = ROW;
    return result;
}

__global__ void row_kernel(const float* __restrict__ u14_0_all, float* __restrict__ out) {
    const int64_t R = 784LL;
    const int64_t row = blockIdx.x;
    const float* x = u14_0_all + row * R;
    float* y = out + row * R;
    (void)y;
    float acc = 0.f;
    for (int64_t r = threadIdx.x; r < R; r += BLOCK) { const float v = pre_op(x[r]); acc += v; }
    acc = block_reduce(acc, [](float a, float b) { return a + b; });
    if (threadIdx.x == 0) out[row] = epi_op(acc / 784.f);
}
void launch_fused(const float* u14_0, float* out, int64_t outer, cudaStream_t stream) {
    row_kernel<<<(unsigned)outer, BLOCK, 0, stream>>>(u14_0, out);
}
}  // namespace ks_tail14

namespace ks_tail15 {
__device__ __forceinline__ float epi_op(float acc, float LOAD_u15_1) {
    const float result = (acc + LOAD_u15_1);
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ u15_1, float* __restrict__ out, int64_t total) {
    const int64_t N = 10LL;
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < total; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], u15_1[i % N]);
}

static cublasHandle_t handle() {
    // One handle per process: creating one per call costs more than a small GEMM.
    static cublasHandle_t h = nullptr;
    if (!h && cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate failed");
    return h;
}

void launch_fused(const float* x, const float* w, const float* __restrict__ u15_1, float* out, cudaStream_t stream) {
    cublasHandle_t h = handle();
    cublasSetStream(h, stream);
    const float alpha = 1.0f, beta = 0.0f;
    cublasStatus_t status = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 10, 8, 256, &alpha, w, CUDA_R_32F, 256, x, CUDA_R_32F, 256, &beta, out, CUDA_R_32F, 10, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
    if (status != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cuBLAS GEMM failed: " + std::to_string((int)status));
    int blocks = (int)((80LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(u15_1, out, 80LL);
}
}  // namespace ks_tail15
''',
    'model_new.py': r'''"""Written by Kernel Studio's heuristic policy: Conv2d (8x3x224x224 -> 8x64x224x224) with 1 operator(s) fused after it, then one row-wise batch_norm kernel (rows of 401408), then Conv2d (8x64x224x224 -> 8x64x224x224) with 1 operator(s) fused after it, then one row-wise batch_norm kernel (rows of 401408), then one max pool kernel (2x2 windows), then Conv2d (8x64x112x112 -> 8x128x112x112) with 1 operator(s) fused after it, then one row-wise batch_norm kernel (rows of 100352), then Conv2d (8x128x112x112 -> 8x128x112x112) with 1 operator(s) fused after it, then one row-wise batch_norm kernel (rows of 100352), then one max pool kernel (2x2 windows), then Conv2d (8x128x56x56 -> 8x256x56x56) with 1 operator(s) fused after it, then one row-wise batch_norm kernel (rows of 25088), then Conv2d (8x256x56x56 -> 8x256x56x56) with 1 operator(s) fused after it, then one row-wise batch_norm kernel (rows of 25088), then one max pool kernel (2x2 windows), then one row-wise mean kernel (rows of 784), then GEMM (8x256 by 256x10) with 0 operator(s) fused after it."""
import torch
import torch.nn as nn

from sandbox.native import load_extension

def _load_cudnn_parts():
    import ctypes, glob, os
    torch.backends.cudnn.version()  # torch's own cuDNN, loaded first
    try:
        import nvidia.cudnn
        folders = [os.path.join(path, "lib") for path in nvidia.cudnn.__path__]
    except ImportError:
        return
    for folder in folders:
        for part in ("graph", "engines_runtime_compiled", "engines_precompiled", "heuristic", "ops", "cnn", "adv", ""):
            for library in sorted(glob.glob(os.path.join(folder, f"libcudnn{'_' + part if part else ''}.so.*"))):
                ctypes.CDLL(library, mode=ctypes.RTLD_GLOBAL)


_load_cudnn_parts()

ops = load_extension(__file__)

# The reference module, used only to create the same parameters with the same initialization.
PROBLEM_SOURCE = 'import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\nclass Model(nn.Module):\n    def __init__(self, input_channels, stages, block_widths, output_classes):\n        """\n        :param input_channels: int, Number of input channels for the first layer\n        :param stages: int, Number of stages in the RegNet architecture\n        :param block_widths: List[int], Width (number of channels) for each block in the stages\n        :param output_classes: int, Number of output classes for classification\n        """\n        super(Model, self).__init__()\n\n        self.stages = stages\n        self.block_widths = block_widths\n        \n        layers = []\n        current_channels = input_channels\n        \n        # Construct the stages with their respective blocks\n        for i in range(stages):\n            layers.append(self._make_stage(current_channels, block_widths[i]))\n            current_channels = block_widths[i]\n        \n        self.feature_extractor = nn.Sequential(*layers)\n        \n        # Final fully connected layer for classification\n        self.fc = nn.Linear(block_widths[-1], output_classes)\n    \n    def _make_stage(self, in_channels, out_channels):\n        """\n        Creates a simple block for each stage.\n        :param in_channels: int, number of input channels\n        :param out_channels: int, number of output channels\n        :return: nn.Sequential block with convolutional layers\n        """\n        return nn.Sequential(\n            nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1),\n            nn.BatchNorm2d(out_channels),\n            nn.ReLU(),\n            nn.Conv2d(out_channels, out_channels, kernel_size=3, padding=1),\n            nn.BatchNorm2d(out_channels),\n            nn.ReLU(),\n            nn.MaxPool2d(kernel_size=2, stride=2)\n        )\n\n    def forward(self, x):\n        """\n        Forward pass through the RegNet model.\n        :param x: torch.Tensor of shape (batch_size, input_channels, height, width)\n        :return: torch.Tensor of shape (batch_size, output_classes)\n        """\n        x = self.feature_extractor(x)\n        x = torch.mean(x, dim=[2, 3])  # Global Average Pooling\n        x = self.fc(x)\n        return x\n\n# Test code for the RegNet model\nbatch_size = 8\ninput_channels = 3\nimage_height, image_width = 224, 224\nstages = 3\nblock_widths = [64, 128, 256]\noutput_classes = 10\n\ndef get_inputs():\n    """ Generates random input tensor of shape (batch_size, input_channels, height, width) """\n    return [torch.rand(batch_size, input_channels, image_height, image_width)]\n\ndef get_init_inputs():\n    """ Initializes model parameters """\n    return [input_channels, stages, block_widths, output_classes]'
_reference = {}
exec(compile(PROBLEM_SOURCE, "problem.py", "exec"), _reference)


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        reference = _reference["Model"](*args, **kwargs)
        for name, child in reference.named_children():
            self.add_module(name, child)
        for name, parameter in reference.named_parameters(recurse=False):
            self.register_parameter(name, parameter)
        for name, buffer in reference.named_buffers(recurse=False):
            self.register_buffer(name, buffer)
        # Looked up once: loading a state dict or .to(device) updates these same Parameter objects in place.
        self._ks_params = [self.get_parameter(name) for name in ['feature_extractor.0.0.weight', 'feature_extractor.0.0.bias', 'feature_extractor.0.1.weight', 'feature_extractor.0.1.bias', 'feature_extractor.0.3.weight', 'feature_extractor.0.3.bias', 'feature_extractor.0.4.weight', 'feature_extractor.0.4.bias', 'feature_extractor.1.0.weight', 'feature_extractor.1.0.bias', 'feature_extractor.1.1.weight', 'feature_extractor.1.1.bias', 'feature_extractor.1.3.weight', 'feature_extractor.1.3.bias', 'feature_extractor.1.4.weight', 'feature_extractor.1.4.bias', 'feature_extractor.2.0.weight', 'feature_extractor.2.0.bias', 'feature_extractor.2.1.weight', 'feature_extractor.2.1.bias', 'feature_extractor.2.3.weight', 'feature_extractor.2.3.bias', 'feature_extractor.2.4.weight', 'feature_extractor.2.4.bias', 'fc.weight', 'fc.bias']]

    def forward(self, *inputs):
        return ops.fused(inputs[0].contiguous(), self._ks_params[0], self._ks_params[1], self._ks_params[2], self._ks_params[3], self.get_buffer('feature_extractor.0.1.running_mean'), self.get_buffer('feature_extractor.0.1.running_var'), self._ks_params[4], self._ks_params[5], self._ks_params[6], self._ks_params[7], self.get_buffer('feature_extractor.0.4.running_mean'), self.get_buffer('feature_extractor.0.4.running_var'), self._ks_params[8], self._ks_params[9], self._ks_params[10], self._ks_params[11], self.get_buffer('feature_extractor.1.1.running_mean'), self.get_buffer('feature_extractor.1.1.running_var'), self._ks_params[12], self._ks_params[13], self._ks_params[14], self._ks_params[15], self.get_buffer('feature_extractor.1.4.running_mean'), self.get_buffer('feature_extractor.1.4.running_var'), self._ks_params[16], self._ks_params[17], self._ks_params[18], self._ks_params[19], self.get_buffer('feature_extractor.2.1.running_mean'), self.get_buffer('feature_extractor.2.1.running_var'), self._ks_params[20], self._ks_params[21], self._ks_params[22], self._ks_params[23], self.get_buffer('feature_extractor.2.4.running_mean'), self.get_buffer('feature_extractor.2.4.running_var'), self._ks_params[24], self._ks_params[25], self.training)
''',
}


def _workspace():
    digest = hashlib.sha256(json.dumps(SOURCES, sort_keys=True).encode()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / f"ks-solution-{digest}"
    for rel, text in SOURCES.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
    return folder, digest


_folder, _digest = _workspace()
_spec = importlib.util.spec_from_file_location(f"ks_model_new_{_digest}", _folder / "model_new.py")
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
ModelNew = _module.ModelNew
