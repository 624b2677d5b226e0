"""Kernel Studio solution of 47_Sum_reduction_over_a_dimension.py (cuda): reward 0, 3.6683 ms, 0.84x eager

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
    'binding.cpp': r'''// Written by Kernel Studio's heuristic policy: one row-wise sum kernel (rows of 4096).
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <cuda_runtime.h>
#include <stdexcept>
#include <string>

using torch::stable::Tensor;

void launch_fused(const float*, float*, int64_t, cudaStream_t);

static void check(const Tensor& t, int64_t numel, const char* name) {
    // The kernels are specialized to the problem's shapes: refuse anything else instead of reading past it.
    if (t.numel() != numel) throw std::runtime_error(std::string(name) + ": expected " + std::to_string(numel) +
                                                     " elements, got " + std::to_string(t.numel()));
    if (!t.is_contiguous()) throw std::runtime_error(std::string(name) + " must be contiguous");
}

Tensor fused(Tensor t0) {
    check(t0, 2146959360LL, "t0");
    Tensor out = torch::stable::new_empty(t0, {128, 1, 4095});
    void* stream = nullptr;
    aoti_torch_get_current_cuda_stream(t0.get_device(), &stream);
    launch_fused((const float*)t0.data_ptr(), (float*)out.data_ptr(), 128LL, (cudaStream_t)stream);
    return out;
}

STABLE_TORCH_LIBRARY(KS_NAMESPACE, m) { m.def("fused(Tensor t0) -> Tensor"); }
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
    'kernels/fused.cu': r'''// Written by Kernel Studio's heuristic policy: one row-wise sum kernel (rows of 4096).
#include <cuda_runtime.h>
#include <cstdint>
#include <math.h>
#ifndef BLOCK
#define BLOCK 512
#endif

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
__device__ __forceinline__ float pre_op(float LOAD_t0) {
    const float pre = LOAD_t0;
    return pre;
}
__device__ __forceinline__ float epi_op(float ROW) {
    const float result = ROW;
    return result;
}

__global__ void row_kernel(const float* __restrict__ t0, float* __restrict__ out, int64_t outer) {
    const int64_t R = 4096LL, inner = 4095LL;
    for (int64_t t = blockIdx.x * (int64_t)BLOCK + threadIdx.x; t < outer * inner; t += (int64_t)gridDim.x * BLOCK) {
        const int64_t o = t / inner, i = t % inner;
        const float* p = t0 + o * R * inner + i;
        float acc = 0.f;
        for (int64_t r = 0; r < R; ++r) { const float v = pre_op(p[r * inner]); acc += v; }
        out[t] = epi_op(acc);
    }
}
void launch_fused(const float* t0, float* out, int64_t outer, cudaStream_t stream) {
    int64_t total = outer * 4095LL;
    int blocks = (int)((total + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    row_kernel<<<blocks, BLOCK, 0, stream>>>(t0, out, outer);
}
''',
    'model_new.py': r'''"""Written by Kernel Studio's heuristic policy: one row-wise sum kernel (rows of 4096)."""
import torch
import torch.nn as nn

from sandbox.native import load_extension

ops = load_extension(__file__)

# The reference module, used only to create the same parameters with the same initialization.
PROBLEM_SOURCE = 'import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    """\n    Simple model that performs sum reduction over a specified dimension.\n    """\n    def __init__(self, dim: int):\n        """\n        Initializes the model with the dimension to reduce over.\n\n        Args:\n            dim (int): Dimension to reduce over.\n        """\n        super(Model, self).__init__()\n        self.dim = dim\n\n    def forward(self, x: torch.Tensor) -> torch.Tensor:\n        """\n        Applies sum reduction over the specified dimension.\n\n        Args:\n            x (torch.Tensor): Input tensor of shape (..., dim, ...).\n\n        Returns:\n            torch.Tensor: Output tensor after sum reduction, shape (..., 1, ...).\n        """\n        return torch.sum(x, dim=self.dim, keepdim=True)\n\nbatch_size = 128\ndim1 = 4096\ndim2 = 4095\nreduce_dim = 1\n\ndef get_inputs():\n    x = torch.rand(batch_size, dim1, dim2)\n    return [x]\n\ndef get_init_inputs():\n    return [reduce_dim]'
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
        self._ks_params = [self.get_parameter(name) for name in []]

    def forward(self, *inputs):
        return ops.fused(inputs[0].contiguous())
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
