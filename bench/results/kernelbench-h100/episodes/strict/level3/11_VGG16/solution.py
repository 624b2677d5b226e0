"""Kernel Studio solution of 11_VGG16.py (cuda): reward 1, 3.1450 ms, 1.08x eager

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
    'binding.cpp': r'''// Written by Kernel Studio's heuristic policy: Conv2d (10x3x224x224 -> 10x64x224x224) with 2 operator(s) fused after it, then Conv2d (10x64x224x224 -> 10x64x224x224) with 2 operator(s) fused after it, then one max pool kernel (2x2 windows), then Conv2d (10x64x112x112 -> 10x128x112x112) with 2 operator(s) fused after it, then Conv2d (10x128x112x112 -> 10x128x112x112) with 2 operator(s) fused after it, then one max pool kernel (2x2 windows), then Conv2d (10x128x56x56 -> 10x256x56x56) with 2 operator(s) fused after it, then Conv2d (10x256x56x56 -> 10x256x56x56) with 2 operator(s) fused after it, then Conv2d (10x256x56x56 -> 10x256x56x56) with 2 operator(s) fused after it, then one max pool kernel (2x2 windows), then Conv2d (10x256x28x28 -> 10x512x28x28) with 2 operator(s) fused after it, then Conv2d (10x512x28x28 -> 10x512x28x28) with 2 operator(s) fused after it, then Conv2d (10x512x28x28 -> 10x512x28x28) with 2 operator(s) fused after it, then one max pool kernel (2x2 windows), then Conv2d (10x512x14x14 -> 10x512x14x14) with 2 operator(s) fused after it, then Conv2d (10x512x14x14 -> 10x512x14x14) with 2 operator(s) fused after it, then Conv2d (10x512x14x14 -> 10x512x14x14) with 2 operator(s) fused after it, then one max pool kernel (2x2 windows), then GEMM (10x25088 by 25088x4096) with 1 operator(s) fused after it, then GEMM (10x4096 by 4096x4096) with 1 operator(s) fused after it, then GEMM (10x4096 by 4096x1000) with 0 operator(s) fused after it.
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <cuda_runtime.h>
#include <stdexcept>
#include <string>

using torch::stable::Tensor;

namespace ks_head { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }
namespace ks_tail0 { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }
namespace ks_tail1 { void launch_fused(const float*, float*, cudaStream_t); }
namespace ks_tail2 { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }
namespace ks_tail3 { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }
namespace ks_tail4 { void launch_fused(const float*, float*, cudaStream_t); }
namespace ks_tail5 { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }
namespace ks_tail6 { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }
namespace ks_tail7 { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }
namespace ks_tail8 { void launch_fused(const float*, float*, cudaStream_t); }
namespace ks_tail9 { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }
namespace ks_tail10 { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }
namespace ks_tail11 { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }
namespace ks_tail12 { void launch_fused(const float*, float*, cudaStream_t); }
namespace ks_tail13 { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }
namespace ks_tail14 { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }
namespace ks_tail15 { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }
namespace ks_tail16 { void launch_fused(const float*, float*, cudaStream_t); }
namespace ks_tail17 { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }
namespace ks_tail18 { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }
namespace ks_tail19 { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }

static void check(const Tensor& t, int64_t numel, const char* name) {
    // The kernels are specialized to the problem's shapes: refuse anything else instead of reading past it.
    if (t.numel() != numel) throw std::runtime_error(std::string(name) + ": expected " + std::to_string(numel) +
                                                     " elements, got " + std::to_string(t.numel()));
    if (!t.is_contiguous()) throw std::runtime_error(std::string(name) + " must be contiguous");
}

Tensor fused(Tensor x, Tensor w, Tensor t0, Tensor u0_w, Tensor u0_0, Tensor u2_w, Tensor u2_0, Tensor u3_w, Tensor u3_0, Tensor u5_w, Tensor u5_0, Tensor u6_w, Tensor u6_0, Tensor u7_w, Tensor u7_0, Tensor u9_w, Tensor u9_0, Tensor u10_w, Tensor u10_0, Tensor u11_w, Tensor u11_0, Tensor u13_w, Tensor u13_0, Tensor u14_w, Tensor u14_0, Tensor u15_w, Tensor u15_0, Tensor u17_w, Tensor u17_1, Tensor u18_w, Tensor u18_1, Tensor u19_w, Tensor u19_1) {
    check(x, 1505280LL, "x");
    check(w, 1728LL, "w");
    check(t0, 64LL, "t0");
    check(u0_w, 36864LL, "u0_w");
    check(u0_0, 64LL, "u0_0");
    check(u2_w, 73728LL, "u2_w");
    check(u2_0, 128LL, "u2_0");
    check(u3_w, 147456LL, "u3_w");
    check(u3_0, 128LL, "u3_0");
    check(u5_w, 294912LL, "u5_w");
    check(u5_0, 256LL, "u5_0");
    check(u6_w, 589824LL, "u6_w");
    check(u6_0, 256LL, "u6_0");
    check(u7_w, 589824LL, "u7_w");
    check(u7_0, 256LL, "u7_0");
    check(u9_w, 1179648LL, "u9_w");
    check(u9_0, 512LL, "u9_0");
    check(u10_w, 2359296LL, "u10_w");
    check(u10_0, 512LL, "u10_0");
    check(u11_w, 2359296LL, "u11_w");
    check(u11_0, 512LL, "u11_0");
    check(u13_w, 2359296LL, "u13_w");
    check(u13_0, 512LL, "u13_0");
    check(u14_w, 2359296LL, "u14_w");
    check(u14_0, 512LL, "u14_0");
    check(u15_w, 2359296LL, "u15_w");
    check(u15_0, 512LL, "u15_0");
    check(u17_w, 102760448LL, "u17_w");
    check(u17_1, 4096LL, "u17_1");
    check(u18_w, 16777216LL, "u18_w");
    check(u18_1, 4096LL, "u18_1");
    check(u19_w, 4096000LL, "u19_w");
    check(u19_1, 1000LL, "u19_1");
    Tensor mid0 = torch::stable::new_empty(x, {10, 64, 224, 224});
    Tensor mid1 = torch::stable::new_empty(x, {10, 64, 224, 224});
    Tensor mid2 = torch::stable::new_empty(x, {10, 64, 112, 112});
    Tensor mid3 = torch::stable::new_empty(x, {10, 128, 112, 112});
    Tensor mid4 = torch::stable::new_empty(x, {10, 128, 112, 112});
    Tensor mid5 = torch::stable::new_empty(x, {10, 128, 56, 56});
    Tensor mid6 = torch::stable::new_empty(x, {10, 256, 56, 56});
    Tensor mid7 = torch::stable::new_empty(x, {10, 256, 56, 56});
    Tensor mid8 = torch::stable::new_empty(x, {10, 256, 56, 56});
    Tensor mid9 = torch::stable::new_empty(x, {10, 256, 28, 28});
    Tensor mid10 = torch::stable::new_empty(x, {10, 512, 28, 28});
    Tensor mid11 = torch::stable::new_empty(x, {10, 512, 28, 28});
    Tensor mid12 = torch::stable::new_empty(x, {10, 512, 28, 28});
    Tensor mid13 = torch::stable::new_empty(x, {10, 512, 14, 14});
    Tensor mid14 = torch::stable::new_empty(x, {10, 512, 14, 14});
    Tensor mid15 = torch::stable::new_empty(x, {10, 512, 14, 14});
    Tensor mid16 = torch::stable::new_empty(x, {10, 512, 14, 14});
    Tensor mid17 = torch::stable::new_empty(x, {10, 512, 7, 7});
    Tensor mid18 = torch::stable::new_empty(x, {10, 4096});
    Tensor mid19 = torch::stable::new_empty(x, {10, 4096});
    Tensor out = torch::stable::new_empty(x, {10, 1000});
    void* stream = nullptr;
    aoti_torch_get_current_cuda_stream(x.get_device(), &stream);
    ks_head::launch_fused((const float*)x.data_ptr(), (const float*)w.data_ptr(), (const float*)t0.data_ptr(), (float*)mid0.data_ptr(), (cudaStream_t)stream);
    ks_tail0::launch_fused((const float*)mid0.data_ptr(), (const float*)u0_w.data_ptr(), (const float*)u0_0.data_ptr(), (float*)mid1.data_ptr(), (cudaStream_t)stream);
    ks_tail1::launch_fused((const float*)mid1.data_ptr(), (float*)mid2.data_ptr(), (cudaStream_t)stream);
    ks_tail2::launch_fused((const float*)mid2.data_ptr(), (const float*)u2_w.data_ptr(), (const float*)u2_0.data_ptr(), (float*)mid3.data_ptr(), (cudaStream_t)stream);
    ks_tail3::launch_fused((const float*)mid3.data_ptr(), (const float*)u3_w.data_ptr(), (const float*)u3_0.data_ptr(), (float*)mid4.data_ptr(), (cudaStream_t)stream);
    ks_tail4::launch_fused((const float*)mid4.data_ptr(), (float*)mid5.data_ptr(), (cudaStream_t)stream);
    ks_tail5::launch_fused((const float*)mid5.data_ptr(), (const float*)u5_w.data_ptr(), (const float*)u5_0.data_ptr(), (float*)mid6.data_ptr(), (cudaStream_t)stream);
    ks_tail6::launch_fused((const float*)mid6.data_ptr(), (const float*)u6_w.data_ptr(), (const float*)u6_0.data_ptr(), (float*)mid7.data_ptr(), (cudaStream_t)stream);
    ks_tail7::launch_fused((const float*)mid7.data_ptr(), (const float*)u7_w.data_ptr(), (const float*)u7_0.data_ptr(), (float*)mid8.data_ptr(), (cudaStream_t)stream);
    ks_tail8::launch_fused((const float*)mid8.data_ptr(), (float*)mid9.data_ptr(), (cudaStream_t)stream);
    ks_tail9::launch_fused((const float*)mid9.data_ptr(), (const float*)u9_w.data_ptr(), (const float*)u9_0.data_ptr(), (float*)mid10.data_ptr(), (cudaStream_t)stream);
    ks_tail10::launch_fused((const float*)mid10.data_ptr(), (const float*)u10_w.data_ptr(), (const float*)u10_0.data_ptr(), (float*)mid11.data_ptr(), (cudaStream_t)stream);
    ks_tail11::launch_fused((const float*)mid11.data_ptr(), (const float*)u11_w.data_ptr(), (const float*)u11_0.data_ptr(), (float*)mid12.data_ptr(), (cudaStream_t)stream);
    ks_tail12::launch_fused((const float*)mid12.data_ptr(), (float*)mid13.data_ptr(), (cudaStream_t)stream);
    ks_tail13::launch_fused((const float*)mid13.data_ptr(), (const float*)u13_w.data_ptr(), (const float*)u13_0.data_ptr(), (float*)mid14.data_ptr(), (cudaStream_t)stream);
    ks_tail14::launch_fused((const float*)mid14.data_ptr(), (const float*)u14_w.data_ptr(), (const float*)u14_0.data_ptr(), (float*)mid15.data_ptr(), (cudaStream_t)stream);
    ks_tail15::launch_fused((const float*)mid15.data_ptr(), (const float*)u15_w.data_ptr(), (const float*)u15_0.data_ptr(), (float*)mid16.data_ptr(), (cudaStream_t)stream);
    ks_tail16::launch_fused((const float*)mid16.data_ptr(), (float*)mid17.data_ptr(), (cudaStream_t)stream);
    ks_tail17::launch_fused((const float*)mid17.data_ptr(), (const float*)u17_w.data_ptr(), (const float*)u17_1.data_ptr(), (float*)mid18.data_ptr(), (cudaStream_t)stream);
    ks_tail18::launch_fused((const float*)mid18.data_ptr(), (const float*)u18_w.data_ptr(), (const float*)u18_1.data_ptr(), (float*)mid19.data_ptr(), (cudaStream_t)stream);
    ks_tail19::launch_fused((const float*)mid19.data_ptr(), (const float*)u19_w.data_ptr(), (const float*)u19_1.data_ptr(), (float*)out.data_ptr(), (cudaStream_t)stream);
    return out;
}

STABLE_TORCH_LIBRARY(KS_NAMESPACE, m) { m.def("fused(Tensor x, Tensor w, Tensor t0, Tensor u0_w, Tensor u0_0, Tensor u2_w, Tensor u2_0, Tensor u3_w, Tensor u3_0, Tensor u5_w, Tensor u5_0, Tensor u6_w, Tensor u6_0, Tensor u7_w, Tensor u7_0, Tensor u9_w, Tensor u9_0, Tensor u10_w, Tensor u10_0, Tensor u11_w, Tensor u11_0, Tensor u13_w, Tensor u13_0, Tensor u14_w, Tensor u14_0, Tensor u15_w, Tensor u15_0, Tensor u17_w, Tensor u17_1, Tensor u18_w, Tensor u18_1, Tensor u19_w, Tensor u19_1) -> Tensor"); }
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
    'kernels/fused.cu': r'''// Written by Kernel Studio's heuristic policy: Conv2d (10x3x224x224 -> 10x64x224x224) with 2 operator(s) fused after it, then Conv2d (10x64x224x224 -> 10x64x224x224) with 2 operator(s) fused after it, then one max pool kernel (2x2 windows), then Conv2d (10x64x112x112 -> 10x128x112x112) with 2 operator(s) fused after it, then Conv2d (10x128x112x112 -> 10x128x112x112) with 2 operator(s) fused after it, then one max pool kernel (2x2 windows), then Conv2d (10x128x56x56 -> 10x256x56x56) with 2 operator(s) fused after it, then Conv2d (10x256x56x56 -> 10x256x56x56) with 2 operator(s) fused after it, then Conv2d (10x256x56x56 -> 10x256x56x56) with 2 operator(s) fused after it, then one max pool kernel (2x2 windows), then Conv2d (10x256x28x28 -> 10x512x28x28) with 2 operator(s) fused after it, then Conv2d (10x512x28x28 -> 10x512x28x28) with 2 operator(s) fused after it, then Conv2d (10x512x28x28 -> 10x512x28x28) with 2 operator(s) fused after it, then one max pool kernel (2x2 windows), then Conv2d (10x512x14x14 -> 10x512x14x14) with 2 operator(s) fused after it, then Conv2d (10x512x14x14 -> 10x512x14x14) with 2 operator(s) fused after it, then Conv2d (10x512x14x14 -> 10x512x14x14) with 2 operator(s) fused after it, then one max pool kernel (2x2 windows), then GEMM (10x25088 by 25088x4096) with 1 operator(s) fused after it, then GEMM (10x4096 by 4096x4096) with 1 operator(s) fused after it, then GEMM (10x4096 by 4096x1000) with 0 operator(s) fused after it.
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
    const float v_features_1 = fmaxf((acc + LOAD_t0), 0.0f);
    const float result = v_features_1;
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ t0, float* __restrict__ out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], t0[((i / 50176LL) % 64LL)]);
}

// cuDNN is opened at run time, never linked: the library and its parts (ops, cnn, engines) come from the folder of
// the cuDNN the framework loaded, in the order that keeps a system-wide cuDNN of another version out of the process
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
    // Ranked fastest first: measured once at the first call (as cudnn.benchmark does in the framework), or by
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
        const int in_dims[] = {10, 3, 224, 224}, in_strides[] = {150528, 50176, 224, 1};
        const int out_dims[] = {10, 64, 224, 224}, out_strides[] = {3211264, 50176, 224, 1};
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
    int blocks = (int)((32112640LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(t0, out, 32112640LL);
}
}  // namespace ks_head

namespace ks_tail0 {
__device__ __forceinline__ float epi_op(float acc, float LOAD_u0_0) {
    const float v_features_3 = fmaxf((acc + LOAD_u0_0), 0.0f);
    const float result = v_features_3;
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ u0_0, float* __restrict__ out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], u0_0[((i / 50176LL) % 64LL)]);
}

// cuDNN is opened at run time, never linked: the library and its parts (ops, cnn, engines) come from the folder of
// the cuDNN the framework loaded, in the order that keeps a system-wide cuDNN of another version out of the process
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
    // Ranked fastest first: measured once at the first call (as cudnn.benchmark does in the framework), or by
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
        const int in_dims[] = {10, 64, 224, 224}, in_strides[] = {3211264, 50176, 224, 1};
        const int out_dims[] = {10, 64, 224, 224}, out_strides[] = {3211264, 50176, 224, 1};
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

void launch_fused(const float* x, const float* w, const float* __restrict__ u0_0, float* out, cudaStream_t stream) {
    ConvState& s = state(stream);
    cudnnHandle_t h = s.handle;
    const float alpha = 1.0f, beta = 0.0f;
    check(cudnn().cudnnConvolutionForward(h, &alpha, s.x, x, s.w, w, s.conv, s.algo, s.workspace, s.bytes, &beta, s.y, out), "convolution");
    int blocks = (int)((32112640LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(u0_0, out, 32112640LL);
}
}  // namespace ks_tail0

namespace ks_tail1 {
__device__ __forceinline__ float pre_op(float LOAD_u1_0) {
    const float pre = LOAD_u1_0;
    return pre;
}
__device__ __forceinline__ float epi_op(float POOL) {
    const float result = POOL;
    return result;
}

__global__ void pool_kernel(const float* __restrict__ x, float* __restrict__ out) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < 8028160LL; i += (int64_t)gridDim.x * BLOCK) {
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
    int blocks = (int)((8028160LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    pool_kernel<<<blocks, BLOCK, 0, stream>>>(x, out);
}
}  // namespace ks_tail1

namespace ks_tail2 {
__device__ __forceinline__ float epi_op(float acc, float LOAD_u2_0) {
    const float v_features_6 = fmaxf((acc + LOAD_u2_0), 0.0f);
    const float result = v_features_6;
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ u2_0, float* __restrict__ out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], u2_0[((i / 12544LL) % 128LL)]);
}

// cuDNN is opened at run time, never linked: the library and its parts (ops, cnn, engines) come from the folder of
// the cuDNN the framework loaded, in the order that keeps a system-wide cuDNN of another version out of the process
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
    // Ranked fastest first: measured once at the first call (as cudnn.benchmark does in the framework), or by
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
        const int in_dims[] = {10, 64, 112, 112}, in_strides[] = {802816, 12544, 112, 1};
        const int out_dims[] = {10, 128, 112, 112}, out_strides[] = {1605632, 12544, 112, 1};
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

void launch_fused(const float* x, const float* w, const float* __restrict__ u2_0, float* out, cudaStream_t stream) {
    ConvState& s = state(stream);
    cudnnHandle_t h = s.handle;
    const float alpha = 1.0f, beta = 0.0f;
    check(cudnn().cudnnConvolutionForward(h, &alpha, s.x, x, s.w, w, s.conv, s.algo, s.workspace, s.bytes, &beta, s.y, out), "convolution");
    int blocks = (int)((16056320LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(u2_0, out, 16056320LL);
}
}  // namespace ks_tail2

namespace ks_tail3 {
__device__ __forceinline__ float epi_op(float acc, float LOAD_u3_0) {
    const float v_features_8 = fmaxf((acc + LOAD_u3_0), 0.0f);
    const float result = v_features_8;
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ u3_0, float* __restrict__ out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], u3_0[((i / 12544LL) % 128LL)]);
}

// cuDNN is opened at run time, never linked: the library and its parts (ops, cnn, engines) come from the folder of
// the cuDNN the framework loaded, in the order that keeps a system-wide cuDNN of another version out of the process
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
    // Ranked fastest first: measured once at the first call (as cudnn.benchmark does in the framework), or by
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
        const int in_dims[] = {10, 128, 112, 112}, in_strides[] = {1605632, 12544, 112, 1};
        const int out_dims[] = {10, 128, 112, 112}, out_strides[] = {1605632, 12544, 112, 1};
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

void launch_fused(const float* x, const float* w, const float* __restrict__ u3_0, float* out, cudaStream_t stream) {
    ConvState& s = state(stream);
    cudnnHandle_t h = s.handle;
    const float alpha = 1.0f, beta = 0.0f;
    check(cudnn().cudnnConvolutionForward(h, &alpha, s.x, x, s.w, w, s.conv, s.algo, s.workspace, s.bytes, &beta, s.y, out), "convolution");
    int blocks = (int)((16056320LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(u3_0, out, 16056320LL);
}
}  // namespace ks_tail3

namespace ks_tail4 {
__device__ __forceinline__ float pre_op(float LOAD_u4_0) {
    const float pre = LOAD_u4_0;
    return pre;
}
__device__ __forceinline__ float epi_op(float POOL) {
    const float result = POOL;
    return result;
}

__global__ void pool_kernel(const float* __restrict__ x, float* __restrict__ out) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < 4014080LL; i += (int64_t)gridDim.x * BLOCK) {
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
    int blocks = (int)((4014080LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    pool_kernel<<<blocks, BLOCK, 0, stream>>>(x, out);
}
}  // namespace ks_tail4

namespace ks_tail5 {
__device__ __forceinline__ float epi_op(float acc, float LOAD_u5_0) {
    const float v_features_11 = fmaxf((acc + LOAD_u5_0), 0.0f);
    const float result = v_features_11;
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ u5_0, float* __restrict__ out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], u5_0[((i / 3136LL) % 256LL)]);
}

// cuDNN is opened at run time, never linked: the library and its parts (ops, cnn, engines) come from the folder of
// the cuDNN the framework loaded, in the order that keeps a system-wide cuDNN of another version out of the process
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
    // Ranked fastest first: measured once at the first call (as cudnn.benchmark does in the framework), or by
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
        const int in_dims[] = {10, 128, 56, 56}, in_strides[] = {401408, 3136, 56, 1};
        const int out_dims[] = {10, 256, 56, 56}, out_strides[] = {802816, 3136, 56, 1};
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

void launch_fused(const float* x, const float* w, const float* __restrict__ u5_0, float* out, cudaStream_t stream) {
    ConvState& s = state(stream);
    cudnnHandle_t h = s.handle;
    const float alpha = 1.0f, beta = 0.0f;
    check(cudnn().cudnnConvolutionForward(h, &alpha, s.x, x, s.w, w, s.conv, s.algo, s.workspace, s.bytes, &beta, s.y, out), "convolution");
    int blocks = (int)((8028160LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(u5_0, out, 8028160LL);
}
}  // namespace ks_tail5

namespace ks_tail6 {
__device__ __forceinline__ float epi_op(float acc, float LOAD_u6_0) {
    const float v_features_13 = fmaxf((acc + LOAD_u6_0), 0.0f);
    const float result = v_features_13;
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ u6_0, float* __restrict__ out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], u6_0[((i / 3136LL) % 256LL)]);
}

// cuDNN is opened at run time, never linked: the library and its parts (ops, cnn, engines) come from the folder of
// the cuDNN the framework loaded, in the order that keeps a system-wide cuDNN of another version out of the process
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
    // Ranked fastest first: measured once at the first call (as cudnn.benchmark does in the framework), or by
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
        const int in_dims[] = {10, 256, 56, 56}, in_strides[] = {802816, 3136, 56, 1};
        const int out_dims[] = {10, 256, 56, 56}, out_strides[] = {802816, 3136, 56, 1};
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

void launch_fused(const float* x, const float* w, const float* __restrict__ u6_0, float* out, cudaStream_t stream) {
    ConvState& s = state(stream);
    cudnnHandle_t h = s.handle;
    const float alpha = 1.0f, beta = 0.0f;
    check(cudnn().cudnnConvolutionForward(h, &alpha, s.x, x, s.w, w, s.conv, s.algo, s.workspace, s.bytes, &beta, s.y, out), "convolution");
    int blocks = (int)((8028160LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(u6_0, out, 8028160LL);
}
}  // namespace ks_tail6

namespace ks_tail7 {
__device__ __forceinline__ float epi_op(float acc, float LOAD_u7_0) {
    const float v_features_15 = fmaxf((acc + LOAD_u7_0), 0.0f);
    const float result = v_features_15;
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ u7_0, float* __restrict__ out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], u7_0[((i / 3136LL) % 256LL)]);
}

// cuDNN is opened at run time, never linked: the library and its parts (ops, cnn, engines) come from the folder of
// the cuDNN the framework loaded, in the order that keeps a system-wide cuDNN of another version out of the process
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
    // Ranked fastest first: measured once at the first call (as cudnn.benchmark does in the framework), or by
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
        const int in_dims[] = {10, 256, 56, 56}, in_strides[] = {802816, 3136, 56, 1};
        const int out_dims[] = {10, 256, 56, 56}, out_strides[] = {802816, 3136, 56, 1};
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

void launch_fused(const float* x, const float* w, const float* __restrict__ u7_0, float* out, cudaStream_t stream) {
    ConvState& s = state(stream);
    cudnnHandle_t h = s.handle;
    const float alpha = 1.0f, beta = 0.0f;
    check(cudnn().cudnnConvolutionForward(h, &alpha, s.x, x, s.w, w, s.conv, s.algo, s.workspace, s.bytes, &beta, s.y, out), "convolution");
    int blocks = (int)((8028160LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(u7_0, out, 8028160LL);
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
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < 2007040LL; i += (int64_t)gridDim.x * BLOCK) {
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
    int blocks = (int)((2007040LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    pool_kernel<<<blocks, BLOCK, 0, stream>>>(x, out);
}
}  // namespace ks_tail8

namespace ks_tail9 {
__device__ __forceinline__ float epi_op(float acc, float LOAD_u9_0) {
    const float v_features_18 = fmaxf((acc + LOAD_u9_0), 0.0f);
    const float result = v_features_18;
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ u9_0, float* __restrict__ out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], u9_0[((i / 784LL) % 512LL)]);
}

// cuDNN is opened at run time, never linked: the library and its parts (ops, cnn, engines) come from the folder of
// the cuDNN the framework loaded, in the order that keeps a system-wide cuDNN of another version out of the process
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
    // Ranked fastest first: measured once at the first call (as cudnn.benchmark does in the framework), or by
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
        const int in_dims[] = {10, 256, 28, 28}, in_strides[] = {200704, 784, 28, 1};
        const int out_dims[] = {10, 512, 28, 28}, out_strides[] = {401408, 784, 28, 1};
        const int w_dims[] = {512, 256, 3, 3};
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
    int blocks = (int)((4014080LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(u9_0, out, 4014080LL);
}
}  // namespace ks_tail9

namespace ks_tail10 {
__device__ __forceinline__ float epi_op(float acc, float LOAD_u10_0) {
    const float v_features_20 = fmaxf((acc + LOAD_u10_0), 0.0f);
    const float result = v_features_20;
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ u10_0, float* __restrict__ out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], u10_0[((i / 784LL) % 512LL)]);
}

// cuDNN is opened at run time, never linked: the library and its parts (ops, cnn, engines) come from the folder of
// the cuDNN the framework loaded, in the order that keeps a system-wide cuDNN of another version out of the process
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
    // Ranked fastest first: measured once at the first call (as cudnn.benchmark does in the framework), or by
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
        const int in_dims[] = {10, 512, 28, 28}, in_strides[] = {401408, 784, 28, 1};
        const int out_dims[] = {10, 512, 28, 28}, out_strides[] = {401408, 784, 28, 1};
        const int w_dims[] = {512, 512, 3, 3};
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

void launch_fused(const float* x, const float* w, const float* __restrict__ u10_0, float* out, cudaStream_t stream) {
    ConvState& s = state(stream);
    cudnnHandle_t h = s.handle;
    const float alpha = 1.0f, beta = 0.0f;
    check(cudnn().cudnnConvolutionForward(h, &alpha, s.x, x, s.w, w, s.conv, s.algo, s.workspace, s.bytes, &beta, s.y, out), "convolution");
    int blocks = (int)((4014080LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(u10_0, out, 4014080LL);
}
}  // namespace ks_tail10

namespace ks_tail11 {
__device__ __forceinline__ float epi_op(float acc, float LOAD_u11_0) {
    const float v_features_22 = fmaxf((acc + LOAD_u11_0), 0.0f);
    const float result = v_features_22;
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ u11_0, float* __restrict__ out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], u11_0[((i / 784LL) % 512LL)]);
}

// cuDNN is opened at run time, never linked: the library and its parts (ops, cnn, engines) come from the folder of
// the cuDNN the framework loaded, in the order that keeps a system-wide cuDNN of another version out of the process
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
    // Ranked fastest first: measured once at the first call (as cudnn.benchmark does in the framework), or by
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
        const int in_dims[] = {10, 512, 28, 28}, in_strides[] = {401408, 784, 28, 1};
        const int out_dims[] = {10, 512, 28, 28}, out_strides[] = {401408, 784, 28, 1};
        const int w_dims[] = {512, 512, 3, 3};
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
    int blocks = (int)((4014080LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(u11_0, out, 4014080LL);
}
}  // namespace ks_tail11

namespace ks_tail12 {
__device__ __forceinline__ float pre_op(float LOAD_u12_0) {
    const float pre = LOAD_u12_0;
    return pre;
}
__device__ __forceinline__ float epi_op(float POOL) {
    const float result = POOL;
    return result;
}

__global__ void pool_kernel(const float* __restrict__ x, float* __restrict__ out) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < 1003520LL; i += (int64_t)gridDim.x * BLOCK) {
        const int64_t ow = i % 14LL, oh = (i / 14LL) % 14LL, od = (i / 196LL) % 1LL;
        const float* xc = x + (i / 196LL) * 784LL;
        float acc = -INFINITY;
        for (int64_t a = 0; a < 1; ++a) {
            const int64_t id = od * 1 - 0 + a * 1; if (id < 0 || id >= 1) continue;
            for (int64_t bb = 0; bb < 2; ++bb) {
                const int64_t ih = oh * 2 - 0 + bb * 1; if (ih < 0 || ih >= 28) continue;
                for (int64_t c = 0; c < 2; ++c) {
                    const int64_t iw = ow * 2 - 0 + c * 1; if (iw < 0 || iw >= 28) continue;
                    const float v = pre_op(xc[(id * 28 + ih) * 28LL + iw]); acc = fmaxf(acc, v);
                }
            }
        }
        const float pooled = acc;
        out[i] = epi_op(pooled);
    }
}
void launch_fused(const float* x, float* out, cudaStream_t stream) {
    int blocks = (int)((1003520LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    pool_kernel<<<blocks, BLOCK, 0, stream>>>(x, out);
}
}  // namespace ks_tail12

namespace ks_tail13 {
__device__ __forceinline__ float epi_op(float acc, float LOAD_u13_0) {
    const float v_features_25 = fmaxf((acc + LOAD_u13_0), 0.0f);
    const float result = v_features_25;
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ u13_0, float* __restrict__ out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], u13_0[((i / 196LL) % 512LL)]);
}

// cuDNN is opened at run time, never linked: the library and its parts (ops, cnn, engines) come from the folder of
// the cuDNN the framework loaded, in the order that keeps a system-wide cuDNN of another version out of the process
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
    // Ranked fastest first: measured once at the first call (as cudnn.benchmark does in the framework), or by
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
        const int in_dims[] = {10, 512, 14, 14}, in_strides[] = {100352, 196, 14, 1};
        const int out_dims[] = {10, 512, 14, 14}, out_strides[] = {100352, 196, 14, 1};
        const int w_dims[] = {512, 512, 3, 3};
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

void launch_fused(const float* x, const float* w, const float* __restrict__ u13_0, float* out, cudaStream_t stream) {
    ConvState& s = state(stream);
    cudnnHandle_t h = s.handle;
    const float alpha = 1.0f, beta = 0.0f;
    check(cudnn().cudnnConvolutionForward(h, &alpha, s.x, x, s.w, w, s.conv, s.algo, s.workspace, s.bytes, &beta, s.y, out), "convolution");
    int blocks = (int)((1003520LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(u13_0, out, 1003520LL);
}
}  // namespace ks_tail13

namespace ks_tail14 {
__device__ __forceinline__ float epi_op(float acc, float LOAD_u14_0) {
    const float v_features_27 = fmaxf((acc + LOAD_u14_0), 0.0f);
    const float result = v_features_27;
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ u14_0, float* __restrict__ out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], u14_0[((i / 196LL) % 512LL)]);
}

// cuDNN is opened at run time, never linked: the library and its parts (ops, cnn, engines) come from the folder of
// the cuDNN the framework loaded, in the order that keeps a system-wide cuDNN of another version out of the process
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
    // Ranked fastest first: measured once at the first call (as cudnn.benchmark does in the framework), or by
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
        const int in_dims[] = {10, 512, 14, 14}, in_strides[] = {100352, 196, 14, 1};
        const int out_dims[] = {10, 512, 14, 14}, out_strides[] = {100352, 196, 14, 1};
        const int w_dims[] = {512, 512, 3, 3};
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

void launch_fused(const float* x, const float* w, const float* __restrict__ u14_0, float* out, cudaStream_t stream) {
    ConvState& s = state(stream);
    cudnnHandle_t h = s.handle;
    const float alpha = 1.0f, beta = 0.0f;
    check(cudnn().cudnnConvolutionForward(h, &alpha, s.x, x, s.w, w, s.conv, s.algo, s.workspace, s.bytes, &beta, s.y, out), "convolution");
    int blocks = (int)((1003520LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(u14_0, out, 1003520LL);
}
}  // namespace ks_tail14

namespace ks_tail15 {
__device__ __forceinline__ float epi_op(float acc, float LOAD_u15_0) {
    const float v_features_29 = fmaxf((acc + LOAD_u15_0), 0.0f);
    const float result = v_features_29;
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ u15_0, float* __restrict__ out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], u15_0[((i / 196LL) % 512LL)]);
}

// cuDNN is opened at run time, never linked: the library and its parts (ops, cnn, engines) come from the folder of
// the cuDNN the framework loaded, in the order that keeps a system-wide cuDNN of another version out of the process
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
    // Ranked fastest first: measured once at the first call (as cudnn.benchmark does in the framework), or by
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
        const int in_dims[] = {10, 512, 14, 14}, in_strides[] = {100352, 196, 14, 1};
        const int out_dims[] = {10, 512, 14, 14}, out_strides[] = {100352, 196, 14, 1};
        const int w_dims[] = {512, 512, 3, 3};
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

void launch_fused(const float* x, const float* w, const float* __restrict__ u15_0, float* out, cudaStream_t stream) {
    ConvState& s = state(stream);
    cudnnHandle_t h = s.handle;
    const float alpha = 1.0f, beta = 0.0f;
    check(cudnn().cudnnConvolutionForward(h, &alpha, s.x, x, s.w, w, s.conv, s.algo, s.workspace, s.bytes, &beta, s.y, out), "convolution");
    int blocks = (int)((1003520LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(u15_0, out, 1003520LL);
}
}  // namespace ks_tail15

namespace ks_tail16 {
__device__ __forceinline__ float pre_op(float LOAD_u16_0) {
    const float pre = LOAD_u16_0;
    return pre;
}
__device__ __forceinline__ float epi_op(float POOL) {
    const float result = POOL;
    return result;
}

__global__ void pool_kernel(const float* __restrict__ x, float* __restrict__ out) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < 250880LL; i += (int64_t)gridDim.x * BLOCK) {
        const int64_t ow = i % 7LL, oh = (i / 7LL) % 7LL, od = (i / 49LL) % 1LL;
        const float* xc = x + (i / 49LL) * 196LL;
        float acc = -INFINITY;
        for (int64_t a = 0; a < 1; ++a) {
            const int64_t id = od * 1 - 0 + a * 1; if (id < 0 || id >= 1) continue;
            for (int64_t bb = 0; bb < 2; ++bb) {
                const int64_t ih = oh * 2 - 0 + bb * 1; if (ih < 0 || ih >= 14) continue;
                for (int64_t c = 0; c < 2; ++c) {
                    const int64_t iw = ow * 2 - 0 + c * 1; if (iw < 0 || iw >= 14) continue;
                    const float v = pre_op(xc[(id * 14 + ih) * 14LL + iw]); acc = fmaxf(acc, v);
                }
            }
        }
        const float pooled = acc;
        out[i] = epi_op(pooled);
    }
}
void launch_fused(const float* x, float* out, cudaStream_t stream) {
    int blocks = (int)((250880LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    pool_kernel<<<blocks, BLOCK, 0, stream>>>(x, out);
}
}  // namespace ks_tail16

namespace ks_tail17 {
__device__ __forceinline__ float epi_op(float acc, float LOAD_u17_1) {
    const float v_classifier_1 = fmaxf((acc + LOAD_u17_1), 0.0f);
    const float result = v_classifier_1;
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ u17_1, float* __restrict__ out, int64_t total) {
    const int64_t N = 4096LL;
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < total; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], u17_1[i % N]);
}

static cublasHandle_t handle() {
    // One handle per process: creating one per call costs more than a small GEMM.
    static cublasHandle_t h = nullptr;
    if (!h && cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate failed");
    return h;
}

void launch_fused(const float* x, const float* w, const float* __restrict__ u17_1, float* out, cudaStream_t stream) {
    cublasHandle_t h = handle();
    cublasSetStream(h, stream);
    const float alpha = 1.0f, beta = 0.0f;
    cublasStatus_t status = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 4096, 10, 25088, &alpha, w, CUDA_R_32F, 25088, x, CUDA_R_32F, 25088, &beta, out, CUDA_R_32F, 4096, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
    if (status != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cuBLAS GEMM failed: " + std::to_string((int)status));
    int blocks = (int)((40960LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(u17_1, out, 40960LL);
}
}  // namespace ks_tail17

namespace ks_tail18 {
__device__ __forceinline__ float epi_op(float acc, float LOAD_u18_1) {
    const float v_classifier_4 = fmaxf((acc + LOAD_u18_1), 0.0f);
    const float result = v_classifier_4;
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ u18_1, float* __restrict__ out, int64_t total) {
    const int64_t N = 4096LL;
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < total; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], u18_1[i % N]);
}

static cublasHandle_t handle() {
    // One handle per process: creating one per call costs more than a small GEMM.
    static cublasHandle_t h = nullptr;
    if (!h && cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate failed");
    return h;
}

void launch_fused(const float* x, const float* w, const float* __restrict__ u18_1, float* out, cudaStream_t stream) {
    cublasHandle_t h = handle();
    cublasSetStream(h, stream);
    const float alpha = 1.0f, beta = 0.0f;
    cublasStatus_t status = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 4096, 10, 4096, &alpha, w, CUDA_R_32F, 4096, x, CUDA_R_32F, 4096, &beta, out, CUDA_R_32F, 4096, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
    if (status != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cuBLAS GEMM failed: " + std::to_string((int)status));
    int blocks = (int)((40960LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(u18_1, out, 40960LL);
}
}  // namespace ks_tail18

namespace ks_tail19 {
__device__ __forceinline__ float epi_op(float acc, float LOAD_u19_1) {
    const float result = (acc + LOAD_u19_1);
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ u19_1, float* __restrict__ out, int64_t total) {
    const int64_t N = 1000LL;
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < total; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], u19_1[i % N]);
}

static cublasHandle_t handle() {
    // One handle per process: creating one per call costs more than a small GEMM.
    static cublasHandle_t h = nullptr;
    if (!h && cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate failed");
    return h;
}

void launch_fused(const float* x, const float* w, const float* __restrict__ u19_1, float* out, cudaStream_t stream) {
    cublasHandle_t h = handle();
    cublasSetStream(h, stream);
    const float alpha = 1.0f, beta = 0.0f;
    cublasStatus_t status = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 1000, 10, 4096, &alpha, w, CUDA_R_32F, 4096, x, CUDA_R_32F, 4096, &beta, out, CUDA_R_32F, 1000, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
    if (status != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cuBLAS GEMM failed: " + std::to_string((int)status));
    int blocks = (int)((10000LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(u19_1, out, 10000LL);
}
}  // namespace ks_tail19
''',
    'model_new.py': r'''"""Written by Kernel Studio's heuristic policy: Conv2d (10x3x224x224 -> 10x64x224x224) with 2 operator(s) fused after it, then Conv2d (10x64x224x224 -> 10x64x224x224) with 2 operator(s) fused after it, then one max pool kernel (2x2 windows), then Conv2d (10x64x112x112 -> 10x128x112x112) with 2 operator(s) fused after it, then Conv2d (10x128x112x112 -> 10x128x112x112) with 2 operator(s) fused after it, then one max pool kernel (2x2 windows), then Conv2d (10x128x56x56 -> 10x256x56x56) with 2 operator(s) fused after it, then Conv2d (10x256x56x56 -> 10x256x56x56) with 2 operator(s) fused after it, then Conv2d (10x256x56x56 -> 10x256x56x56) with 2 operator(s) fused after it, then one max pool kernel (2x2 windows), then Conv2d (10x256x28x28 -> 10x512x28x28) with 2 operator(s) fused after it, then Conv2d (10x512x28x28 -> 10x512x28x28) with 2 operator(s) fused after it, then Conv2d (10x512x28x28 -> 10x512x28x28) with 2 operator(s) fused after it, then one max pool kernel (2x2 windows), then Conv2d (10x512x14x14 -> 10x512x14x14) with 2 operator(s) fused after it, then Conv2d (10x512x14x14 -> 10x512x14x14) with 2 operator(s) fused after it, then Conv2d (10x512x14x14 -> 10x512x14x14) with 2 operator(s) fused after it, then one max pool kernel (2x2 windows), then GEMM (10x25088 by 25088x4096) with 1 operator(s) fused after it, then GEMM (10x4096 by 4096x4096) with 1 operator(s) fused after it, then GEMM (10x4096 by 4096x1000) with 0 operator(s) fused after it."""
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
PROBLEM_SOURCE = 'import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\nclass Model(nn.Module):\n    def __init__(self, num_classes=1000):\n        """\n        Initialize the VGG16 model.\n        \n        :param num_classes: The number of output classes (default is 1000 for ImageNet)\n        """\n        super(Model, self).__init__()\n        \n        # VGG16 architecture: 5 blocks of convolutional layers followed by max pooling\n        self.features = nn.Sequential(\n            # Block 1\n            nn.Conv2d(3, 64, kernel_size=3, padding=1),\n            nn.ReLU(inplace=True),\n            nn.Conv2d(64, 64, kernel_size=3, padding=1),\n            nn.ReLU(inplace=True),\n            nn.MaxPool2d(kernel_size=2, stride=2),\n            \n            # Block 2\n            nn.Conv2d(64, 128, kernel_size=3, padding=1),\n            nn.ReLU(inplace=True),\n            nn.Conv2d(128, 128, kernel_size=3, padding=1),\n            nn.ReLU(inplace=True),\n            nn.MaxPool2d(kernel_size=2, stride=2),\n            \n            # Block 3\n            nn.Conv2d(128, 256, kernel_size=3, padding=1),\n            nn.ReLU(inplace=True),\n            nn.Conv2d(256, 256, kernel_size=3, padding=1),\n            nn.ReLU(inplace=True),\n            nn.Conv2d(256, 256, kernel_size=3, padding=1),\n            nn.ReLU(inplace=True),\n            nn.MaxPool2d(kernel_size=2, stride=2),\n            \n            # Block 4\n            nn.Conv2d(256, 512, kernel_size=3, padding=1),\n            nn.ReLU(inplace=True),\n            nn.Conv2d(512, 512, kernel_size=3, padding=1),\n            nn.ReLU(inplace=True),\n            nn.Conv2d(512, 512, kernel_size=3, padding=1),\n            nn.ReLU(inplace=True),\n            nn.MaxPool2d(kernel_size=2, stride=2),\n            \n            # Block 5\n            nn.Conv2d(512, 512, kernel_size=3, padding=1),\n            nn.ReLU(inplace=True),\n            nn.Conv2d(512, 512, kernel_size=3, padding=1),\n            nn.ReLU(inplace=True),\n            nn.Conv2d(512, 512, kernel_size=3, padding=1),\n            nn.ReLU(inplace=True),\n            nn.MaxPool2d(kernel_size=2, stride=2)\n        )\n        \n        # Fully connected layers\n        self.classifier = nn.Sequential(\n            nn.Linear(512 * 7 * 7, 4096),\n            nn.ReLU(inplace=True),\n            nn.Dropout(p=0.0),\n            nn.Linear(4096, 4096),\n            nn.ReLU(inplace=True),\n            nn.Dropout(p=0.0),\n            nn.Linear(4096, num_classes)\n        )\n    \n    def forward(self, x):\n        """\n        Forward pass of the VGG16 model.\n        \n        :param x: The input tensor, shape (batch_size, 3, 224, 224)\n        :return: The output tensor, shape (batch_size, num_classes)\n        """\n        x = self.features(x)\n        x = torch.flatten(x, 1)\n        x = self.classifier(x)\n        return x\n\n# Test code\nbatch_size = 10\nnum_classes = 1000\n\ndef get_inputs():\n    return [torch.rand(batch_size, 3, 224, 224)]\n\ndef get_init_inputs():\n    return [num_classes]'
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
        self._ks_params = [self.get_parameter(name) for name in ['features.0.weight', 'features.0.bias', 'features.2.weight', 'features.2.bias', 'features.5.weight', 'features.5.bias', 'features.7.weight', 'features.7.bias', 'features.10.weight', 'features.10.bias', 'features.12.weight', 'features.12.bias', 'features.14.weight', 'features.14.bias', 'features.17.weight', 'features.17.bias', 'features.19.weight', 'features.19.bias', 'features.21.weight', 'features.21.bias', 'features.24.weight', 'features.24.bias', 'features.26.weight', 'features.26.bias', 'features.28.weight', 'features.28.bias', 'classifier.0.weight', 'classifier.0.bias', 'classifier.3.weight', 'classifier.3.bias', 'classifier.6.weight', 'classifier.6.bias']]

    def forward(self, *inputs):
        return ops.fused(inputs[0].contiguous(), self._ks_params[0], self._ks_params[1], self._ks_params[2], self._ks_params[3], self._ks_params[4], self._ks_params[5], self._ks_params[6], self._ks_params[7], self._ks_params[8], self._ks_params[9], self._ks_params[10], self._ks_params[11], self._ks_params[12], self._ks_params[13], self._ks_params[14], self._ks_params[15], self._ks_params[16], self._ks_params[17], self._ks_params[18], self._ks_params[19], self._ks_params[20], self._ks_params[21], self._ks_params[22], self._ks_params[23], self._ks_params[24], self._ks_params[25], self._ks_params[26], self._ks_params[27], self._ks_params[28], self._ks_params[29], self._ks_params[30], self._ks_params[31])
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
