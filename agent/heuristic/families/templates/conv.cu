// The convolution family's CUDA kernels (families/conv.py): cuDNN's convolution (or, for ConvTranspose, its data
// gradient, which is the same arithmetic) with the algorithm it ranks first, chosen once per number of samples a call
// hands it (the batch, or slices of a batch past cuDNN's 2^31-element tensors), then, unless
// nothing follows the convolution, one epilogue kernel for the bias and the operators fused after it. cuDNN is opened
// at run time (dlopen), so the extension links nothing of it.
//@ includes
#include <algorithm>
#include <cudnn.h>
#include <dlfcn.h>
#include <map>
#include <stdexcept>
#include <string>
//@ launch

__global__ void epilogue_kernel(${pointers}float* __restrict__ out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK)
        out[i] = epi_op(out[i]${loads});
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
    cudnnTensorDescriptor_t x, y;  // the ${x_desc} and ${y_desc} of cuDNN's terms
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    ${algo_t} algo;
    size_t bytes = 0;
    void* workspace = nullptr;
};

static ConvState& state(int64_t n, cudaStream_t stream) {
    // Descriptors, the algorithm and its workspace are made once per number of samples N a call hands cuDNN (the
    // first's at the first call), with one cuDNN handle for them all.
    static cudnnHandle_t h = nullptr;
    static std::map<int64_t, ConvState> states;
    if (!h) check(cudnn().cudnnCreate(&h), "create");
    ConvState& s = states[n];
    if (!s.handle) {
        check(cudnn().cudnnSetStream(h, stream), "set stream");
        const int in_dims[] = {(int)n, ${in_dims}}, in_strides[] = ${in_strides};
        const int out_dims[] = {(int)n, ${out_dims}}, out_strides[] = ${out_strides};
        const int w_dims[] = ${w_dims};
        const int pad[] = ${pad}, stride[] = ${stride}, dilation[] = ${dilation};
        check(cudnn().cudnnCreateTensorDescriptor(&s.x), "tensor descriptor");
        check(cudnn().cudnnCreateTensorDescriptor(&s.y), "tensor descriptor");
        check(cudnn().cudnnCreateFilterDescriptor(&s.w), "filter descriptor");
        check(cudnn().cudnnCreateConvolutionDescriptor(&s.conv), "convolution descriptor");
        check(cudnn().cudnnSetTensorNdDescriptor(s.x, CUDNN_DATA_FLOAT, ${nd}, in_dims, in_strides), "input shape");
        check(cudnn().cudnnSetTensorNdDescriptor(s.y, CUDNN_DATA_FLOAT, ${nd}, out_dims, out_strides), "output shape");
        check(cudnn().cudnnSetFilterNdDescriptor(s.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, ${nd}, w_dims), "weight shape");
        check(cudnn().cudnnSetConvolutionNdDescriptor(s.conv, ${spatial}, pad, stride, dilation, CUDNN_CROSS_CORRELATION,
                                              CUDNN_DATA_FLOAT), "geometry");
        check(cudnn().cudnnSetConvolutionGroupCount(s.conv, ${groups}), "groups");
        // The default math lets cuDNN use TF32 tensor cores for float data, as PyTorch does by default.
        check(cudnn().cudnnSetConvolutionMathType(s.conv, CUDNN_DEFAULT_MATH), "math type");
        ${find}
        s.algo = best.algo;
        if (s.bytes && cudaMalloc(&s.workspace, s.bytes) != cudaSuccess) throw std::runtime_error("cuDNN workspace: out of memory");
        s.handle = h;
    }
    check(cudnn().cudnnSetStream(s.handle, stream), "set stream");
    return s;
}

void launch_fused(const float* x, const float* w, ${pointers}float* out, cudaStream_t stream) {
    // A cuDNN tensor holds at most 2^31 - 1 elements: a batch past that runs as slices of it, as PyTorch does.
    const int64_t batch = ${batch}LL, in_sample = ${in_sample}LL, out_sample = ${out_sample}LL;
    const int64_t most = std::max<int64_t>(1, 2147483647LL / std::max(in_sample, out_sample));
    const float alpha = 1.0f, beta = 0.0f;
    for (int64_t first = 0; first < batch; first += most) {
        ConvState& s = state(std::min(most, batch - first), stream);
        cudnnHandle_t h = s.handle;
        const float* x_n = x + first * in_sample;
        float* out_n = out + first * out_sample;
        check(${run}, "convolution");
    }
${epilogue}}
//@ launch_epilogue
    int blocks = (int)((${total}LL + BLOCK - 1) / BLOCK); if (blocks > ks_grid_limit()) blocks = ks_grid_limit();
    epilogue_kernel<<<blocks, BLOCK, 0, stream>>>(${args}out, ${total}LL);
//@ find_forward
        cudnnConvolutionFwdAlgoPerf_t perf[8]; int found = 0;
        if (cudnn().cudnnFindConvolutionForwardAlgorithm(h, s.x, s.w, s.conv, s.y, 8, &found, perf) != CUDNN_STATUS_SUCCESS || !found)
            check(cudnn().cudnnGetConvolutionForwardAlgorithm_v7(h, s.x, s.w, s.conv, s.y, 8, &found, perf), "find");
        const auto& best = pick(perf, found);
        check(cudnn().cudnnSetConvolutionMathType(s.conv, best.mathType), "math type");
        check(cudnn().cudnnGetConvolutionForwardWorkspaceSize(h, s.x, s.w, s.conv, s.y, best.algo, &s.bytes), "workspace");
//@ find_backward_data
        cudnnConvolutionBwdDataAlgoPerf_t perf[8]; int found = 0;
        if (cudnn().cudnnFindConvolutionBackwardDataAlgorithm(h, s.w, s.x, s.conv, s.y, 8, &found, perf) != CUDNN_STATUS_SUCCESS || !found)
            check(cudnn().cudnnGetConvolutionBackwardDataAlgorithm_v7(h, s.w, s.x, s.conv, s.y, 8, &found, perf), "find");
        const auto& best = pick(perf, found);
        check(cudnn().cudnnSetConvolutionMathType(s.conv, best.mathType), "math type");
        check(cudnn().cudnnGetConvolutionBackwardDataWorkspaceSize(h, s.w, s.x, s.conv, s.y, best.algo, &s.bytes), "workspace");
//@ run_forward
cudnn().cudnnConvolutionForward(h, &alpha, s.x, x_n, s.w, w, s.conv, s.algo, s.workspace, s.bytes, &beta, s.y, out_n)
//@ run_backward_data
cudnn().cudnnConvolutionBackwardData(h, &alpha, s.w, w, s.x, x_n, s.conv, s.algo, s.workspace, s.bytes, &beta, s.y, out_n)
