"""Cold build of one ReLU kernel two ways, side by side: a native workspace (nvcc sees CUDA headers only, the
stable-ABI binding sees torch's C shim) against load_inline of the same kernel body with torch/extension.h in
the .cu, as KernelBench solutions are written; then rebuilds of unchanged sources. Needs a CUDA GPU.

    python -m bench.build_speed [--reps 5] [--inline-reps 1]

Native builds run unjailed through sandbox.native.build_workspace with a private cache whose entry is removed
before each cold repetition (the per-worker cache is otherwise kept). Each load_inline runs in a fresh
interpreter with a fresh TORCH_EXTENSIONS_DIR; its rebuild reuses that folder, as a worker would.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._gpu import gpu_missing, private_cache, table

KERNEL = r"""
__global__ void relu_kernel(const float4* __restrict__ x, float4* __restrict__ y, long long n4) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride) {
    float4 v = x[i];
    v.x = fmaxf(v.x, 0.f);
    v.y = fmaxf(v.y, 0.f);
    v.z = fmaxf(v.z, 0.f);
    v.w = fmaxf(v.w, 0.f);
    y[i] = v;
  }
}

static unsigned relu_blocks(long long n4) {
  const long long blocks = (n4 + 255) / 256;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks < 4096 ? blocks : 4096));
}
"""

NATIVE_CU = (
    r"""#include <cuda_runtime.h>
#include <cstdint>
"""
    + KERNEL
    + r"""
const char* ks_bench_relu(const float* x, float* y, int64_t n, void* stream) {
  const long long n4 = n / 4;  // the binding checks n % 4 == 0
  relu_kernel<<<relu_blocks(n4), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n4);
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}
"""
)

NATIVE_BINDING = r"""#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/tensor.h>

#include <stdexcept>
#include <string>

const char* ks_bench_relu(const float* x, float* y, int64_t n, void* stream);
extern "C" AOTITorchError aoti_torch_get_current_cuda_stream(int32_t device_index, void** ret_stream);

#define KS_LIBRARY(ns, m) STABLE_TORCH_LIBRARY(ns, m)
#define KS_LIBRARY_IMPL(ns, k, m) STABLE_TORCH_LIBRARY_IMPL(ns, k, m)

namespace {
#if defined(TORCH_VERSION_2_10_0) && TORCH_FEATURE_VERSION >= TORCH_VERSION_2_10_0
using torch::stable::detail::to;
#endif
using torch::stable::Tensor;

void boxed_relu(StableIValue* stack, uint64_t, uint64_t) {
  Tensor x = to<Tensor>(stack[0]);
  Tensor out = to<Tensor>(stack[1]);
  if (x.numel() % 4 != 0) throw std::runtime_error("relu: the element count must be a multiple of 4");
  void* stream = nullptr;
  if (aoti_torch_get_current_cuda_stream(x.get_device_index(), &stream) != AOTI_TORCH_SUCCESS) {
    throw std::runtime_error("cannot get the current CUDA stream");
  }
  const char* err = ks_bench_relu(static_cast<const float*>(x.data_ptr()), static_cast<float*>(out.data_ptr()),
                                  x.numel(), stream);
  if (err != nullptr) throw std::runtime_error(std::string("relu: ") + err);
}
}  // namespace

KS_LIBRARY(KS_NAMESPACE, m) { m.def("relu(Tensor x, Tensor(a!) out) -> ()"); }
KS_LIBRARY_IMPL(KS_NAMESPACE, CUDA, m) { m.impl("relu", &boxed_relu); }
"""

INLINE_CU = (
    r"""#include <torch/extension.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>
"""
    + KERNEL
    + r"""
torch::Tensor relu(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous() && x.numel() % 4 == 0,
              "relu takes a contiguous float32 CUDA tensor of 4k elements");
  auto y = torch::empty_like(x);
  const long long n4 = x.numel() / 4;
  relu_kernel<<<relu_blocks(n4), 256, 0, c10::cuda::getCurrentCUDAStream()>>>(
      reinterpret_cast<const float4*>(x.data_ptr<float>()), reinterpret_cast<float4*>(y.data_ptr<float>()), n4);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""
)

# Run in a fresh interpreter: times load_inline alone, then checks the result.
INLINE_SCRIPT = r"""
import json, sys, time
import torch
from torch.utils.cpp_extension import load_inline
sources = json.loads(sys.argv[1])
t0 = time.perf_counter()
module = load_inline(name="ks_bench_relu", cpp_sources=sources["cpp"], cuda_sources=sources["cu"],
                     functions=["relu"], extra_cuda_cflags=["-O3"], verbose=False)
seconds = time.perf_counter() - t0
x = torch.randn(1 << 20, device="cuda")
print(json.dumps({"seconds": seconds, "max_error": (module.relu(x) - torch.relu(x)).abs().max().item()}))
"""


def write_workspace(folder):
    (folder / "kernels").mkdir(parents=True)
    (folder / "kernels" / "relu.cu").write_text(NATIVE_CU)
    (folder / "binding.cpp").write_text(NATIVE_BINDING)
    return folder


def native_builds(workspace, reps):
    """(cold seconds per repetition, cached seconds per repetition, max error of the built op)."""
    import torch
    from sandbox.native.build import build_workspace, cached_library, import_library, workspace_key

    key = workspace_key(workspace, "cuda")
    entry = cached_library(key, f"ks_{key[:16]}").parent
    cold, cached = [], []
    for _ in range(reps):
        shutil.rmtree(entry, ignore_errors=True)
        t0 = time.perf_counter()
        result = build_workspace(workspace, "cuda")
        cold.append(time.perf_counter() - t0)
        assert not result.cached
    for _ in range(reps):
        t0 = time.perf_counter()
        result = build_workspace(workspace, "cuda")
        cached.append(time.perf_counter() - t0)
        assert result.cached
    ops = import_library(result.library, result.module_name)
    x = torch.randn(1 << 20, device="cuda")
    out = torch.empty_like(x)
    ops.relu(x, out)
    return cold, cached, (out - torch.relu(x)).abs().max().item()


def inline_build(extensions_dir):
    """One load_inline in a fresh interpreter: {"seconds", "max_error"}."""
    from sandbox import settings

    env = {**os.environ, "TORCH_EXTENSIONS_DIR": str(extensions_dir), "MAX_JOBS": str(settings.MAX_JOBS)}
    sources = json.dumps({"cpp": "torch::Tensor relu(torch::Tensor x);", "cu": INLINE_CU})
    proc = subprocess.run(
        [sys.executable, "-c", INLINE_SCRIPT, sources], env=env, capture_output=True, text=True, timeout=900
    )
    if proc.returncode:
        raise SystemExit(f"load_inline failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m bench.build_speed", description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5, help="cold native builds (median taken)")
    parser.add_argument("--inline-reps", type=int, default=1, help="cold load_inline builds (about a minute each)")
    args = parser.parse_args(argv)
    missing = gpu_missing("build_speed")
    if missing:
        print(missing)
        return 0
    import torch
    from sandbox import settings
    from sandbox.native.build import toolchain

    tc = toolchain("cuda")
    print(
        f"torch {torch.__version__}, {torch.cuda.get_device_name()}, {tc['nvcc_version']}, {tc['cxx_version']}, "
        f"MAX_JOBS={settings.MAX_JOBS}",
        flush=True,
    )
    with private_cache("ks-bench-build-"), tempfile.TemporaryDirectory(prefix="ks-bench-build-") as tmp:
        tmp = Path(tmp)
        cold, cached, native_error = native_builds(write_workspace(tmp / "workspace"), args.reps)
        print(f"native cold builds: {', '.join(f'{s:.2f}' for s in cold)} s", flush=True)
        inline = []
        for i in range(args.inline_reps):
            inline.append(inline_build(tmp / f"extensions-{i}"))
            print(f"load_inline cold build: {inline[-1]['seconds']:.1f} s", flush=True)
        rebuild = inline_build(tmp / f"extensions-{args.inline_reps - 1}")
    native_cold, inline_cold = statistics.median(cold), statistics.median(r["seconds"] for r in inline)
    rows = [
        ("native workspace, cold (nvcc + stable binding + link)", len(cold), f"{native_cold:.2f}"),
        ("load_inline, cold (torch/extension.h in the .cu)", len(inline), f"{inline_cold:.2f}"),
        ("native workspace, unchanged sources (cache hit)", len(cached), f"{statistics.median(cached):.4f}"),
        ("load_inline, unchanged sources (fresh process)", 1, f"{rebuild['seconds']:.2f}"),
    ]
    print()
    print(table(("build of one ReLU kernel", "n", "median s"), rows))
    print(
        f"cold load_inline / cold native: {inline_cold / native_cold:.1f}x   "
        f"(max |error| native {native_error:.1e}, load_inline {max(r['max_error'] for r in inline):.1e})"
    )
    print(f"reproduce: python -m bench.build_speed --reps {args.reps} --inline-reps {args.inline_reps}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
