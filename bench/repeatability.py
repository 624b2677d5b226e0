"""How repeatable a verdict's speedup is: the same solution evaluated several times in a row, for a kernel of
a fraction of a millisecond (timed with events) and a launch-bound tiny kernel (timed with events, by CUDA-graph
replay, and by `auto`, the default, which picks graph replay for it). Prints each run's speedup over eager, the median
and the largest deviation from it. Needs a CUDA GPU.

    python -m bench.repeatability [--runs 5] [--budget 0.5] [--fresh-baselines] [--no-concurrent] [--no-do-bench]

The solution is tests/gpu/solutions/level1/19_ReLU (a native workspace) on two ReLU problems of other sizes.
By default the eager baseline is measured once per problem and protocol and then read from the cache, as a
worker does; --fresh-baselines measures it on every run, so its noise enters the speedup too.

Two more parts (issue 17):
- under load: RUNS evaluations of the launch-bound solution under `auto`, run 4 at a time with cold builds of other
  solutions (a KernelBench-style load_inline ReLU, a new copy each, through the whole build) beside them, in two cases:
  one problem with nothing cached (as a user's repeated runs or a group of rollouts: one evaluation measures the
  baselines, the others wait for them), where the target is the same reward every time and speedups within 5% of
  their median; and a problem of its own per run (eager and torch.compile measured and compiled afresh each time),
  which shows how far fresh torch.compile builds of one problem differ.
- triton.testing.do_bench: the field's usual timer on the same solution and eager model in this process, as a
  cross-check of the sandbox's protocol (the ratio sandbox / do_bench per series; verdicts keep the sandbox's).
"""

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench._gpu import SOLUTIONS, gpu_missing, private_cache, table

PROBLEM = """import torch
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
"""

# (label, input shape, timing mode): 256 MB in and out is about 0.15-0.2 ms on an H100; 16 KB is launch-bound.
SERIES = (
    ("ReLU 8192x8192 (>= 0.1 ms), events", "8192, 8192", "events"),
    ("ReLU 1x4096 (launch-bound), events", "1, 4096", "events"),
    ("ReLU 1x4096 (launch-bound), graph", "1, 4096", "graph"),
    ("ReLU 1x4096 (launch-bound), auto", "1, 4096", "auto"),
)
LAUNCH_BOUND = "1, 4096"
CONCURRENCY = 4

# The builds beside the timed evaluations: KernelBench's own form, torch's headers in both units, a new copy each time
# (the STAMP comment) so that every one is a cold build.
NOISE_SOLUTION = '''import torch
from torch import nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>
// {stamp}
__global__ void relu_kernel(const float* x, float* y, int64_t n) {{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}}
torch::Tensor relu(torch::Tensor x) {{
    auto y = torch::empty_like(x);
    int64_t n = x.numel();
    relu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}}
"""
CPP_SOURCE = "torch::Tensor relu(torch::Tensor x);"
ops = load_inline(name="noise_relu_{stamp}", cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE, functions=["relu"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ops.relu(x.contiguous())
'''


def under_load(solution, folder, runs, budget, shared):
    """RUNS evaluations of SOLUTION on the launch-bound problem (SHARED: one problem file, so one set of baselines;
    else a problem file of its own per run, so fresh baselines each) interleaved with as many cold builds of
    NOISE_SOLUTION, CONCURRENCY at a time; the verdicts of the former."""
    from sandbox import evaluate

    jobs = []
    stamp = time.time_ns()
    for run in range(runs):
        suffix = "shared" if shared else f"own_{run}"
        problem = Path(folder) / f"relu_launch_bound_{suffix}.py"
        problem.write_text(PROBLEM.format(shape=LAUNCH_BOUND) + f"# {stamp} {suffix}: nothing cached yet\n")
        jobs.append(("target", problem, solution))
        noise = Path(folder) / f"noise_{run}.py"
        noise.write_text(NOISE_SOLUTION.format(stamp=f"{stamp}_{run}_{suffix}"))
        jobs.append(("noise", Path(folder) / "relu_8192x8192.py", noise))
    (Path(folder) / "relu_8192x8192.py").write_text(PROBLEM.format(shape="8192, 8192"))

    def one(job):
        kind, problem, candidate = job
        return kind, evaluate(
            str(problem), str(candidate), device="cuda", trials=1, time_budget_s=budget, shape_check=False
        )

    with ThreadPoolExecutor(CONCURRENCY) as pool:
        return [v for kind, v in pool.map(one, jobs) if kind == "target"]


def print_under_load(title, loaded):
    print(f"\n{title}")
    failed = [v for v in loaded if v.status != "ok"]
    if failed:
        print(f"FAILED: {[(v.status, v.log[-300:]) for v in failed]}")
        return
    rows = [
        (
            f"run {i + 1}",
            v.reward,
            v.timing["candidate"]["mode"],
            v.timing.get("baselines", "?"),
            f"{v.runtime_ms * 1000:.2f}",
            f"{v.eager_ms * 1000:.2f}",
            f"{v.compiled_ms * 1000:.2f}",
            f"{v.speedup_vs_eager:.3f}",
            f"{v.speedup_vs_compiled:.3f}",
        )
        for i, v in enumerate(loaded)
    ]
    header = ("run", "reward", "timed by", "baselines", "us", "eager us", "compiled us", "vs eager", "vs compiled")
    print(table(header, rows))
    for name in ("speedup_vs_eager", "speedup_vs_compiled"):
        values = [getattr(v, name) for v in loaded]
        print(f"{name}: median {statistics.median(values):.3f}, max deviation {deviation_pct(values):.1f}% (target 5%)")
    print(f"rewards: {sorted({v.reward for v in loaded})} (target: one reward)")


def do_bench_ms(problem_path, solution):
    """(solution ms, eager ms) by triton.testing.do_bench (median) in this process, or None without triton."""
    try:
        from triton.testing import do_bench
    except ImportError:
        return None
    import torch

    from sandbox.problem import import_file, make_inputs, make_model

    problem = import_file(problem_path, f"ks_bench_problem_{Path(problem_path).stem}")
    model_new = make_model(
        import_file(Path(solution) / "model_new.py", "ks_bench_solution").ModelNew, problem, 0, "cuda"
    )
    model = make_model(problem.Model, problem, 0, "cuda")
    inputs = make_inputs(problem, 1, "cuda")
    with torch.no_grad():
        return (
            do_bench(lambda: model_new(*inputs), return_mode="median"),
            do_bench(lambda: model(*inputs), return_mode="median"),
        )


def deviation_pct(values):
    middle = statistics.median(values)
    return 100.0 * max(abs(v - middle) for v in values) / middle


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m bench.repeatability", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="evaluations per series")
    parser.add_argument("--budget", type=float, default=0.5, help="time_budget_s of each timing (seconds)")
    parser.add_argument("--fresh-baselines", action="store_true", help="re-measure eager on every run")
    parser.add_argument("--no-concurrent", action="store_true", help="skip the evaluations under load")
    parser.add_argument("--no-do-bench", action="store_true", help="skip the triton.testing.do_bench cross-check")
    parser.add_argument(
        "--series",
        default="",
        help="|-separated beginnings of series labels to run (e.g. "
        "'ReLU 1x4096' matches the launch-bound ones; default: all; 'none' runs no series)",
    )
    args = parser.parse_args(argv)
    missing = gpu_missing("repeatability")
    if missing:
        print(missing)
        return 0
    from sandbox import evaluate

    solution = SOLUTIONS / "level1" / "19_ReLU"
    config = {
        "device": "cuda",
        "trials": 1,
        "compiled_baseline": False,
        "time_budget_s": args.budget,
        "shape_check": False,
    }
    rows, cross = [], []
    with private_cache("ks-bench-repeat-") as cache, tempfile.TemporaryDirectory(prefix="ks-bench-repeat-") as tmp:
        for label, shape, mode in SERIES:
            if args.series and not any(label.startswith(w) and w for w in args.series.split("|")):
                continue
            problem = Path(tmp) / f"relu_{shape.replace(', ', 'x')}.py"
            problem.write_text(PROBLEM.format(shape=shape))
            speedups, runtimes, spreads, eagers = [], [], [], []
            for run in range(args.runs):
                if args.fresh_baselines:
                    shutil.rmtree(cache / "baselines", ignore_errors=True)
                verdict = evaluate(str(problem), str(solution), timing=mode, **config)
                if verdict.status != "ok":
                    raise SystemExit(f"{label}, run {run + 1}: {verdict.status}\n{verdict.log}")
                speedups.append(verdict.speedup_vs_eager)
                runtimes.append(verdict.runtime_ms)
                eagers.append(verdict.eager_ms)
                spreads.append(verdict.timing["candidate"]["spread_pct"])
                timed_by = verdict.timing["candidate"]["mode"]
                print(
                    f"{label}, run {run + 1}: {verdict.speedup_vs_eager:.3f}x eager, "
                    f"{verdict.runtime_ms * 1000:.2f} us (spread {spreads[-1]:.1f}%, "
                    f"eager {verdict.eager_ms * 1000:.2f} us, timed by {timed_by})",
                    flush=True,
                )
            rows.append(
                (
                    label,
                    " ".join(f"{s:.3f}" for s in speedups),
                    f"{statistics.median(speedups):.3f}",
                    f"{deviation_pct(speedups):.1f}",
                    f"{statistics.median(runtimes) * 1000:.2f}",
                    f"{statistics.median(spreads):.1f}",
                )
            )
            if not args.no_do_bench:
                measured = do_bench_ms(problem, solution)
                if measured is None:
                    cross.append((label, "triton is not installed", "", "", ""))
                else:
                    ours, theirs = statistics.median(runtimes), statistics.median(eagers)
                    cross.append(
                        (
                            label,
                            f"{ours * 1000:.2f} / {measured[0] * 1000:.2f}",
                            f"{ours / measured[0]:.3f}",
                            f"{theirs * 1000:.2f} / {measured[1] * 1000:.2f}",
                            f"{theirs / measured[1]:.3f}",
                        )
                    )
        if not args.no_concurrent:
            shared = under_load(solution, tmp, args.runs, args.budget, shared=True)
            own = under_load(solution, tmp, args.runs, args.budget, shared=False)
    print()
    print(table(("series", "speedup_vs_eager per run", "median", "max dev %", "median us", "spread %"), rows))
    if cross:
        print("\ntriton.testing.do_bench cross-check (median us: sandbox / do_bench; ratio sandbox / do_bench)")
        print(table(("series", "solution us", "ratio", "eager us", "ratio"), cross))
    if not args.no_concurrent:
        load = f"{args.runs} evaluations of the launch-bound ReLU (auto), {CONCURRENCY} at a time, beside {args.runs} "
        print_under_load(f"under load, one problem: {load}cold load_inline builds", shared)
        print_under_load(
            f"under load, a problem of its own per run (fresh torch.compile builds; not a target): {load}cold builds",
            own,
        )
    flags = " --fresh-baselines" if args.fresh_baselines else ""
    print(f"reproduce: python -m bench.repeatability --runs {args.runs} --budget {args.budget}{flags}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
