"""Kernel Studio solution of 5_AlexNet.py (cuda): reward 1, 19.0774 ms, 1.26x eager

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
    'binding.cpp': r'''// Written by Kernel Studio's heuristic policy: Conv2d (1024x3x224x224 -> 1024x96x55x55) with 2 operator(s) fused after it, then one max pool kernel (3x3 windows), then Conv2d (1024x96x27x27 -> 1024x256x27x27) with 2 operator(s) fused after it, then one max pool kernel (3x3 windows), then Conv2d (1024x256x13x13 -> 1024x384x13x13) with 2 operator(s) fused after it, then Conv2d (1024x384x13x13 -> 1024x384x13x13) with 2 operator(s) fused after it, then Conv2d (1024x384x13x13 -> 1024x256x13x13) with 2 operator(s) fused after it, then one max pool kernel (3x3 windows), then GEMM (1024x9216 by 9216x4096) with 1 operator(s) fused after it, then GEMM (1024x4096 by 4096x4096) with 1 operator(s) fused after it, then GEMM (1024x4096 by 4096x1000) with 0 operator(s) fused after it.
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <cuda_runtime.h>
#include <stdexcept>
#include <string>

using torch::stable::Tensor;

namespace ks_head { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }
namespace ks_tail0 { void launch_fused(const float*, float*, cudaStream_t); }
namespace ks_tail1 { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }
namespace ks_tail2 { void launch_fused(const float*, float*, cudaStream_t); }
namespace ks_tail3 { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }
namespace ks_tail4 { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }
namespace ks_tail5 { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }
namespace ks_tail6 { void launch_fused(const float*, float*, cudaStream_t); }
namespace ks_tail7 { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }
namespace ks_tail8 { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }
namespace ks_tail9 { void launch_fused(const float*, const float*, const float*, float*, cudaStream_t); }

static void check(const Tensor& t, int64_t numel, const char* name) {
    // The kernels are specialized to the problem's shapes: refuse anything else instead of reading past it.
    if (t.numel() != numel) throw std::runtime_error(std::string(name) + ": expected " + std::to_string(numel) +
                                                     " elements, got " + std::to_string(t.numel()));
    if (!t.is_contiguous()) throw std::runtime_error(std::string(name) + " must be contiguous");
}

Tensor fused(Tensor x, Tensor w, Tensor t0, Tensor u1_w, Tensor u1_0, Tensor u3_w, Tensor u3_0, Tensor u4_w, Tensor u4_0, Tensor u5_w, Tensor u5_0, Tensor u7_w, Tensor u7_1, Tensor u8_w, Tensor u8_1, Tensor u9_w, Tensor u9_1) {
    check(x, 154140672LL, "x");
    check(w, 34848LL, "w");
    check(t0, 96LL, "t0");
    check(u1_w, 614400LL, "u1_w");
    check(u1_0, 256LL, "u1_0");
    check(u3_w, 884736LL, "u3_w");
    check(u3_0, 384LL, "u3_0");
    check(u4_w, 1327104LL, "u4_w");
    check(u4_0, 384LL, "u4_0");
    check(u5_w, 884736LL, "u5_w");
    check(u5_0, 256LL, "u5_0");
    check(u7_w, 37748736LL, "u7_w");
    check(u7_1, 4096LL, "u7_1");
    check(u8_w, 16777216LL, "u8_w");
    check(u8_1, 4096LL, "u8_1");
    check(u9_w, 4096000LL, "u9_w");
    check(u9_1, 1000LL, "u9_1");
    Tensor mid0 = torch::stable::new_empty(x, {1024, 96, 55, 55});
    Tensor mid1 = torch::stable::new_empty(x, {1024, 96, 27, 27});
    Tensor mid2 = torch::stable::new_empty(x, {1024, 256, 27, 27});
    Tensor mid3 = torch::stable::new_empty(x, {1024, 256, 13, 13});
    Tensor mid4 = torch::stable::new_empty(x, {1024, 384, 13, 13});
    Tensor mid5 = torch::stable::new_empty(x, {1024, 384, 13, 13});
    Tensor mid6 = torch::stable::new_empty(x, {1024, 256, 13, 13});
    Tensor mid7 = torch::stable::new_empty(x, {1024, 256, 6, 6});
    Tensor mid8 = torch::stable::new_empty(x, {1024, 4096});
    Tensor mid9 = torch::stable::new_empty(x, {1024, 4096});
    Tensor out = torch::stable::new_empty(x, {1024, 1000});
    void* stream = nullptr;
    aoti_torch_get_current_cuda_stream(x.get_device(), &stream);
    ks_head::launch_fused((const float*)x.data_ptr(), (const float*)w.data_ptr(), (const float*)t0.data_ptr(), (float*)mid0.data_ptr(), (cudaStream_t)stream);
    ks_tail0::launch_fused((const float*)mid0.data_ptr(), (float*)mid1.data_ptr(), (cudaStream_t)stream);
    ks_tail1::launch_fused((const float*)mid1.data_ptr(), (const float*)u1_w.data_ptr(), (const float*)u1_0.data_ptr(), (float*)mid2.data_ptr(), (cudaStream_t)stream);
    ks_tail2::launch_fused((const float*)mid2.data_ptr(), (float*)mid3.data_ptr(), (cudaStream_t)stream);
    ks_tail3::launch_fused((const float*)mid3.data_ptr(), (const float*)u3_w.data_ptr(), (const float*)u3_0.data_ptr(), (float*)mid4.data_ptr(), (cudaStream_t)stream);
    ks_tail4::launch_fused((const float*)mid4.data_ptr(), (const float*)u4_w.data_ptr(), (const float*)u4_0.data_ptr(), (float*)mid5.data_ptr(), (cudaStream_t)stream);
    ks_tail5::launch_fused((const float*)mid5.data_ptr(), (const float*)u5_w.data_ptr(), (const float*)u5_0.data_ptr(), (float*)mid6.data_ptr(), (cudaStream_t)stream);
    ks_tail6::launch_fused((const float*)mid6.data_ptr(), (float*)mid7.data_ptr(), (cudaStream_t)stream);
    ks_tail7::launch_fused((const float*)mid7.data_ptr(), (const float*)u7_w.data_ptr(), (const float*)u7_1.data_ptr(), (float*)mid8.data_ptr(), (cudaStream_t)stream);
    ks_tail8::launch_fused((const float*)mid8.data_ptr(), (const float*)u8_w.data_ptr(), (const float*)u8_1.data_ptr(), (float*)mid9.data_ptr(), (cudaStream_t)stream);
    ks_tail9::launch_fused((const float*)mid9.data_ptr(), (const float*)u9_w.data_ptr(), (const float*)u9_1.data_ptr(), (float*)out.data_ptr(), (cudaStream_t)stream);
    return out;
}

STABLE_TORCH_LIBRARY(KS_NAMESPACE, m) { m.def("fused(Tensor x, Tensor w, Tensor t0, Tensor u1_w, Tensor u1_0, Tensor u3_w, Tensor u3_0, Tensor u4_w, Tensor u4_0, Tensor u5_w, Tensor u5_0, Tensor u7_w, Tensor u7_1, Tensor u8_w, Tensor u8_1, Tensor u9_w, Tensor u9_1) -> Tensor"); }
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
    'kernels/fused.cu': r'''// Written by Kernel Studio's heuristic policy: Conv2d (1024x3x224x224 -> 1024x96x55x55) with 2 operator(s) fused after it, then one max pool kernel (3x3 windows), then Conv2d (1024x96x27x27 -> 1024x256x27x27) with 2 operator(s) fused after it, then one max pool kernel (3x3 windows), then Conv2d (1024x256x13x13 -> 1024x384x13x13) with 2 operator(s) fused after it, then Conv2d (1024x384x13x13 -> 1024x384x13x13) with 2 operator(s) fused after it, then Conv2d (1024x384x13x13 -> 1024x256x13x13) with 2 operator(s) fused after it, then one max pool kernel (3x3 windows), then GEMM (1024x9216 by 9216x4096) with 1 operator(s) fused after it, then GEMM (1024x4096 by 4096x4096) with 1 operator(s) fused after it, then GEMM (1024x4096 by 4096x1000) with 0 operator(s) fused after it.
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
    const float v_relu1 = fmaxf((acc + LOAD_t0), 0.0f);
    const float result = v_relu1;
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ t0, float* __restrict__ out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], t0[((i / 3025LL) % 96LL)]);
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
        const int in_dims[] = {1024, 3, 224, 224}, in_strides[] = {150528, 50176, 224, 1};
        const int out_dims[] = {1024, 96, 55, 55}, out_strides[] = {290400, 3025, 55, 1};
        const int w_dims[] = {96, 3, 11, 11};
        const int pad[] = {2, 2}, stride[] = {4, 4}, dilation[] = {1, 1};
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
    int blocks = (int)((297369600LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(t0, out, 297369600LL);
}
}  // namespace ks_head

namespace ks_tail0 {
__device__ __forceinline__ float pre_op(float LOAD_u0_0) {
    const float pre = LOAD_u0_0;
    return pre;
}
__device__ __forceinline__ float epi_op(float POOL) {
    const float result = POOL;
    return result;
}

__global__ void pool_kernel(const float* __restrict__ x, float* __restrict__ out) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < 71663616LL; i += (int64_t)gridDim.x * BLOCK) {
        const int64_t ow = i % 27LL, oh = (i / 27LL) % 27LL, od = (i / 729LL) % 1LL;
        const float* xc = x + (i / 729LL) * 3025LL;
        float acc = -INFINITY;
        for (int64_t a = 0; a < 1; ++a) {
            const int64_t id = od * 1 - 0 + a * 1; if (id < 0 || id >= 1) continue;
            for (int64_t bb = 0; bb < 3; ++bb) {
                const int64_t ih = oh * 2 - 0 + bb * 1; if (ih < 0 || ih >= 55) continue;
                for (int64_t c = 0; c < 3; ++c) {
                    const int64_t iw = ow * 2 - 0 + c * 1; if (iw < 0 || iw >= 55) continue;
                    const float v = pre_op(xc[(id * 55 + ih) * 55LL + iw]); acc = fmaxf(acc, v);
                }
            }
        }
        const float pooled = acc;
        out[i] = epi_op(pooled);
    }
}
void launch_fused(const float* x, float* out, cudaStream_t stream) {
    int blocks = (int)((71663616LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    pool_kernel<<<blocks, BLOCK, 0, stream>>>(x, out);
}
}  // namespace ks_tail0

namespace ks_tail1 {
__device__ __forceinline__ float epi_op(float acc, float LOAD_u1_0) {
    const float v_relu2 = fmaxf((acc + LOAD_u1_0), 0.0f);
    const float result = v_relu2;
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ u1_0, float* __restrict__ out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], u1_0[((i / 729LL) % 256LL)]);
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
        const int in_dims[] = {1024, 96, 27, 27}, in_strides[] = {69984, 729, 27, 1};
        const int out_dims[] = {1024, 256, 27, 27}, out_strides[] = {186624, 729, 27, 1};
        const int w_dims[] = {256, 96, 5, 5};
        const int pad[] = {2, 2}, stride[] = {1, 1}, dilation[] = {1, 1};
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
    int blocks = (int)((191102976LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(u1_0, out, 191102976LL);
}
}  // namespace ks_tail1

namespace ks_tail2 {
__device__ __forceinline__ float pre_op(float LOAD_u2_0) {
    const float pre = LOAD_u2_0;
    return pre;
}
__device__ __forceinline__ float epi_op(float POOL) {
    const float result = POOL;
    return result;
}

__global__ void pool_kernel(const float* __restrict__ x, float* __restrict__ out) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < 44302336LL; i += (int64_t)gridDim.x * BLOCK) {
        const int64_t ow = i % 13LL, oh = (i / 13LL) % 13LL, od = (i / 169LL) % 1LL;
        const float* xc = x + (i / 169LL) * 729LL;
        float acc = -INFINITY;
        for (int64_t a = 0; a < 1; ++a) {
            const int64_t id = od * 1 - 0 + a * 1; if (id < 0 || id >= 1) continue;
            for (int64_t bb = 0; bb < 3; ++bb) {
                const int64_t ih = oh * 2 - 0 + bb * 1; if (ih < 0 || ih >= 27) continue;
                for (int64_t c = 0; c < 3; ++c) {
                    const int64_t iw = ow * 2 - 0 + c * 1; if (iw < 0 || iw >= 27) continue;
                    const float v = pre_op(xc[(id * 27 + ih) * 27LL + iw]); acc = fmaxf(acc, v);
                }
            }
        }
        const float pooled = acc;
        out[i] = epi_op(pooled);
    }
}
void launch_fused(const float* x, float* out, cudaStream_t stream) {
    int blocks = (int)((44302336LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    pool_kernel<<<blocks, BLOCK, 0, stream>>>(x, out);
}
}  // namespace ks_tail2

namespace ks_tail3 {
__device__ __forceinline__ float epi_op(float acc, float LOAD_u3_0) {
    const float v_relu3 = fmaxf((acc + LOAD_u3_0), 0.0f);
    const float result = v_relu3;
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ u3_0, float* __restrict__ out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], u3_0[((i / 169LL) % 384LL)]);
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
        const int in_dims[] = {1024, 256, 13, 13}, in_strides[] = {43264, 169, 13, 1};
        const int out_dims[] = {1024, 384, 13, 13}, out_strides[] = {64896, 169, 13, 1};
        const int w_dims[] = {384, 256, 3, 3};
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
    int blocks = (int)((66453504LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(u3_0, out, 66453504LL);
}
}  // namespace ks_tail3

namespace ks_tail4 {
__device__ __forceinline__ float epi_op(float acc, float LOAD_u4_0) {
    const float v_relu4 = fmaxf((acc + LOAD_u4_0), 0.0f);
    const float result = v_relu4;
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ u4_0, float* __restrict__ out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], u4_0[((i / 169LL) % 384LL)]);
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
        const int in_dims[] = {1024, 384, 13, 13}, in_strides[] = {64896, 169, 13, 1};
        const int out_dims[] = {1024, 384, 13, 13}, out_strides[] = {64896, 169, 13, 1};
        const int w_dims[] = {384, 384, 3, 3};
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
    int blocks = (int)((66453504LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(u4_0, out, 66453504LL);
}
}  // namespace ks_tail4

namespace ks_tail5 {
__device__ __forceinline__ float epi_op(float acc, float LOAD_u5_0) {
    const float v_relu5 = fmaxf((acc + LOAD_u5_0), 0.0f);
    const float result = v_relu5;
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ u5_0, float* __restrict__ out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], u5_0[((i / 169LL) % 256LL)]);
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
        const int in_dims[] = {1024, 384, 13, 13}, in_strides[] = {64896, 169, 13, 1};
        const int out_dims[] = {1024, 256, 13, 13}, out_strides[] = {43264, 169, 13, 1};
        const int w_dims[] = {256, 384, 3, 3};
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
    int blocks = (int)((44302336LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(u5_0, out, 44302336LL);
}
}  // namespace ks_tail5

namespace ks_tail6 {
__device__ __forceinline__ float pre_op(float LOAD_u6_0) {
    const float pre = LOAD_u6_0;
    return pre;
}
__device__ __forceinline__ float epi_op(float POOL) {
    const float result = POOL;
    return result;
}

__global__ void pool_kernel(const float* __restrict__ x, float* __restrict__ out) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < 9437184LL; i += (int64_t)gridDim.x * BLOCK) {
        const int64_t ow = i % 6LL, oh = (i / 6LL) % 6LL, od = (i / 36LL) % 1LL;
        const float* xc = x + (i / 36LL) * 169LL;
        float acc = -INFINITY;
        for (int64_t a = 0; a < 1; ++a) {
            const int64_t id = od * 1 - 0 + a * 1; if (id < 0 || id >= 1) continue;
            for (int64_t bb = 0; bb < 3; ++bb) {
                const int64_t ih = oh * 2 - 0 + bb * 1; if (ih < 0 || ih >= 13) continue;
                for (int64_t c = 0; c < 3; ++c) {
                    const int64_t iw = ow * 2 - 0 + c * 1; if (iw < 0 || iw >= 13) continue;
                    const float v = pre_op(xc[(id * 13 + ih) * 13LL + iw]); acc = fmaxf(acc, v);
                }
            }
        }
        const float pooled = acc;
        out[i] = epi_op(pooled);
    }
}
void launch_fused(const float* x, float* out, cudaStream_t stream) {
    int blocks = (int)((9437184LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    pool_kernel<<<blocks, BLOCK, 0, stream>>>(x, out);
}
}  // namespace ks_tail6

namespace ks_tail7 {
__device__ __forceinline__ float epi_op(float acc, float LOAD_u7_1) {
    const float v_relu6 = fmaxf((acc + LOAD_u7_1), 0.0f);
    const float result = v_relu6;
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ u7_1, float* __restrict__ out, int64_t total) {
    const int64_t N = 4096LL;
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < total; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], u7_1[i % N]);
}

static cublasHandle_t handle() {
    // One handle per process: creating one per call costs more than a small GEMM.
    static cublasHandle_t h = nullptr;
    if (!h && cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate failed");
    return h;
}

void launch_fused(const float* x, const float* w, const float* __restrict__ u7_1, float* out, cudaStream_t stream) {
    cublasHandle_t h = handle();
    cublasSetStream(h, stream);
    const float alpha = 1.0f, beta = 0.0f;
    cublasStatus_t status = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 4096, 1024, 9216, &alpha, w, CUDA_R_32F, 9216, x, CUDA_R_32F, 9216, &beta, out, CUDA_R_32F, 4096, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
    if (status != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cuBLAS GEMM failed: " + std::to_string((int)status));
    int blocks = (int)((4194304LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(u7_1, out, 4194304LL);
}
}  // namespace ks_tail7

namespace ks_tail8 {
__device__ __forceinline__ float epi_op(float acc, float LOAD_u8_1) {
    const float v_relu7 = fmaxf((acc + LOAD_u8_1), 0.0f);
    const float result = v_relu7;
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ u8_1, float* __restrict__ out, int64_t total) {
    const int64_t N = 4096LL;
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < total; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], u8_1[i % N]);
}

static cublasHandle_t handle() {
    // One handle per process: creating one per call costs more than a small GEMM.
    static cublasHandle_t h = nullptr;
    if (!h && cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate failed");
    return h;
}

void launch_fused(const float* x, const float* w, const float* __restrict__ u8_1, float* out, cudaStream_t stream) {
    cublasHandle_t h = handle();
    cublasSetStream(h, stream);
    const float alpha = 1.0f, beta = 0.0f;
    cublasStatus_t status = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 4096, 1024, 4096, &alpha, w, CUDA_R_32F, 4096, x, CUDA_R_32F, 4096, &beta, out, CUDA_R_32F, 4096, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
    if (status != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cuBLAS GEMM failed: " + std::to_string((int)status));
    int blocks = (int)((4194304LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(u8_1, out, 4194304LL);
}
}  // namespace ks_tail8

namespace ks_tail9 {
__device__ __forceinline__ float epi_op(float acc, float LOAD_u9_1) {
    const float result = (acc + LOAD_u9_1);
    return result;
}

__global__ void epilogue_kernel(const float* __restrict__ u9_1, float* __restrict__ out, int64_t total) {
    const int64_t N = 1000LL;
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < total; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i], u9_1[i % N]);
}

static cublasHandle_t handle() {
    // One handle per process: creating one per call costs more than a small GEMM.
    static cublasHandle_t h = nullptr;
    if (!h && cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate failed");
    return h;
}

void launch_fused(const float* x, const float* w, const float* __restrict__ u9_1, float* out, cudaStream_t stream) {
    cublasHandle_t h = handle();
    cublasSetStream(h, stream);
    const float alpha = 1.0f, beta = 0.0f;
    cublasStatus_t status = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 1000, 1024, 4096, &alpha, w, CUDA_R_32F, 4096, x, CUDA_R_32F, 4096, &beta, out, CUDA_R_32F, 1000, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
    if (status != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cuBLAS GEMM failed: " + std::to_string((int)status));
    int blocks = (int)((1024000LL + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(u9_1, out, 1024000LL);
}
}  // namespace ks_tail9
''',
    'model_new.py': r'''"""Written by Kernel Studio's heuristic policy: Conv2d (1024x3x224x224 -> 1024x96x55x55) with 2 operator(s) fused after it, then one max pool kernel (3x3 windows), then Conv2d (1024x96x27x27 -> 1024x256x27x27) with 2 operator(s) fused after it, then one max pool kernel (3x3 windows), then Conv2d (1024x256x13x13 -> 1024x384x13x13) with 2 operator(s) fused after it, then Conv2d (1024x384x13x13 -> 1024x384x13x13) with 2 operator(s) fused after it, then Conv2d (1024x384x13x13 -> 1024x256x13x13) with 2 operator(s) fused after it, then one max pool kernel (3x3 windows), then GEMM (1024x9216 by 9216x4096) with 1 operator(s) fused after it, then GEMM (1024x4096 by 4096x4096) with 1 operator(s) fused after it, then GEMM (1024x4096 by 4096x1000) with 0 operator(s) fused after it."""
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
PROBLEM_SOURCE = 'import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\nclass Model(nn.Module):\n    def __init__(self, num_classes=1000):\n        """\n        :param num_classes: The number of output classes (default is 1000 for ImageNet)\n        """\n        super(Model, self).__init__()\n        \n        # First convolutional layer\n        self.conv1 = nn.Conv2d(in_channels=3, out_channels=96, kernel_size=11, stride=4, padding=2)\n        self.relu1 = nn.ReLU(inplace=True)\n        self.maxpool1 = nn.MaxPool2d(kernel_size=3, stride=2)\n        \n        # Second convolutional layer\n        self.conv2 = nn.Conv2d(in_channels=96, out_channels=256, kernel_size=5, padding=2)\n        self.relu2 = nn.ReLU(inplace=True)\n        self.maxpool2 = nn.MaxPool2d(kernel_size=3, stride=2)\n        \n        # Third convolutional layer\n        self.conv3 = nn.Conv2d(in_channels=256, out_channels=384, kernel_size=3, padding=1)\n        self.relu3 = nn.ReLU(inplace=True)\n        \n        # Fourth convolutional layer\n        self.conv4 = nn.Conv2d(in_channels=384, out_channels=384, kernel_size=3, padding=1)\n        self.relu4 = nn.ReLU(inplace=True)\n        \n        # Fifth convolutional layer\n        self.conv5 = nn.Conv2d(in_channels=384, out_channels=256, kernel_size=3, padding=1)\n        self.relu5 = nn.ReLU(inplace=True)\n        self.maxpool3 = nn.MaxPool2d(kernel_size=3, stride=2)\n        \n        # Fully connected layers\n        self.fc1 = nn.Linear(in_features=256 * 6 * 6, out_features=4096)\n        self.relu6 = nn.ReLU(inplace=True)\n        self.dropout1 = nn.Dropout(p=0.0)\n        \n        self.fc2 = nn.Linear(in_features=4096, out_features=4096)\n        self.relu7 = nn.ReLU(inplace=True)\n        self.dropout2 = nn.Dropout(p=0.0)\n        \n        self.fc3 = nn.Linear(in_features=4096, out_features=num_classes)\n    \n    def forward(self, x):\n        """\n        :param x: The input tensor, shape (batch_size, 3, 224, 224)\n        :return: The output tensor, shape (batch_size, num_classes)\n        """\n        x = self.conv1(x)\n        x = self.relu1(x)\n        x = self.maxpool1(x)\n        \n        x = self.conv2(x)\n        x = self.relu2(x)\n        x = self.maxpool2(x)\n        \n        x = self.conv3(x)\n        x = self.relu3(x)\n        \n        x = self.conv4(x)\n        x = self.relu4(x)\n        \n        x = self.conv5(x)\n        x = self.relu5(x)\n        x = self.maxpool3(x)\n        \n        x = torch.flatten(x, 1)\n        \n        x = self.fc1(x)\n        x = self.relu6(x)\n        x = self.dropout1(x)\n        \n        x = self.fc2(x)\n        x = self.relu7(x)\n        x = self.dropout2(x)\n        \n        x = self.fc3(x)\n        \n        return x\n\n# Test code\nbatch_size = 1024\nnum_classes = 1000\n\ndef get_inputs():\n    return [torch.rand(batch_size, 3, 224, 224)]\n\ndef get_init_inputs():\n    return [num_classes]'
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
        self._ks_params = [self.get_parameter(name) for name in ['conv1.weight', 'conv1.bias', 'conv2.weight', 'conv2.bias', 'conv3.weight', 'conv3.bias', 'conv4.weight', 'conv4.bias', 'conv5.weight', 'conv5.bias', 'fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias', 'fc3.weight', 'fc3.bias']]

    def forward(self, *inputs):
        return ops.fused(inputs[0].contiguous(), self._ks_params[0], self._ks_params[1], self._ks_params[2], self._ks_params[3], self._ks_params[4], self._ks_params[5], self._ks_params[6], self._ks_params[7], self._ks_params[8], self._ks_params[9], self._ks_params[10], self._ks_params[11], self._ks_params[12], self._ks_params[13], self._ks_params[14], self._ks_params[15])
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
