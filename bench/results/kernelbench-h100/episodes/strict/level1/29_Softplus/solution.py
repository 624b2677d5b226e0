"""Kernel Studio solution of 29_Softplus.py (cuda): reward 0, 4.5728 ms, 0.94x eager

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
    'binding.cpp': r'''// Written by Kernel Studio's heuristic policy: one fused elementwise kernel over 1 operator(s).
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
    check(t0, 1610612736LL, "t0");
    Tensor out = torch::stable::new_empty(t0, {4096, 393216});
    void* stream = nullptr;
    aoti_torch_get_current_cuda_stream(t0.get_device(), &stream);
    launch_fused((const float*)t0.data_ptr(), (float*)out.data_ptr(), 1610612736LL, (cudaStream_t)stream);
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
    'kernels/fused.cu': r'''// Written by Kernel Studio's heuristic policy: one fused elementwise kernel over 1 operator(s).
#include <cuda_runtime.h>
#include <cstdint>
#include <math.h>
#ifndef BLOCK
#define BLOCK 128
#endif
__device__ __forceinline__ float fused_op(float LOAD_t0) {
    const float v_softplus = ((LOAD_t0) * 1.0f > 20.0f ? (LOAD_t0) : log1pf(expf((LOAD_t0) * 1.0f)) / 1.0f);
    const float result = v_softplus;
    return result;
}

__global__ void fused_kernel(const float* __restrict__ t0, float* __restrict__ out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK)
        out[i] = fused_op(t0[i]);
}

__global__ void fused_kernel_vec4(const float* __restrict__ t0, float* __restrict__ out, int64_t n4) {
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n4; i += (int64_t)gridDim.x * BLOCK) {
        const float4 a_t0 = reinterpret_cast<const float4*>(t0)[i];
        float4 r;
        r.x = fused_op(a_t0.x); r.y = fused_op(a_t0.y); r.z = fused_op(a_t0.z); r.w = fused_op(a_t0.w);
        reinterpret_cast<float4*>(out)[i] = r;
    }
}

void launch_fused(const float* __restrict__ t0, float* out, int64_t n, cudaStream_t stream) {
    if (n == 0) return;
    if (((uintptr_t)t0 % 16 == 0) && ((uintptr_t)out % 16 == 0)) {
        int64_t n4 = n / 4;
        int blocks = (int)((n4 + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
        fused_kernel_vec4<<<blocks, BLOCK, 0, stream>>>(t0, out, n4);
        return;
    }
    int blocks = (int)((n + BLOCK - 1) / BLOCK); if (blocks > 132 * 32) blocks = 132 * 32;
    fused_kernel<<<blocks, BLOCK, 0, stream>>>(t0, out, n);
}
''',
    'model_new.py': r'''"""Written by Kernel Studio's heuristic policy: one fused elementwise kernel over 1 operator(s)."""
import torch
import torch.nn as nn

from sandbox.native import load_extension

ops = load_extension(__file__)

# The reference module, used only to create the same parameters with the same initialization.
PROBLEM_SOURCE = 'import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    """\n    Simple model that performs a Softplus activation.\n    """\n    def __init__(self):\n        super(Model, self).__init__()\n    \n    def forward(self, x: torch.Tensor) -> torch.Tensor:\n        """\n        Applies Softplus activation to the input tensor.\n\n        Args:\n            x (torch.Tensor): Input tensor of any shape.\n\n        Returns:\n            torch.Tensor: Output tensor with Softplus applied, same shape as input.\n        """\n        return torch.nn.functional.softplus(x)\n\nbatch_size = 4096\ndim = 393216\n\ndef get_inputs():\n    x = torch.rand(batch_size, dim)\n    return [x]\n\ndef get_init_inputs():\n    return []  # No special initialization inputs needed'
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
