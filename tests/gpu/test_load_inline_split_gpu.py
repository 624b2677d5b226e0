"""load_inline's `.cu` on a real GPU through the sandbox's build (issue 17 part 4): a KernelBench-style source is
split into its kernels and its torch code (sandbox.native.cuda_split) and computes what torch does; a template
kernel, and a kernel unit that does not compile without torch's headers, are built whole and compute it too."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[2]

SPLITS = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

#define BLOCK 256
__device__ __forceinline__ float relu(float v) { return v > 0.f ? v : 0.f; }
struct Params { float scale; };

__global__ void add_relu_kernel(const float* __restrict__ a, const float* b, float* o, int64_t n, Params p) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) o[i] = relu(a[i] + b[i]) * p.scale;
}

torch::Tensor add_relu(torch::Tensor a, torch::Tensor b, double scale) {
    TORCH_CHECK(a.is_cuda() && a.sizes() == b.sizes(), "add_relu: CUDA tensors of one shape");
    auto o = torch::empty_like(a);
    int64_t n = a.numel();
    add_relu_kernel<<<(n + BLOCK - 1) / BLOCK, BLOCK, 0, at::cuda::getCurrentCUDAStream()>>>(
        a.data_ptr<float>(), b.data_ptr<float>(), o.data_ptr<float>(), n, Params{(float)scale});
    return o;
}
"""

TEMPLATE = r"""
#include <torch/extension.h>

template <typename scalar_t>
__global__ void add_relu_kernel(const scalar_t* a, const scalar_t* b, scalar_t* o, int64_t n, float scale) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) { scalar_t v = a[i] + b[i]; o[i] = (v > scalar_t(0) ? v : scalar_t(0)) * scalar_t(scale); }
}

torch::Tensor add_relu(torch::Tensor a, torch::Tensor b, double scale) {
    auto o = torch::empty_like(a);
    int64_t n = a.numel();
    AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "add_relu", [&] {
        add_relu_kernel<scalar_t><<<(n + 255) / 256, 256>>>(
            a.data_ptr<scalar_t>(), b.data_ptr<scalar_t>(), o.data_ptr<scalar_t>(), n, (float)scale);
    });
    return o;
}
"""

# __half comes from cuda_fp16.h, which only torch's headers include here: the kernel unit does not compile alone.
NEEDS_TORCH_HEADERS = r"""
#include <torch/extension.h>

__global__ void add_relu_kernel(const float* a, const float* b, float* o, int64_t n, float scale) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) {
        __half h = __float2half(fmaxf(a[i] + b[i], 0.f));
        o[i] = __half2float(h) * scale;
    }
}

torch::Tensor add_relu(torch::Tensor a, torch::Tensor b, double scale) {
    auto o = torch::empty_like(a);
    int64_t n = a.numel();
    add_relu_kernel<<<(n + 255) / 256, 256>>>(a.data_ptr<float>(), b.data_ptr<float>(), o.data_ptr<float>(), n,
                                               (float)scale);
    return o;
}
"""

SCRIPT = r"""
import json, sys
import torch
import torch.utils.cpp_extension as ce
from sandbox.native import inline
inline.install()
name, source, tolerance = sys.argv[1], sys.argv[2], float(sys.argv[3])
module = ce.load_inline(name=name, cpp_sources="torch::Tensor add_relu(torch::Tensor a, torch::Tensor b, double scale);",
                        cuda_sources=source, functions=["add_relu"])
torch.manual_seed(0)
errors = []
for n in (4096, 1000003):
    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = module.add_relu(a, b, 0.5)
    torch.cuda.synchronize()
    errors.append(float((out - torch.relu(a + b) * 0.5).abs().max()))
print(json.dumps({"build": inline.BUILDS[-1], "errors": errors}))
"""


def _load(name, source):
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, name, source, "0"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_kernelbench_style_cuda_source_builds_split_and_computes_what_torch_does():
    result = _load("ks_split_add_relu", SPLITS)
    assert result["build"]["via"] == "native" and result["build"]["split"] is True, result
    assert max(result["errors"]) == 0.0, result


def test_a_template_kernel_is_built_whole_and_computes_what_torch_does():
    result = _load("ks_split_template", TEMPLATE)
    assert result["build"]["split"] is False and result["build"]["via"] == "native", result
    assert max(result["errors"]) == 0.0, result


def test_a_kernel_unit_that_needs_torchs_headers_is_rebuilt_whole():
    result = _load("ks_split_needs_torch", NEEDS_TORCH_HEADERS)
    assert result["build"]["split"] is False and result["build"]["via"] == "native", result
    assert max(result["errors"]) < 1e-2, result  # the kernel rounds through half on purpose
