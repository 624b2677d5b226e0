"""Wall time of one whole sandbox.evaluate of a KernelBench level-2 problem with its handwritten solution, under
the default protocol (5 trials, eager and torch.compile baselines): first call (cold baselines, torch.compile,
cold build), then cached calls with and without the float64 precision check, side by side, with each call's stages.
Target: the cached call under the default protocol within 15 s. Needs a CUDA GPU and KernelBench's problems
(tests/gpu/data/problems.jsonl or ../shared/kernelbench/problems.jsonl); --problem-file, --solution and --device cpu
time any problem and solution the same way, on a machine without a GPU too.

    python -m bench.level2_eval_time [--problem 63_Gemm_ReLU_Divide]
    python -m bench.level2_eval_time --device cpu --problem-file PROBLEM.py --solution WORKSPACE_OR_PY
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

from bench._gpu import SOLUTIONS, gpu_missing, kernelbench_problem, private_cache, table

TARGET_S = 15.0


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m bench.level2_eval_time", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--problem",
        default="63_Gemm_ReLU_Divide",
        help="a level-2 problem with a solution under tests/gpu/solutions/level2",
    )
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="where to evaluate (default cuda)")
    parser.add_argument("--problem-file", help="a problem file to time instead of KernelBench's --problem")
    parser.add_argument("--solution", help="its solution (a .py or a workspace folder; default: --problem's own)")
    args = parser.parse_args(argv)
    missing = gpu_missing("level2_eval_time") if args.device == "cuda" else None
    if missing:
        print(missing)
        return 0
    if args.problem_file and not args.solution:
        parser.error("--problem-file needs --solution")
    from sandbox import evaluate

    solution = Path(args.solution) if args.solution else SOLUTIONS / "level2" / args.problem
    solution = solution if solution.is_dir() or args.solution else solution.with_suffix(".py")
    name = Path(args.problem_file).stem if args.problem_file else args.problem
    rows = []
    with private_cache("ks-bench-level2-"), tempfile.TemporaryDirectory(prefix="ks-bench-level2-") as tmp:
        problem = args.problem_file or kernelbench_problem(2, args.problem, tmp)
        calls = (
            ("first (cold)", True),
            ("second (cached)", True),
            ("third (cached), no float64 check", False),
            ("fourth (cached)", True),
        )
        for call, precise in calls:
            t0 = time.perf_counter()
            verdict = evaluate(str(problem), str(solution), device=args.device, precision_check=precise)
            seconds = time.perf_counter() - t0
            print(f"{call}: {seconds:.1f} s, {verdict.summary()}; stages {verdict.timing.get('stages_s')}", flush=True)
            if verdict.status != "ok":
                print(verdict.log)
            rows.append(
                (
                    call,
                    f"{seconds:.1f}",
                    verdict.status,
                    verdict.reward,
                    f"{verdict.speedup_vs_eager:.2f}" if verdict.speedup_vs_eager else "-",
                    f"{verdict.speedup_vs_compiled:.2f}" if verdict.speedup_vs_compiled else "-",
                    f"{verdict.compile_s:.2f}" if verdict.compile_s is not None else "-",
                )
            )
    print()
    print(table(("evaluate " + name, "wall s", "status", "reward", "x eager", "x compiled", "compile s"), rows))
    cached_s = float(rows[-1][1])  # the last call: cached, under the default protocol
    verdict = "within" if cached_s <= TARGET_S else "OVER"
    print(f"cached evaluation {cached_s:.1f} s: {verdict} the {TARGET_S:.0f} s target")
    print(f"reproduce: python -m bench.level2_eval_time {' '.join(argv)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
