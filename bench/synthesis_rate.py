"""Task synthesis throughput on one GPU: tasks kept per GPU-minute, the projected time for 6,000 kept tasks, and
the share of time the pipeline spends executing candidates (jailed probes: validation, timing, torch.compile)
against everything else (composing, fingerprinting, claims, bookkeeping). Runs the real pipeline for a fixed
time, then prints a table, the removal counts per filter and the command that reproduces it; --plot writes the
kept set's distribution (operator classes, fusion depth, eager time) as a PNG. Needs a CUDA GPU unless
--device cpu.

    python -m bench.synthesis_rate [--minutes 5] [--workers 8] [--plot synthesis.png]
    python -m bench.synthesis_rate --from-summary OUT.summary.json --plot synthesis.png   (plot only)
"""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from bench._gpu import PROBLEM_SOURCES, gpu_missing, private_cache, table

TARGET_TASKS = 6000


def _report(summary, args, wall_s):
    kept, attempts = summary["kept"], summary["attempts"]
    per_minute = kept / (wall_s / 60.0) if wall_s else 0.0
    projected_h = TARGET_TASKS / per_minute / 60.0 if per_minute else float("inf")
    busy = summary["time"]["exec_s"] + summary["time"]["pipeline_s"]
    rows = [
        ("kept / attempted", f"{kept} / {attempts}"),
        ("wall (min)", f"{wall_s / 60:.2f}"),
        ("tasks kept per GPU-minute", f"{per_minute:.2f}"),
        (f"projected time for {TARGET_TASKS} (h)", f"{projected_h:.1f}"),
        ("execution share of busy time", f"{summary['time']['exec_share'] or 0:.1%}"),
        ("execution s per candidate", f"{summary['time']['exec_s'] / max(attempts, 1):.2f}"),
        ("pipeline s per candidate", f"{summary['time']['pipeline_s'] / max(attempts, 1):.3f}"),
        ("busy s / wall s (parallelism)", f"{busy / wall_s:.1f}" if wall_s else "-"),
    ]
    print(table(("synthesis on " + args.device, "value"), rows))
    print()
    print(table(("removed by", "candidates"), sorted(summary["removed_by"].items(), key=lambda kv: -kv[1])))
    dist = summary["distribution"]
    print()
    print("kept fusion depth:", dist["fusion_depth"], " classes:", dict(list(dist["op_classes"].items())[:8]))
    values = dist["eager_ms_values"]
    if values:
        print(f"kept eager ms: min {values[0]:.3f}, median {values[len(values) // 2]:.3f}, max {values[-1]:.3f}")


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m bench.synthesis_rate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=5.0, help="how long new candidates keep starting")
    parser.add_argument(
        "--workers",
        type=int,
        default=min(8, os.cpu_count() or 1),
        help="candidates in flight (torch.compile is CPU-bound: about half the cores)",
    )
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--profile", help="size profile (default: the device's)")
    parser.add_argument("--out", help="keep the dataset here (default: a temporary folder)")
    parser.add_argument("--plot", help="write the kept set's distribution to this PNG")
    parser.add_argument("--from-summary", help="only plot (and report) an existing OUT.summary.json")
    args = parser.parse_args(argv)
    if args.from_summary:
        summary = json.loads(Path(args.from_summary).read_text())
        _report(summary, args, summary["time"]["wall_s"] or 0.0)
        if args.plot:
            from training.synthesis.plot import plot_distribution

            print(f"plot: {plot_distribution(summary, args.plot)}")
        return 0
    if args.device == "cuda":
        missing = gpu_missing("synthesis_rate")
        if missing:
            print(missing)
            return 0
    # On a GPU machine only the repository travels: KernelBench's problems (for the leakage check) are where the
    # GPU tests keep them, tests/gpu/data/problems.jsonl.
    source = next((p for p in PROBLEM_SOURCES if p.is_file()), None)
    if source and not os.environ.get("KS_KERNELBENCH_PROBLEMS"):
        os.environ["KS_KERNELBENCH_PROBLEMS"] = str(source)
    from training.synthesis.dataset import RunConfig
    from training.synthesis.filters import DEFAULT_WINDOWS
    from training.synthesis.runner import synthesize

    config = RunConfig(device=args.device, profile=args.profile or args.device, window_ms=DEFAULT_WINDOWS[args.device])
    with private_cache("ks-bench-synthesis-"), tempfile.TemporaryDirectory(prefix="ks-bench-synthesis-") as tmp:
        out = Path(args.out or Path(tmp) / "ops.jsonl")
        t0 = time.monotonic()
        summary = synthesize(
            out,
            config,
            count=TARGET_TASKS,
            workers=args.workers,
            progress=sys.stderr.isatty(),
            time_limit_s=args.minutes * 60.0,
        )
        wall_s = time.monotonic() - t0
        print()
        _report(summary, args, wall_s)
        if args.plot:
            from training.synthesis.plot import plot_distribution

            print(f"plot: {plot_distribution(summary, args.plot)}")
        if args.out:
            print(f"dataset: {out} (summary {out}.summary.json)")
    # Setup (the seed crawl, the KernelBench index) counts in the wall time: it is part of a real run's cost.
    extra = (f" --profile {args.profile}" if args.profile else "") + (f" --out {args.out}" if args.out else "")
    print(
        f"reproduce: python -m bench.synthesis_rate --device {args.device} --minutes {args.minutes:g} "
        f"--workers {args.workers}{extra}{' --plot ' + args.plot if args.plot else ''}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
