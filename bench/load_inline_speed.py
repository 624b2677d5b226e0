"""load_inline two ways, side by side: torch's own, and through the sandbox's fast build (sandbox/native/inline.py:
the C++ unit against a precompiled torch header, the library cached by content hash), cold and cached.

    python -m bench.load_inline_speed [--device cpu|cuda] [--reps 5] [--plain-reps 1]

The solution is written as KernelBench solutions are: on the CPU, C++ sources with `functions=[...]`; on CUDA, a
declaration in cpp_sources and the kernel with its torch wrapper in cuda_sources (torch/extension.h in the .cu).
Every build runs in a fresh interpreter, as the candidate worker does, and times the load_inline call alone. A cold
repetition changes a comment in the sources (a new cache key, the same work); a cached one loads the same sources
again in a new process (the fast build's cache, torch's TORCH_EXTENSIONS_DIR). The precompiled header is built once
per worker and sources' flags before anything is timed; its time is printed apart.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._gpu import gpu_missing, private_cache, table

CPP = r"""
torch::Tensor add_relu(torch::Tensor x, torch::Tensor y) {
    TORCH_CHECK(x.sizes() == y.sizes(), "add_relu: x and y differ in shape");
    auto out = torch::empty_like(x);
    const float* a = x.data_ptr<float>();
    const float* b = y.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) {
        const float s = a[i] + b[i];
        o[i] = s > 0.0f ? s : 0.0f;
    }
    return out;
}
"""

CUDA_DECLARATION = "torch::Tensor add_relu(torch::Tensor x, torch::Tensor y);"
CUDA = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

__global__ void add_relu_kernel(const float* a, const float* b, float* o, long long n) {
    const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) o[i] = fmaxf(a[i] + b[i], 0.0f);
}

torch::Tensor add_relu(torch::Tensor x, torch::Tensor y) {
    TORCH_CHECK(x.is_cuda() && x.sizes() == y.sizes(), "add_relu: CUDA tensors of one shape");
    auto out = torch::empty_like(x);
    const long long n = x.numel();
    add_relu_kernel<<<(n + 255) / 256, 256, 0, c10::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""

# Run in a fresh interpreter: times load_inline alone (torch and cpp_extension imported first), then checks it.
SCRIPT = r"""
import json, sys, time
import torch
import torch.utils.cpp_extension as ce
args = json.loads(sys.argv[1])
if args["fast"]:
    from sandbox.native import inline
    inline.install()
t0 = time.perf_counter()
module = ce.load_inline(**args["call"])
seconds = time.perf_counter() - t0
device = "cuda" if args["call"].get("cuda_sources") else "cpu"
x, y = torch.randn(4096, device=device), torch.randn(4096, device=device)
error = (module.add_relu(x, y) - torch.relu(x + y)).abs().max().item()
record = inline.BUILDS[-1] if args["fast"] else {}
print(json.dumps({"seconds": seconds, "max_error": error, "cached": record.get("cached"), "pch": record.get("pch"),
                  "split": record.get("split")}))
"""


def call(device, rep):
    """load_inline's arguments for DEVICE; REP changes a comment only (a new cache key, the same work)."""
    mark = f"\n// repetition {rep}\n"
    if device == "cuda":
        return {
            "name": "ks_bench_inline",
            "cpp_sources": CUDA_DECLARATION,
            "cuda_sources": CUDA + mark,
            "functions": ["add_relu"],
            "extra_cuda_cflags": ["-O3"],
            "verbose": False,
        }
    return {"name": "ks_bench_inline", "cpp_sources": CPP + mark, "functions": ["add_relu"], "verbose": False}


def run(args, env):
    """One load_inline in a fresh interpreter: {"seconds", "max_error", "cached", "pch", "split"}."""
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(args)], env=env, capture_output=True, text=True, timeout=1800
    )
    if proc.returncode:
        raise SystemExit(f"load_inline failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def prepare(device):
    """Build the precompiled header the fast build's sources want (once per worker); its seconds."""
    from sandbox.native import inline

    source = f"from torch.utils.cpp_extension import load_inline\nload_inline(**{call(device, 0)!r})\n"
    t0 = time.perf_counter()
    inline.prepare_headers(source.encode(), "bench.py", device)
    return time.perf_counter() - t0


def measure(device, reps, plain_reps, tmp):
    from sandbox import settings

    env = {**os.environ, "MAX_JOBS": str(settings.MAX_JOBS)}
    results = {"fast cold": [], "fast cached": [], "plain cold": [], "plain cached": []}
    for rep in range(reps):
        results["fast cold"].append(run({"fast": True, "call": call(device, rep)}, env))
        assert not results["fast cold"][-1]["cached"] and results["fast cold"][-1]["pch"]
        split = " (kernels split from torch's headers)" if results["fast cold"][-1].get("split") else ""
        print(f"fast build, cold: {results['fast cold'][-1]['seconds']:.2f} s{split}", flush=True)
    for rep in range(reps):
        results["fast cached"].append(run({"fast": True, "call": call(device, rep)}, env))
        assert results["fast cached"][-1]["cached"]
    for rep in range(plain_reps):
        folder = tmp / f"extensions-{rep}"
        results["plain cold"].append(
            run({"fast": False, "call": call(device, rep)}, {**env, "TORCH_EXTENSIONS_DIR": str(folder)})
        )
        print(f"torch's load_inline, cold: {results['plain cold'][-1]['seconds']:.1f} s", flush=True)
        results["plain cached"].append(
            run({"fast": False, "call": call(device, rep)}, {**env, "TORCH_EXTENSIONS_DIR": str(folder)})
        )
    return results


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m bench.load_inline_speed", description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--reps", type=int, default=5, help="cold and cached builds through the fast build")
    parser.add_argument("--plain-reps", type=int, default=1, help="torch's own cold builds (about a minute each)")
    args = parser.parse_args(argv)
    if args.device == "cuda" and gpu_missing("load_inline_speed"):
        print(gpu_missing("load_inline_speed"))
        return 0
    import torch
    from sandbox import settings
    from sandbox.native.build import _first_line

    print(
        f"torch {torch.__version__}, {_first_line([os.environ.get('CXX', 'c++'), '--version'])}, "
        f"{os.cpu_count()} cores, MAX_JOBS={settings.MAX_JOBS}, load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    with private_cache("ks-bench-inline-"), tempfile.TemporaryDirectory(prefix="ks-bench-inline-") as tmp:
        pch_s = prepare(args.device)
        print(f"precompiled torch header (once per worker): {pch_s:.1f} s", flush=True)
        results = measure(args.device, args.reps, args.plain_reps, Path(tmp))
    median = {k: statistics.median(r["seconds"] for r in v) for k, v in results.items()}
    rows = [
        (
            "torch's load_inline",
            len(results["plain cold"]),
            f"{median['plain cold']:.2f}",
            f"{median['plain cached']:.3f}",
        ),
        (
            "through the sandbox's fast build",
            len(results["fast cold"]),
            f"{median['fast cold']:.2f}",
            f"{median['fast cached']:.3f}",
        ),
    ]
    print()
    print(table((f"load_inline, {args.device}, median s", "n", "cold", "cached"), rows))
    errors = [r["max_error"] for v in results.values() for r in v]
    print(
        f"cold: torch's / fast = {median['plain cold'] / median['fast cold']:.1f}x; max |error| {max(errors):.1e}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"reproduce: python -m bench.load_inline_speed --device {args.device} --reps {args.reps} "
        f"--plain-reps {args.plain_reps}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
