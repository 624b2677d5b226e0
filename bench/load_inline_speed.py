"""load_inline side by side: torch's own, and through the sandbox's fast build (sandbox/native/inline.py: C++ units
against precompiled torch headers, light ones where sandbox/native/light.py shows they change nothing, the kernels of a
`.cu` apart from torch's headers, the library cached by content hash), cold and cached; and the fast build with every
C++ unit against torch/extension.h (KS_INLINE_LIGHT_HEADERS=False, as before the light headers).

    python -m bench.load_inline_speed [--device cpu|cuda] [--reps 5] [--full-reps 2] [--plain-reps 1]

The solution is written as KernelBench solutions are: on the CPU, C++ sources with `functions=[...]`; on CUDA, a
declaration in cpp_sources and the kernel with its torch wrapper in cuda_sources (torch/extension.h in the .cu).
Every build runs in a fresh interpreter, as the candidate worker does, and times the load_inline call alone. A cold
repetition changes a comment in the sources (a new cache key, the same work); a cached one loads the same sources
again in a new process (the fast build's cache, torch's TORCH_EXTENSIONS_DIR). The precompiled headers are built once
per worker and sources' flags before anything is timed; their time is printed apart. Each cold fast build's stages
(ninja's log: kernels, host, binding, check, link; units of one stage run side by side) and the header each C++ unit
was compiled against are printed below the table.
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
print(json.dumps({"seconds": seconds, "max_error": error, **{k: record.get(k) for k in ("cached", "pch", "split",
                  "stages", "headers")}}))
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


def measure(device, reps, full_reps, plain_reps, tmp):
    from sandbox import settings

    env = {**os.environ, "MAX_JOBS": str(settings.MAX_JOBS)}
    results = {k: [] for k in ("fast cold", "fast cached", "full cold", "plain cold", "plain cached")}
    for rep in range(reps):
        results["fast cold"].append(run({"fast": True, "call": call(device, rep)}, env))
        assert not results["fast cold"][-1]["cached"] and results["fast cold"][-1]["pch"]
        split = " (kernels split from torch's headers)" if results["fast cold"][-1].get("split") else ""
        print(f"fast build, cold: {results['fast cold'][-1]['seconds']:.2f} s{split}", flush=True)
    for rep in range(full_reps):
        # New sources (a cache key of their own), every C++ unit against torch/extension.h.
        full = run({"fast": True, "call": call(device, 1000 + rep)}, {**env, "KS_INLINE_LIGHT_HEADERS": "False"})
        results["full cold"].append(full)
        print(f"fast build, torch/extension.h in every unit, cold: {full['seconds']:.2f} s", flush=True)
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
    parser.add_argument(
        "--full-reps", type=int, default=2, help="cold fast builds with torch/extension.h in every unit (before)"
    )
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
        print(f"precompiled torch headers (once per worker, side by side): {pch_s:.1f} s", flush=True)
        results = measure(args.device, args.reps, args.full_reps, args.plain_reps, Path(tmp))
    median = {k: statistics.median(r["seconds"] for r in v) if v else None for k, v in results.items()}
    rows = [
        ("torch's load_inline", len(results["plain cold"]), _s(median["plain cold"], 2), _s(median["plain cached"], 3)),
        ("fast build, torch/extension.h in every unit", len(results["full cold"]), _s(median["full cold"], 2), ""),
        (
            "fast build (light headers where equivalent)",
            args.reps,
            _s(median["fast cold"], 2),
            _s(median["fast cached"], 3),
        ),
    ]
    print()
    print(table((f"load_inline, {args.device}, median s", "n", "cold", "cached"), rows))
    print()
    print(table(("stage of a cold build, median s", "fast", "torch/extension.h in every unit"), _stage_rows(results)))
    for label in ("fast cold", "full cold"):
        for headers in sorted({json.dumps(r["headers"], sort_keys=True) for r in results[label]}):
            print(f"{label}: headers {headers}")
    errors = [r["max_error"] for v in results.values() for r in v]
    ratios = [f"{name} / fast = {median[key] / median['fast cold']:.1f}x" for name, key in
              (("torch's", "plain cold"), ("every unit full", "full cold")) if median[key]]  # fmt: skip
    print(f"cold: {'; '.join(ratios)}; max |error| {max(errors):.1e}; load average {os.getloadavg()[0]:.1f}")
    print(
        f"reproduce: python -m bench.load_inline_speed --device {args.device} --reps {args.reps} "
        f"--full-reps {args.full_reps} --plain-reps {args.plain_reps}"
    )
    return 0


def _s(value, digits):
    return "" if value is None else f"{value:.{digits}f}"


def _stage_rows(results):
    """(stage, median s of the fast cold builds, of the full ones) for every stage either recorded."""
    names = ["kernels", "host", "binding", "c++", "check", "link"]
    rows = []
    for name in names:
        cells = []
        for label in ("fast cold", "full cold"):
            values = [r["stages"][name] for r in results[label] if name in (r.get("stages") or {})]
            cells.append(_s(statistics.median(values), 2) if values else "")
        if any(cells):
            rows.append((name, *cells))
    totals = [
        _s(statistics.median(r["seconds"] for r in results[k]), 2) if results[k] else ""
        for k in ("fast cold", "full cold")
    ]
    return rows + [("load_inline call (all of it)", *totals)]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
