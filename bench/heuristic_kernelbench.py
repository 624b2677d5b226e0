"""The heuristic policy over KernelBench problems, one episode each: correct rate, shares faster than eager
and torch.compile, geometric-mean speedups, per level. Problems it cannot plan end after the analysis turn.
--problems runs a folder of problem files instead (bench/user_modules: everyday modules held out from KernelBench),
--device cpu on the CPU target (no torch.compile baseline there).

    python -m bench.heuristic_kernelbench --levels 1,2 [--limit N] [--only NAME,NAME] [--budget-s S]
    python -m bench.heuristic_kernelbench --problems bench/user_modules [--device cpu]
"""

import argparse
import json
import math
import sys
import tempfile
import time

from bench._gpu import PROBLEM_SOURCES, gpu_missing


def load_folder(folder, only):
    """The problem files (*.py) of FOLDER as rows of level "user"."""
    from pathlib import Path

    files = sorted(Path(folder).glob("*.py"))
    if not files:
        raise SystemExit(f"no problem files (*.py) in {folder}")
    return [{"level": "user", "name": f.stem, "code": f.read_text()} for f in files if not only or f.stem in only]


def load_problems(levels, only):
    source = next((p for p in PROBLEM_SOURCES if p.is_file()), None)
    if source is None:
        raise SystemExit("KernelBench problems not found: copy ../shared/kernelbench/problems.jsonl to tests/gpu/data/")
    rows = [json.loads(line) for line in source.read_text().splitlines() if line.strip()]
    return [r for r in rows if r["level"] in levels and (not only or r["name"] in only)]


def geomean(values):
    """The geometric mean of the positive VALUES (0: no such baseline, as torch.compile on the CPU target)."""
    values = [v for v in values if v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def summarize(results):
    lines = [
        "| level | problems | correct | > eager | > compile | geomean vs eager (correct) | "
        "geomean vs compile (correct) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for level in sorted({r["level"] for r in results}, key=str):
        rows = [r for r in results if r["level"] == level]
        ok = [r for r in rows if r["correct"]]
        n = len(rows)
        lines.append(
            f"| {level} | {n} | {len(ok)}/{n} | {sum(r['eager'] > 1 for r in ok)}/{n} | "
            f"{sum(r['compiled'] > 1 for r in ok)}/{n} | {geomean([r['eager'] for r in ok]):.2f} | "
            f"{geomean([r['compiled'] for r in ok]):.2f} |"
        )
    return "\n".join(lines)


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m bench.heuristic_kernelbench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", default="1,2")
    parser.add_argument("--limit", type=int, default=0, help="at most this many problems per level")
    parser.add_argument("--only", default="", help="comma-separated problem names")
    parser.add_argument("--budget-s", type=float, default=0, help="stop starting episodes after this many seconds")
    parser.add_argument("--out", default="", help="write per-problem results as JSON here")
    parser.add_argument("--problems", default="", help="a folder of problem files to run instead of KernelBench's")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    args = parser.parse_args(argv)
    missing = gpu_missing("heuristic_kernelbench") if args.device == "cuda" else None
    if missing:
        print(missing)
        return 0
    from sandbox.config import EvalConfig

    from agent.loop import Episode, EpisodeConfig
    from agent.policies import make_policy

    only = set(filter(None, args.only.split(",")))
    if args.problems:
        problems = load_folder(args.problems, only)
    else:
        problems = load_problems({int(x) for x in args.levels.split(",")}, only)
    config = EpisodeConfig(
        device=args.device,
        max_turns=12,
        eval=EvalConfig(device=args.device, compiled_baseline=args.device == "cuda"),
    )
    if args.limit:
        problems = [
            p
            for level in sorted({p["level"] for p in problems})
            for p in [q for q in problems if q["level"] == level][: args.limit]
        ]
    results, start = [], time.monotonic()
    for row in problems:
        if args.budget_s and time.monotonic() - start > args.budget_s:
            print(f"budget of {args.budget_s:.0f} s spent: {len(problems) - len(results)} problem(s) not run")
            break
        with tempfile.TemporaryDirectory(prefix="ks-bench-heuristic-") as tmp:
            path = f"{tmp}/{row['name']}.py"
            with open(path, "w") as fh:
                fh.write(row["code"])
            t0 = time.monotonic()
            traj = Episode(path, make_policy("heuristic"), f"{tmp}/workspace", config).run()
            v = traj.verdict
            results.append(
                {
                    "level": row["level"],
                    "name": row["name"],
                    "correct": bool(v["correct"]),
                    "reward": v["reward"],
                    "eager": v.get("speedup_vs_eager") or 0.0,
                    "compiled": v.get("speedup_vs_compiled") or 0.0,
                    "stop": traj.stop_reason[:160],
                    "turns": len(traj.turns),
                    "seconds": round(time.monotonic() - t0, 1),
                }
            )
            r = results[-1]
            print(
                f"{'L' if r['level'] != 'user' else ''}{r['level']} {r['name']}: reward {r['reward']}, "
                f"{r['eager']:.2f}x eager, {r['compiled']:.2f}x "
                f"compiled, {r['turns']} turns, {r['seconds']} s ({r['stop'][:100]})",
                flush=True,
            )
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(results, fh, indent=1)
    print(summarize(results))
    print(
        "reproduce: python -m bench.heuristic_kernelbench "
        + (f"--problems {args.problems}" if args.problems else f"--levels {args.levels}")
        + (f" --device {args.device}" if args.device != "cuda" else "")
        + (f" --limit {args.limit}" if args.limit else "")
        + (f" --only {args.only}" if args.only else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
