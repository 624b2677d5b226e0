"""Packaging CUDA solutions: the wheel built on this GPU machine, installed into a fresh virtual environment
(no network), the package's own tests run there, torch.compile without graph breaks, kernels on torch's stream."""

import subprocess
import textwrap

import pytest
import torch

from sandbox.package import package_solution
from sandbox.package.verify import check_package

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

RELU = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(1023, 4099)]  # not a multiple of 4: the vectorized kernel's tail runs too


def get_init_inputs():
    return []
"""

# A native workspace: a float4 kernel compiled by nvcc alone, a stable-ABI binding that launches it on torch's
# current stream (the shim's aoti_torch_get_current_cuda_stream, declared under USE_CUDA).
WORKSPACE = {
    "kernels/relu.cu": """
        #include <cuda_runtime.h>
        #include <cstdint>

        __global__ void relu_vec4(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4) {
            int64_t stride = (int64_t)gridDim.x * blockDim.x;
            for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += stride) {
                float4 v = x[i];
                v.x = fmaxf(v.x, 0.f); v.y = fmaxf(v.y, 0.f); v.z = fmaxf(v.z, 0.f); v.w = fmaxf(v.w, 0.f);
                y[i] = v;
            }
        }

        __global__ void relu_tail(const float* x, float* y, int64_t start, int64_t n) {
            int64_t i = start + threadIdx.x;
            if (i < n) y[i] = fmaxf(x[i], 0.f);
        }

        void relu_launch(const float* x, float* y, int64_t n, cudaStream_t stream) {
            int64_t n4 = n / 4;
            if (n4 > 0) {
                int64_t blocks = (n4 + 255) / 256;
                relu_vec4<<<blocks < 4096 ? (int)blocks : 4096, 256, 0, stream>>>(
                    reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n4);
            }
            if (n % 4) relu_tail<<<1, 4, 0, stream>>>(x, y, n4 * 4, n);
        }
        """,
    "binding.cpp": """
        #include <torch/csrc/inductor/aoti_torch/c/shim.h>
        #include <torch/csrc/stable/library.h>
        #include <torch/csrc/stable/ops.h>
        #include <torch/csrc/stable/tensor.h>
        #include <cuda_runtime.h>

        using torch::stable::Tensor;

        void relu_launch(const float* x, float* y, int64_t n, cudaStream_t stream);

        Tensor relu(Tensor x) {
            Tensor y = torch::stable::empty_like(x);
            void* stream = nullptr;
            aoti_torch_get_current_cuda_stream(x.get_device_index(), &stream);
            relu_launch(static_cast<const float*>(x.data_ptr()), static_cast<float*>(y.data_ptr()), x.numel(),
                        static_cast<cudaStream_t>(stream));
            return y;
        }

        STABLE_TORCH_LIBRARY(KS_NAMESPACE, m) { m.def("relu(Tensor x) -> Tensor"); }
        STABLE_TORCH_LIBRARY_IMPL(KS_NAMESPACE, CUDA, m) { m.impl("relu", TORCH_BOX(&relu)); }
        """,
    "model_new.py": """
        import torch.nn as nn

        from sandbox.native import load_extension

        ops = load_extension(__file__)


        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()

            def forward(self, x):
                return ops.relu(x.contiguous())
        """,
}

# KernelBench style: CUDA source inline, bound by load_inline's `functions`.
INLINE = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = """
#include <ATen/cuda/CUDAContext.h>

__global__ void relu_kernel(const float* x, float* y, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.f);
}

torch::Tensor relu_cuda(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int64_t n = x.numel();
    relu_kernel<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""
cpp_source = "torch::Tensor relu_cuda(torch::Tensor x);"

relu = load_inline(name="relu_inline", cpp_sources=cpp_source, cuda_sources=cuda_source, functions=["relu_cuda"],
                   extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.relu = relu

    def forward(self, x):
        return self.relu.relu_cuda(x.contiguous())
'''

# Run in the fresh environment: no graph break, and the kernel runs on the current stream (a CUDA graph
# captured on a side stream fails if anything launches on another stream).
STREAM_AND_COMPILE = """
import torch
import {module} as pkg

x = torch.randn(1000, 1001, device="cuda")
explanation = torch._dynamo.explain(lambda t: pkg.ops.{op}(torch.sin(t)) * 2.0)(x)
assert explanation.graph_break_count == 0, explanation.break_reasons
graph, side = torch.cuda.CUDAGraph(), torch.cuda.Stream()
with torch.cuda.stream(side):
    pkg.ops.{op}(x)  # warm-up outside the capture
    side.synchronize()
    with torch.cuda.graph(graph, stream=side):
        y = pkg.ops.{op}(x)
graph.replay()
torch.cuda.synchronize()
torch.testing.assert_close(y, torch.relu(x))
print("ok")
"""


def _write(root, files):
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text).lstrip("\n"))


@pytest.fixture
def problem(tmp_path):
    (tmp_path / "relu.py").write_text(RELU)
    return tmp_path / "relu.py"


def _check(result, tmp_path, op):
    assert result.device == "cuda"
    assert result.wheel, result.notes
    check = check_package(result.sdist, tmp_path / "check", install=result.wheel)
    assert check.ok, check.log
    assert "not inferred" not in " ".join(result.notes), result.notes  # the fake came from what the kernel did
    for test in (
        "test_model_new_matches_the_reference[0]",
        "test_operators_pass_opcheck",
        "test_model_new_compiles_without_graph_breaks",
        "test_model_new_compiles_with_dynamic_shapes",
    ):
        assert f"{test} PASSED" in check.log, check.log
    run = subprocess.run(
        [check.python, "-c", STREAM_AND_COMPILE.format(module=result.module, op=op)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert run.returncode == 0 and "ok" in run.stdout, run.stdout + run.stderr


def test_a_cuda_workspace_packages_into_a_wheel_that_installs_and_passes_its_tests(problem, tmp_path):
    _write(tmp_path / "workspace", WORKSPACE)
    result = package_solution(problem, tmp_path / "workspace", tmp_path / "dist", name="ks-gpu-relu", check=False)
    assert result.wheel.endswith("-cp39-abi3-linux_x86_64.whl")
    _check(result, tmp_path, "relu")


def test_a_cuda_load_inline_solution_packages_too(problem, tmp_path):
    (tmp_path / "solution.py").write_text(INLINE)
    result = package_solution(
        problem, tmp_path / "solution.py", tmp_path / "dist", name="ks-gpu-relu-inline", check=False
    )
    assert result.operators == ["ks_gpu_relu_inline::relu_cuda"]
    _check(result, tmp_path, "relu_cuda")
