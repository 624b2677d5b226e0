"""Decoding speed of the RL actor side by side: milliseconds per generated token for a batch of rows, through the
rollouts' BatchedGenerator (transformers `generate`, dynamic and static KV cache) and through bare forward loops (a
dynamic cache in eager mode; a static cache with the step compiled, mode reduce-overhead), which show how much of a
step is `generate`'s own bookkeeping and how much the model.

    python -m bench.decode_speed [--config training/configs/gpu.yaml] [--rows 24] [--prompt 4096] [--new 256]

The model is the config's (randomly initialised: speed does not depend on the weights), its prompts random token
ids of one length. Every path runs once untimed first (compilation, CUDA graph capture, allocator warm-up), then
`--reps` timed runs; the table gives the median. Greedy decoding throughout; end-of-sequence is never a token the
rows can emit (it is set past the vocabulary's used ids) so that every row decodes `--new` tokens.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

from bench._gpu import REPO, gpu_missing


class _Tokenizer:
    """What the generator and model_config read of a tokenizer: its size, end-of-sequence and padding ids."""

    def __init__(self, size):
        self.size, self.eos_token_id, self.pad_token_id = size, size - 1, 0

    def __len__(self):
        return self.size

    def decode(self, ids, **kwargs):
        return ""


def build(config_path, device):
    import torch
    from transformers import AutoModelForCausalLM

    from training.rl import config as run_config
    from training.rl.models import model_config

    cfg = run_config.load(config_path).model
    tokenizer = _Tokenizer(cfg.vocab_size)
    torch.manual_seed(0)
    lm = AutoModelForCausalLM.from_config(model_config(cfg, tokenizer)).to(device).eval()
    # no row may end early: greedy decoding of random weights never picks the suppressed end-of-sequence id
    lm.generation_config.suppress_tokens = [cfg.vocab_size - 1]
    return lm, tokenizer


def forward_loop(lm, ids, new, static, compiled):
    """Greedy decoding by hand: prefill, then NEW one-token forwards; the last tokens chosen."""
    import torch
    from transformers import DynamicCache, StaticCache

    from training.rl.generation import cache_argument, cache_length

    rows, width = ids.shape
    name = cache_argument(lm)
    if static:
        length = cache_length(width + new)
        cache = StaticCache(config=lm.config, max_cache_len=length)
        mask = torch.zeros(rows, length, dtype=torch.long, device=ids.device)
        mask[:, :width] = 1
    else:
        cache = DynamicCache(config=lm.config)
        mask = torch.ones(rows, width, dtype=torch.long, device=ids.device)
    step = lm.forward
    if compiled:
        step = torch.compile(lm.forward, mode="reduce-overhead", dynamic=False)
    with torch.no_grad():
        position = torch.arange(width, device=ids.device)
        out = lm(
            input_ids=ids,
            attention_mask=mask,
            **{name: cache},
            cache_position=position,
            use_cache=True,
            logits_to_keep=1,
        )
        token = out.logits[:, -1].argmax(-1, keepdim=True)
        for t in range(new - 1):
            at = width + t
            if static:
                mask[:, at] = 1
            else:
                mask = torch.cat([mask, mask.new_ones(rows, 1)], 1)
            position = torch.tensor([at], device=ids.device)
            out = step(
                input_ids=token,
                attention_mask=mask,
                **{name: cache},
                cache_position=position,
                use_cache=True,
                position_ids=position.expand(rows, 1),
            )
            token = out.logits[:, -1].argmax(-1, keepdim=True).clone()
    return token


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.decode_speed", description=__doc__)
    parser.add_argument("--config", default=str(REPO / "training" / "configs" / "gpu.yaml"))
    parser.add_argument("--rows", type=int, default=24)
    parser.add_argument("--prompt", type=int, default=4096)
    parser.add_argument("--new", type=int, default=256)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--profile", action="store_true", help="print each path's top kernels (torch.profiler)")
    parser.add_argument("--device", default="cuda", help="cpu only to try the script (no CUDA graphs there)")
    parser.add_argument("--paths", default="generate-dynamic,generate-static,loop-dynamic,loop-static-compiled")
    args = parser.parse_args(argv)
    missing = gpu_missing("decode_speed") if args.device == "cuda" else None
    if missing:
        print(missing)
        return 0
    import torch

    from training.rl.generation import BatchedGenerator, Request

    lm, tokenizer = build(Path(args.config), args.device)
    params = sum(p.numel() for p in lm.parameters()) / 1e6
    torch.manual_seed(1)
    ids = torch.randint(2, tokenizer.eos_token_id, (args.rows, args.prompt), device=args.device)

    def generate(decode, attention="sdpa"):
        generator = BatchedGenerator(
            lm, tokenizer, args.device, max_batch=args.rows, decode=decode, attention=attention
        )
        generator.close()  # its serving thread is not needed: generate_many is called directly
        requests = [Request(row.tolist(), args.new, 0.0, None) for row in ids]
        return lambda: generator.generate_many(requests)

    paths = {
        "generate-dynamic": ("BatchedGenerator, dynamic cache (transformers generate)", generate("dynamic")),
        "generate-static": ("BatchedGenerator, static cache (generate, compiled on CUDA)", generate("static")),
        "generate-dynamic-matmul": (
            "BatchedGenerator, dynamic cache, matmul decode attention",
            generate("dynamic", "matmul"),
        ),
        "generate-static-matmul": (
            "BatchedGenerator, static cache, matmul decode attention",
            generate("static", "matmul"),
        ),
        "loop-dynamic": ("forward loop, dynamic cache, eager", lambda: forward_loop(lm, ids, args.new, False, False)),
        "loop-static-compiled": (
            "forward loop, static cache, compiled step",
            lambda: forward_loop(lm, ids, args.new, True, True),
        ),
    }

    def sync():
        if args.device == "cuda":
            torch.cuda.synchronize()

    rows = []
    for key in args.paths.split(","):
        label, run = paths[key]
        t0 = time.monotonic()
        run()
        sync()
        first = time.monotonic() - t0
        if args.profile:
            from torch.profiler import ProfilerActivity, profile

            activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if args.device == "cuda" else [])
            with profile(activities=activities) as prof:
                run()
                sync()
            key = "self_cuda_time_total" if args.device == "cuda" else "self_cpu_time_total"
            print(f"{label}: top operators by {key}\n{prof.key_averages().table(sort_by=key, row_limit=14)}")
        times = []
        for _ in range(args.reps):
            t0 = time.monotonic()
            run()
            sync()
            times.append(time.monotonic() - t0)
        rows.append((label, first, statistics.median(times)))
        print(f"{label}: first {first:.1f} s, then {statistics.median(times):.2f} s", flush=True)
    print(
        f"\n{params:.1f}M parameters ({lm.config.model_type}), {args.rows} rows, prompt {args.prompt} tokens, "
        f"{args.new} new tokens, greedy, {torch.cuda.get_device_name() if args.device == 'cuda' else 'cpu'}\n"
    )
    print("| path | first run s | run s (median) | ms per step | tokens / s | vs the first path |")
    print("| --- | --- | --- | --- | --- | --- |")
    for label, first, wall in rows:
        print(
            f"| {label} | {first:.1f} | {wall:.2f} | {wall / args.new * 1000:.2f} | {args.rows * args.new / wall:.0f} "
            f"| {rows[0][2] / wall:.2f}x |"
        )
    print(f"reproduce: python -m bench.decode_speed {' '.join(sys.argv[1:])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
