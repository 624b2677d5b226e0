"""The heuristic policy over KernelBench problems, one episode each: correct rate, shares faster than eager
and torch.compile, geometric-mean speedups, per level. Problems it cannot plan end after the analysis turn.

    python -m bench.heuristic_kernelbench --levels 1,2 [--limit N] [--only NAME,NAME] [--budget-s S]
"""

import argparse
import json
import math
import sys
import tempfile
import time

from bench._gpu import PROBLEM_SOURCES, gpu_missing


def load_problems(levels, only):
    source = next((p for p in PROBLEM_SOURCES if p.is_file()), None)
    if source is None:
        raise SystemExit("KernelBench problems not found: copy ../shared/kernelbench/problems.jsonl to tests/gpu/data/")
    rows = [json.loads(line) for line in source.read_text().splitlines() if line.strip()]
    return [r for r in rows if r["level"] in levels and (not only or r["name"] in only)]


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def summarize(results):
    lines = [
        "| level | problems | correct | > eager | > compile | geomean vs eager (correct) | "
        "geomean vs compile (correct) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for level in sorted({r["level"] for r in results}):
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
    args = parser.parse_args(argv)
    missing = gpu_missing("heuristic_kernelbench")
    if missing:
        print(missing)
        return 0
    from agent.loop import Episode, EpisodeConfig
    from agent.policies import make_policy

    problems = load_problems({int(x) for x in args.levels.split(",")}, set(filter(None, args.only.split(","))))
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
            traj = Episode(
                path, make_policy("heuristic"), f"{tmp}/workspace", EpisodeConfig(device="cuda", max_turns=12)
            ).run()
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
                f"L{r['level']} {r['name']}: reward {r['reward']}, {r['eager']:.2f}x eager, {r['compiled']:.2f}x "
                f"compiled, {r['turns']} turns, {r['seconds']} s ({r['stop'][:100]})",
                flush=True,
            )
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(results, fh, indent=1)
    print(summarize(results))
    print(
        f"reproduce: python -m bench.heuristic_kernelbench --levels {args.levels}"
        + (f" --limit {args.limit}" if args.limit else "")
        + (f" --only {args.only}" if args.only else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
