"""The heuristic policy over KernelBench levels 1-3 on the GPU, through `python -m training evaluate`: parallel
episodes, the sandbox's cached baselines, and a folder that each call resumes, so the whole run is a series of
calls that each fit a 10-minute command. Prints the per-level table and the command that reproduces it.

    python -m bench.kernelbench_eval [--levels 1,2,3] [--workers 3] [--budget-s 300] [--out DIR]
                                     [--limit N] [--shard K/N] [--names A,B [--rerun]] [--report] [--problems PATH]

Each call starts no episode after --budget-s seconds and lets the running ones finish (each at most --wall-clock
seconds of turns plus one sandbox run), then writes DIR/metrics.md; repeat the same command until it says
nothing is left. A call stopped by force loses only its episodes in flight. Baselines are measured once per
problem and cached in KS_CACHE_DIR (default ~/.cache/kernel-studio), so a re-run times only the kernels.
Episodes time on the same GPU at once: fewer --workers means less overlap between timings (and GPU memory), more
means a shorter run.
"""

import argparse
import os
import sys

from bench._gpu import REPO, gpu_missing
from sandbox import problems_file

DEFAULT_OUT = REPO / "artifacts" / "kernelbench-eval"


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m bench.kernelbench_eval", description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", default="1,2,3")
    # KernelBench's level-1 inputs take up to ~26 GB of GPU memory while a problem is validated: on an 80 GB H100,
    # 6 episodes at once ran out of memory (measured), 3 did not.
    parser.add_argument(
        "--workers",
        type=int,
        default=max(1, min(3, (os.cpu_count() or 2) // 2)),
        help="episodes at once (default: half the cores, at most 3: GPU memory bounds it)",
    )
    parser.add_argument("--budget-s", type=float, default=300, help="start no episode after this many seconds")
    parser.add_argument("--wall-clock", type=float, default=240, help="seconds of turns per episode")
    parser.add_argument("--max-turns", type=int, default=12)
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="the evaluation folder every call resumes")
    parser.add_argument("--limit", type=int, default=None, help="at most this many problems per level")
    parser.add_argument("--shard", default=None, help="K/N: only the K-th of N interleaved parts")
    parser.add_argument("--names", default="", help="comma-separated problem names")
    parser.add_argument(
        "--rerun",
        action="store_true",
        help="with --names: run those problems again although results are stored (the policy changed since)",
    )
    parser.add_argument("--report", action="store_true", help="only print the table of what is stored")
    parser.add_argument(
        "--problems",
        default=None,
        help="problems.jsonl or a KernelBench checkout (default: "
        "KS_KERNELBENCH_PROBLEMS, tests/gpu/data/problems.jsonl, "
        "else ../shared/kernelbench)",
    )
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="cpu: a dry run of this script")
    args = parser.parse_args(argv)
    from training.cli import main as training

    if args.report:
        return training(["evaluate", "--out", args.out, "--report-only"])
    missing = gpu_missing("kernelbench_eval") if args.device == "cuda" else None
    if missing:
        print(missing)
        return 0
    source = args.problems or problems_file.locate()
    if source is None:
        print(problems_file.missing_message())
        return 2
    selection = (
        ["--levels", args.levels]
        + (["--limit", str(args.limit)] if args.limit else [])
        + (["--shard", args.shard] if args.shard else [])
        + (["--names", args.names] if args.names else [])
    )
    command = [
        "evaluate",
        "--problems",
        str(source),
        *selection,
        "--policy",
        "heuristic",
        "--device",
        args.device,
        "--max-turns",
        str(args.max_turns),
        "--wall-clock",
        str(args.wall_clock),
        "--out",
        args.out,
        "--workers",
        str(args.workers),
        "--in-process",
        "--resume",
        "--stop-after",
        str(args.budget_s),
    ] + (["--rerun"] if args.rerun else [])
    status = training(command)
    from training.evaluation import problems
    from training.evaluation.folder import EvalFolder

    chosen = problems.select(
        problems.read_problems(source),
        problems.parse_levels(args.levels),
        None,
        set(filter(None, args.names.split(","))) or None,
        args.limit,
        problems.parse_shard(args.shard) if args.shard else None,
    )
    finished = {key for _, key in EvalFolder(args.out).finished()}
    left = sum(p.key not in finished for p in chosen)
    print(
        f"{len(chosen) - left} of {len(chosen)} selected problem(s) have a result"
        + (f"; {left} left: run the same command again" if left else "")
    )
    print("reproduce: python -m bench.kernelbench_eval " + " ".join(argv))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
