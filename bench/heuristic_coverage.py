"""What the heuristic policy can plan over KernelBench, per level, without a GPU: each problem is captured (torch.fx
and torch.export, on meta or fake tensors) and planned (the policy's first two turns): by the stage planner where the
graph is a chain, else by the DAG planner; the share planned, the kinds of plan, and the operators that stop the
rest, most common first. Correctness and speed are the GPU evaluation's (`bench.kernelbench_eval`).

    python -m bench.heuristic_coverage [--problems tests/gpu/data/problems.jsonl] [--levels 1,2,3] [--top 12]
"""

import argparse
import collections
import contextlib
import io
import json
import sys
import tempfile
import warnings
from pathlib import Path

DEFAULT = Path(__file__).resolve().parents[1] / "tests" / "gpu" / "data" / "problems.jsonl"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "kernelbench" / "problems.jsonl"


def plan_of(code, folder):
    """('kind', describe) or ('unsupported', reason) of one problem's source."""
    from agent.heuristic.analyze import analyze
    from agent.heuristic.plan import Unsupported, make_plan

    path = Path(folder) / "problem.py"
    path.write_text(code)
    try:
        with contextlib.redirect_stderr(io.StringIO()):  # torch.fx reports a failed shape propagation there too
            plan = make_plan(analyze(str(path)))
    except Unsupported as exc:
        return "unsupported", str(exc)
    except Exception as exc:  # noqa: BLE001 -- a problem that does not even trace is counted, not fatal
        return "unsupported", f"{type(exc).__name__}: {exc}"
    if plan.kind == "graph":
        return "DAG", plan.describe
    return (f"{len(plan.tails) + 1}-stage chain" if plan.tails else plan.kind), plan.describe


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problems", type=Path, default=DEFAULT if DEFAULT.exists() else SHARED)
    parser.add_argument("--levels", default="1,2,3")
    parser.add_argument("--top", type=int, default=12, help="how many stopping reasons to list")
    args = parser.parse_args(argv)
    if not args.problems.exists():
        sys.exit(f"no KernelBench problems at {args.problems}: copy ../shared/kernelbench/problems.jsonl there")
    levels = [int(level) for level in args.levels.split(",")]
    warnings.filterwarnings("ignore")
    kinds, reasons, totals = collections.Counter(), collections.Counter(), collections.Counter()
    with tempfile.TemporaryDirectory() as folder:
        for line in args.problems.read_text().splitlines():
            problem = json.loads(line)
            if problem["level"] not in levels:
                continue
            totals[problem["level"]] += 1
            kind, detail = plan_of(problem["code"], folder)
            if kind == "unsupported":
                reasons[detail[:100]] += 1
            else:
                kinds[(problem["level"], kind)] += 1
    print("| level | problems | planned | share | plans |")
    print("|---|---|---|---|---|")
    for level in levels:
        planned = {k: n for (lv, k), n in kinds.items() if lv == level}
        count = sum(planned.values())
        detail = ", ".join(f"{k} {n}" for k, n in sorted(planned.items(), key=lambda item: -item[1]))
        print(f"| {level} | {totals[level]} | {count} | {count / max(1, totals[level]):.0%} | {detail} |")
    print(f"\nWhat stops the rest (top {args.top}):")
    for reason, n in reasons.most_common(args.top):
        print(f"  {n:3d}  {reason}")


if __name__ == "__main__":
    main()
