"""The attention family's CUDA kernels side by side on one GPU: the tiled kernel, the row kernel (G threads a row,
as the launcher picks G) and PyTorch's scaled_dot_product_attention, each timed by CUDA events in one run, with
the largest difference from SDPA. FP32 throughout (no TF32: these kernels do not use tensor cores).

    python -m bench.cuda_attention [--reps 20] [--emit DIR]

--emit writes the extension's CUDA source to DIR and exits (no GPU needed: `nvcc -c` checks it).
"""

import argparse
import statistics
import sys
from pathlib import Path

from bench._gpu import REPO, gpu_missing

HEADER_DIR = REPO / "agent" / "heuristic" / "dag"
# (name, batch x heads, query length, key length, head dim, value dim, causal): a short causal SDPA, minGPT's
# attention (KernelBench level 3), long and wide heads, a few rows of a decoder, a small multi-head layer
SHAPES = [
    ("causal 32x256x64", 32, 256, 256, 64, 64, True),
    ("minGPT 1024x512x96 causal", 1024, 512, 512, 96, 96, True),
    ("long 64x2048x64", 64, 2048, 2048, 64, 64, False),
    ("wide 64x1024x128", 64, 1024, 1024, 128, 128, False),
    ("encoder 16x64x32", 16, 64, 64, 32, 32, False),
    ("few rows 8x16x1024x64", 8, 16, 1024, 64, 64, False),
]


def source():
    """The extension: for each (E, EV) of SHAPES, the tiled and row launches as functions taking torch tensors."""
    pairs = sorted({(e, ev) for *_, e, ev, _ in SHAPES})
    lines = [
        '#include "ks_attention.cuh"',
        "#include <torch/extension.h>",
        "",
        "static const KsMask NO_MASK{0, {}, {}, 0, 0};",
    ]
    for e, ev in pairs:
        tile = 32 if e + ev <= 256 else 16
        lines += [
            f"void tiled_{e}_{ev}(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor out, bool causal) {{",
            f"    using S = KsTiledShape<{e}, {ev}>;",
            "    int device = q.get_device();",
            f'    if (!ks_attention_tiled_fits<{e}, {ev}, S::RM, S::CK, float>(device)) throw std::runtime_error("no fit");',
            f"    ks_attention_tiled_launch<{e}, {ev}, S::RM, S::CK, float>(q.data_ptr<float>(), k.data_ptr<float>(),",
            "        v.data_ptr<float>(), nullptr, out.data_ptr<float>(), q.size(0), q.size(1), k.size(1),",
            f"        {1 / e**0.5!r}f, causal, 0, 0.f, NO_MASK, (cudaStream_t)0);",
            "}",
            f"void rows_{e}_{ev}(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor out, bool causal,",
            "                   int g) {",
            "    int device = q.get_device();",
            "    auto stream = (cudaStream_t)0;",
            "    const float* a = q.data_ptr<float>(); const float* b = k.data_ptr<float>();",
            "    const float* c = v.data_ptr<float>(); float* o = out.data_ptr<float>();",
            "    const int64_t n = q.size(0), lq = q.size(1), lk = k.size(1);",
            f"    const float s = {1 / e**0.5!r}f;",
            "    switch (g) {",
        ]
        for g in (1, 2, 4, 8):
            lines.append(
                f"        case {g}: return ks_attention_launch<{e}, {ev}, {tile}, {g}, float>(a, b, c, nullptr, o, n, "
                f"lq, lk, s, causal, 0, 0.f, NO_MASK, device, stream);"
            )
        lines += ["    }", "}"]
    lines.append("PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {")
    for e, ev in pairs:
        lines.append(f'    m.def("tiled_{e}_{ev}", &tiled_{e}_{ev}); m.def("rows_{e}_{ev}", &rows_{e}_{ev});')
    lines.append("}")
    return "\n".join(lines) + "\n"


def row_threads(batch, lq, sms):
    """The launcher's G: the fewest threads a row (a power of two, at most 8) putting ~1024 threads on each SM."""
    g = 1
    while g < 8 and batch * lq * g < sms * 1024:
        g *= 2
    return g


def timed(fn, reps):
    import torch

    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--emit", type=Path, help="write the extension's CUDA source here and exit")
    args = parser.parse_args(argv)
    if args.emit:
        args.emit.mkdir(parents=True, exist_ok=True)
        (args.emit / "attention_bench.cu").write_text(source())
        print(f"wrote {args.emit / 'attention_bench.cu'} (compile with -I {HEADER_DIR})")
        return 0
    missing = gpu_missing("cuda_attention")
    if missing:
        print(missing)
        return 0
    import torch
    import torch.nn.functional as F
    from torch.utils.cpp_extension import load_inline

    torch.backends.cuda.matmul.allow_tf32 = False
    ext = load_inline(
        "ks_attention_bench",
        cpp_sources="",
        cuda_sources=source(),
        extra_include_paths=[str(HEADER_DIR)],
        extra_cuda_cflags=["-O3", "-std=c++17"],
        verbose=False,
    )
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"{torch.cuda.get_device_name()}, {sms} SMs; median of {args.reps} runs, ms")
    print("| shape | SDPA | row kernel (G) | tiled | tiled vs row | tiled vs SDPA | max diff tiled / row |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, batch, lq, lk, e, ev, causal in SHAPES:
        torch.manual_seed(0)
        q, k = torch.randn(batch, lq, e, device="cuda"), torch.randn(batch, lk, e, device="cuda")
        v = torch.randn(batch, lk, ev, device="cuda")
        tiled_out, row_out = torch.empty(batch, lq, ev, device="cuda"), torch.empty(batch, lq, ev, device="cuda")
        g = row_threads(batch, lq, sms)
        tiled, rows = getattr(ext, f"tiled_{e}_{ev}"), getattr(ext, f"rows_{e}_{ev}")
        sdpa_ms = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), args.reps)
        row_ms = timed(lambda: rows(q, k, v, row_out, causal, g), args.reps)
        tiled_ms = timed(lambda: tiled(q, k, v, tiled_out, causal), args.reps)
        expected = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        diffs = [float((x - expected).abs().max()) for x in (tiled_out, row_out)]
        print(
            f"| {name} | {sdpa_ms:.4f} | {row_ms:.4f} ({g}) | {tiled_ms:.4f} | {row_ms / tiled_ms:.2f}x | "
            f"{sdpa_ms / tiled_ms:.2f}x | {diffs[0]:.1e} / {diffs[1]:.1e} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
