"""How repeatable a verdict's speedup is: the same solution evaluated several times in a row, for a kernel of
a fraction of a millisecond (timed with events) and a launch-bound tiny kernel (timed with events, then by
CUDA-graph replay). Prints each run's speedup over eager, the median and the largest deviation from it.
Needs a CUDA GPU.

    python -m bench.repeatability [--runs 5] [--budget 0.5] [--fresh-baselines]

The solution is tests/gpu/solutions/level1/19_ReLU (a native workspace) on two ReLU problems of other sizes.
By default the eager baseline is measured once per problem and protocol and then read from the cache, as a
worker does; --fresh-baselines measures it on every run, so its noise enters the speedup too.
"""
import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from bench._gpu import SOLUTIONS, gpu_missing, private_cache, table

PROBLEM = '''import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.rand({shape})]


def get_init_inputs():
    return []
'''

# (label, input shape, timing mode): 256 MB in and out is about 0.15-0.2 ms on an H100; 16 KB is launch-bound.
SERIES = (
    ("ReLU 8192x8192 (>= 0.1 ms), events", "8192, 8192", "events"),
    ("ReLU 1x4096 (launch-bound), events", "1, 4096", "events"),
    ("ReLU 1x4096 (launch-bound), graph", "1, 4096", "graph"),
)


def deviation_pct(values):
    middle = statistics.median(values)
    return 100.0 * max(abs(v - middle) for v in values) / middle


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m bench.repeatability", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="evaluations per series")
    parser.add_argument("--budget", type=float, default=0.5, help="time_budget_s of each timing (seconds)")
    parser.add_argument("--fresh-baselines", action="store_true", help="re-measure eager on every run")
    args = parser.parse_args(argv)
    missing = gpu_missing("repeatability")
    if missing:
        print(missing)
        return 0
    from sandbox import evaluate
    solution = SOLUTIONS / "level1" / "19_ReLU"
    config = dict(device="cuda", trials=1, compiled_baseline=False, time_budget_s=args.budget)
    rows = []
    with private_cache("ks-bench-repeat-") as cache, tempfile.TemporaryDirectory(prefix="ks-bench-repeat-") as tmp:
        for label, shape, mode in SERIES:
            problem = Path(tmp) / f"relu_{shape.replace(', ', 'x')}.py"
            problem.write_text(PROBLEM.format(shape=shape))
            speedups, runtimes, spreads = [], [], []
            for run in range(args.runs):
                if args.fresh_baselines:
                    shutil.rmtree(cache / "baselines", ignore_errors=True)
                verdict = evaluate(str(problem), str(solution), timing=mode, **config)
                if verdict.status != "ok":
                    raise SystemExit(f"{label}, run {run + 1}: {verdict.status}\n{verdict.log}")
                speedups.append(verdict.speedup_vs_eager)
                runtimes.append(verdict.runtime_ms)
                spreads.append(verdict.timing["candidate"]["spread_pct"])
                timed_by = verdict.timing["candidate"]["mode"]
                print(f"{label}, run {run + 1}: {verdict.speedup_vs_eager:.3f}x eager, "
                      f"{verdict.runtime_ms * 1000:.2f} us (spread {spreads[-1]:.1f}%, "
                      f"eager {verdict.eager_ms * 1000:.2f} us, timed by {timed_by})", flush=True)
            rows.append((label, " ".join(f"{s:.3f}" for s in speedups), f"{statistics.median(speedups):.3f}",
                         f"{deviation_pct(speedups):.1f}", f"{statistics.median(runtimes) * 1000:.2f}",
                         f"{statistics.median(spreads):.1f}"))
    print()
    print(table(("series", "speedup_vs_eager per run", "median", "max dev %", "median us", "spread %"), rows))
    flags = " --fresh-baselines" if args.fresh_baselines else ""
    print(f"reproduce: python -m bench.repeatability --runs {args.runs} --budget {args.budget}{flags}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
