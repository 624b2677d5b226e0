"""sandbox.native.cuda_split: a load_inline `.cu` read at the top level into a kernel unit without torch's headers
and a host unit whose launches call the kernels' launchers; what it cannot split safely is named, not guessed."""

import re
import shutil
import subprocess

import pytest

from sandbox.native.cuda_split import Unsplittable, split

SOLUTION = r"""#include <torch/types.h>
#include <cuda.h>
#include <cuda_runtime.h>
#line 12 "/work/solution.py"
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

#define BLOCK 256
// a helper { with a brace in a comment
__device__ __forceinline__ float relu(float v) { return v > 0.f ? v : 0.f; }
__host__ __device__ inline int cdiv(int a, int b) { return (a + b - 1) / b; }

struct Params { int n; float scale; };

__global__ void __launch_bounds__(256) add_relu_kernel(const float* __restrict__ a, const float* b, float* o,
                                                       int64_t n, Params p) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) { o[i] = relu(a[i] + b[i]) * p.scale; }
}

__global__ void fill_kernel(float* o, float v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) o[i] = v;
}

torch::Tensor add_relu(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.is_cuda(), "a must be a CUDA tensor {");
    auto o = torch::empty_like(a);
    int64_t n = a.numel();
    Params p{(int)n, 1.0f};
    add_relu_kernel<<<cdiv(n, BLOCK), BLOCK, 0, at::cuda::getCurrentCUDAStream()>>>(
        a.data_ptr<float>(), b.data_ptr<float>(), o.data_ptr<float>(), n, p);
    return o;
}

torch::Tensor filled(torch::Tensor like, double v) {
    auto o = torch::empty_like(like);
    fill_kernel<<<cdiv(o.numel(), 128), 128>>>(o.data_ptr<float>(), (float)v, (int)o.numel());
    return o;
}
"""


def _line_of(text, needle):
    return text[: text.index(needle)].count("\n")


def test_kernels_go_to_a_unit_without_torchs_headers_and_launches_become_launcher_calls():
    device, host = split(SOLUTION)
    assert not re.search(r"#\s*include\s*<(torch|ATen|c10)/", device)
    assert "__global__ void __launch_bounds__(256) add_relu_kernel" in device
    assert "relu(float v)" in device and "cdiv(int a" in device and "struct Params" in device
    assert 'extern "C" void ks_launch_add_relu_kernel(dim3 ks_grid, dim3 ks_block, size_t ks_shared' in device
    assert "add_relu_kernel<<<ks_grid, ks_block, ks_shared, ks_stream>>>(a, b, o, n, p);" in device
    assert "fill_kernel<<<ks_grid, ks_block, ks_shared, ks_stream>>>(o, v, n);" in device
    assert "<<<" not in host and "__global__" not in host and "relu(float v)" not in host
    assert host.startswith("#include <torch/extension.h>")  # the precompiled torch header applies
    assert "cdiv(int a" in host and "struct Params" in host  # host-device helpers and types in both
    assert (
        "ks_launch_add_relu_kernel(dim3(cdiv(n, BLOCK)), dim3(BLOCK), (size_t)(0), "
        "(cudaStream_t)(at::cuda::getCurrentCUDAStream()), a.data_ptr<float>()"
    ) in host
    # Missing shared memory and stream default to 0, as in a launch.
    assert "ks_launch_fill_kernel(dim3(cdiv(o.numel(), 128)), dim3(128), (size_t)(0), (cudaStream_t)(0), " in host
    # Each launcher is declared after the types its parameters name.
    assert _line_of(host, 'extern "C" void ks_launch_add_relu_kernel') > _line_of(host, "struct Params")


def test_both_units_keep_the_sources_line_numbers():
    # Past each unit's own includes, `#line 1` starts the source's numbering again.
    device, host = (unit.split("#line 1\n", 1)[1] for unit in split(SOLUTION))
    assert _line_of(host, "torch::Tensor add_relu(") == _line_of(SOLUTION, "torch::Tensor add_relu(")
    assert _line_of(host, "torch::Tensor filled(") == _line_of(SOLUTION, "torch::Tensor filled(")
    assert _line_of(device, "__global__ void fill_kernel") == _line_of(SOLUTION, "__global__ void fill_kernel")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_the_kernel_unit_compiles_with_nvcc_alone(tmp_path):
    device, _ = split(SOLUTION)
    (tmp_path / "k.cu").write_text(device)
    proc = subprocess.run(
        ["nvcc", "-c", "k.cu", "-o", "k.o", "-std=c++17", "--compiler-options", "-fPIC"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    symbols = subprocess.run(["nm", "k.o"], cwd=tmp_path, capture_output=True, text=True).stdout
    assert " T ks_launch_add_relu_kernel" in symbols and " T ks_launch_fill_kernel" in symbols


KERNEL = "__global__ void k(float* o, int n) { if (threadIdx.x < n) o[threadIdx.x] = 1.f; }\n"
LAUNCH = "torch::Tensor f(torch::Tensor o) { k<<<1, 32>>>(o.data_ptr<float>(), 32); return o; }\n"


@pytest.mark.parametrize(
    "source, why",
    [
        (
            "template <typename scalar_t>\n__global__ void k(scalar_t* o) {}\n"
            "torch::Tensor f(torch::Tensor o) { k<float><<<1, 1>>>(o.data_ptr<float>()); return o; }\n",
            "template kernel",
        ),
        (
            KERNEL + "torch::Tensor f(torch::Tensor o) { cudaFuncSetAttribute(k, "
            "cudaFuncAttributeMaxDynamicSharedMemorySize, 1 << 16); k<<<1, 32>>>(o.data_ptr<float>(), 32); "
            "return o; }\n",
            "outside a launch",
        ),
        (
            "__constant__ float table[16];\n" + KERNEL + "void set(const float* h) { "
            "cudaMemcpyToSymbol(table, h, 64); }\n" + LAUNCH,
            "outside a launch",
        ),
        ("__global__ void k(at::Half* o) { }\n" + LAUNCH, "torch's"),
        ("#ifdef FAST\n#define W 4\n#endif\n" + KERNEL + LAUNCH, "conditional"),
        ("namespace my {\n" + KERNEL + "}\n" + LAUNCH, "namespace"),
        ("torch::Tensor f(torch::Tensor o) { return o; }\n", "no __global__ kernel"),
    ],
)
def test_what_cannot_be_split_safely_is_named(source, why):
    with pytest.raises(Unsplittable, match=why):
        split(source)


def test_the_host_unit_of_a_split_is_eligible_for_the_light_torch_header():
    # Its launcher declarations and helpers keep it plain torch code: sandbox.native.light may compile it against
    # torch/types.h (its check still decides whether the object is linked).
    from sandbox.native import light

    _, host = split(SOLUTION)
    assert light.eligible(host) == ("types", "")
