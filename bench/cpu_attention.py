"""The CPU target's attention kernel (ks_attention.h) against a base revision's and eager PyTorch's SDPA, side by side.

    python -m bench.cpu_attention [--base REV_OR_FILE] [--threads N] [--repeats R]

Both headers are compiled with the CPU target's kernel flags (sandbox.native.build.toolchain) into two small libraries
called through ctypes; each shape times the base kernel, this tree's kernel and torch's SDPA in alternation, on the
same inputs, and prints the fastest of each (the least disturbed by other work on the machine) and the ratios (> 1: this tree is faster). Outputs are checked against SDPA
in float64 first. The default base is the per-row kernel this file was written to replace.
"""

import argparse
import ctypes
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HEADER = "agent/heuristic/dag/ks_attention.h"
# (name, batch*heads, lq, lk, head dim, causal, key padding): the user modules' shapes, then short and long sequences
SHAPES = [
    ("mha_key_padding", 16, 64, 64, 32, False, True),
    ("torch_encoder_layer", 16, 64, 64, 32, False, False),
    ("llama_block", 8, 128, 128, 64, True, False),
    ("short_e128", 32, 16, 16, 128, False, False),
    ("long_e64_causal", 4, 1024, 1024, 64, True, False),
    ("long_e128_padding", 4, 512, 512, 128, False, True),
    ("decode_e64", 32, 1, 512, 64, False, False),
    ("lq4_e64", 32, 4, 512, 64, False, False),
    ("lq8_e64", 32, 8, 512, 64, False, False),
    ("odd_e40_lq_ne_lk", 6, 100, 77, 40, True, True),
]
ENTRY = """#include "ks_attention.h"
extern "C" void run(int64_t batch, int64_t lq, int64_t lk, int64_t e, float scale, bool causal, const float* q,
                    const float* k, const float* v, const float* mask, int64_t heads, float* out) {
    // a key-padding mask [batch / heads, lk] broadcast over heads and queries, as nn.MultiheadAttention's
    const KsMask map{2, {batch / heads, heads}, {lk, 0}, 0, 1};
    const KsAttention a{batch, lq, lk, e, e, scale, causal, mask ? 1 : 0, 0.f, map};
    ks_attention(a, q, k, v, mask, out, true);
}
"""


def build(header_text, folder):
    from sandbox.native.build import toolchain

    tc = toolchain("cpu")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ks_attention.h").write_text(header_text)
    (folder / "entry.cpp").write_text(ENTRY)
    flags = [f for f in tc["kernel_flags"] if f != "-Ikernels"]
    argv = [tc["cxx"], *flags, f"-I{folder}", "-shared", "-fopenmp", "entry.cpp", "-o", "lib.so"]
    subprocess.run(argv, cwd=folder, check=True)
    lib = ctypes.CDLL(str(folder / "lib.so"))
    lib.run.restype = None
    lib.run.argtypes = [ctypes.c_int64] * 4 + [ctypes.c_float, ctypes.c_bool] + [ctypes.c_void_p] * 4
    lib.run.argtypes += [ctypes.c_int64, ctypes.c_void_p]
    return lib


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m bench.cpu_attention", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--base", default="de96752", help="the revision whose ks_attention.h is the baseline, or a header file"
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args(argv)
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(args.threads)
    import os

    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    base_text = (
        Path(args.base).read_text()
        if Path(args.base).is_file()
        else subprocess.run(
            ["git", "show", f"{args.base}:{HEADER}"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout
    )
    with tempfile.TemporaryDirectory(prefix="ks-bench-attention-") as tmp:
        libs = {
            "base": build(base_text, Path(tmp) / "base"),
            "new": build((REPO / HEADER).read_text(), Path(tmp) / "new"),
        }
        print("| shape | base ms | new ms | sdpa ms | new vs base | new vs sdpa | max err |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        torch.manual_seed(0)
        for name, batch, lq, lk, e, causal, padding in SHAPES:
            heads = 4 if batch % 4 == 0 else 2
            q, k, v = torch.randn(batch, lq, e), torch.randn(batch, lk, e), torch.randn(batch, lk, e)
            lengths = torch.randint(1, lk + 1, (batch // heads,))
            mask = torch.zeros(batch // heads, lk)
            mask[torch.arange(lk)[None, :] >= lengths[:, None]] = float("-inf")
            scale = e**-0.5
            torch_mask = mask[:, None, None, :].expand(-1, heads, lq, lk).reshape(batch, lq, lk) if padding else None
            if causal and padding:
                keep = torch.ones(lq, lk, dtype=torch.bool).tril()
                torch_mask = torch_mask.masked_fill(~keep, float("-inf"))

            def sdpa(dtype=torch.float32):
                m = torch_mask.to(dtype) if torch_mask is not None else None
                return F.scaled_dot_product_attention(
                    q.to(dtype), k.to(dtype), v.to(dtype), attn_mask=m, is_causal=causal and not padding
                )

            outs = {key: torch.empty(batch, lq, e) for key in libs}

            def call(key):
                libs[key].run(
                    batch,
                    lq,
                    lk,
                    e,
                    scale,
                    causal,
                    q.data_ptr(),
                    k.data_ptr(),
                    v.data_ptr(),
                    mask.data_ptr() if padding else None,
                    heads,
                    outs[key].data_ptr(),
                )

            expected = sdpa(torch.float64).float()
            for key in libs:
                call(key)
            err = max((outs[key] - expected).abs().max().item() for key in libs)
            fns = {"base": lambda: call("base"), "new": lambda: call("new"), "sdpa": sdpa}
            times = {key: [] for key in fns}
            for _ in range(args.repeats):
                for key, fn in fns.items():
                    t0 = time.perf_counter()
                    fn()
                    times[key].append(time.perf_counter() - t0)
            ms = {key: min(t) * 1e3 for key, t in times.items()}
            print(
                f"| {name} | {ms['base']:.3f} | {ms['new']:.3f} | {ms['sdpa']:.3f} | {ms['base'] / ms['new']:.2f}x | "
                f"{ms['sdpa'] / ms['new']:.2f}x | {err:.1e} |",
                flush=True,
            )
    print(f"reproduce: python -m bench.cpu_attention --base {args.base} --threads {args.threads}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
