"""Shape generality of the heuristic's kernels over KernelBench (issue 22): of the problems it solves correctly, how
many stay correct at other batch sizes (the sandbox's check: the batch halved and doubled), and their speed at the
problem's shapes against the specialized kernels the heuristic wrote before, side by side in one run.

Each problem is analysed and planned as the heuristic policy does (agent/heuristic), then two workspaces are
written from the one plan: the kernels that read the batch size at run time, and the same kernels specialized to
the problem's shapes. The first is evaluated with the shape check, the second without; both are timed by the
sandbox with one configuration. One problem runs in its own process under --timeout-s; results go to a JSONL file
one line per problem, and a second run skips the problems already there (resumable).

    python -m bench.shape_generality [--device cpu|cuda] [--level 1 2] [--limit N] [--out FILE] [--timeout-s S]
        [--max-input-mb MB]   (on the CPU: KernelBench's largest inputs are gigabytes; run a sample of the others)
        [--every K] [--workers N] [--budget-s S]   (every K-th problem; N at once; start none after S seconds)
"""

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.heuristic_coverage import DEFAULT, SHARED


def load_problems(path, levels, limit, only=(), max_input_mb=0, every=1):
    """The problems of LEVELS (ONLY: those named), every EVERY-th of a level (a sample spread over its problems), at
    most LIMIT a level among those whose inputs fit MAX_INPUT_MB."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    chosen = []
    for level in levels:
        rows_of_level = [r for r in rows if r["level"] == level and (not only or r["name"] in only)]
        if max_input_mb:
            rows_of_level = [r for r in rows_of_level if problem_megabytes(r["code"]) <= max_input_mb]
        rows_of_level = rows_of_level[:: max(1, every)]
        chosen += rows_of_level[:limit] if limit else rows_of_level
    return chosen


def problem_megabytes(code):
    with tempfile.TemporaryDirectory(prefix="ks-shape-generality-") as folder:
        path = Path(folder) / "problem.py"
        path.write_text(code)
        try:
            return input_megabytes(path)
        except Exception:  # noqa: BLE001 -- a problem that cannot even make its inputs is left to the run to report
            return 0.0


def write_workspace(folder, files):
    for rel, text in files.items():
        path = Path(folder) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def input_megabytes(path):
    """The size of the problem's inputs and output (made on meta tensors: no memory spent)."""
    import torch

    from sandbox.problem import import_file

    module = import_file(str(path), "ks_size_probe")
    with torch.device("meta"):
        inputs = module.get_inputs()
        tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
        try:
            out = module.Model(*module.get_init_inputs())(*inputs)
            tensors += [out] if isinstance(out, torch.Tensor) else [t for t in out if isinstance(t, torch.Tensor)]
        except Exception:  # noqa: BLE001 -- a model meta tensors cannot run is sized by its inputs
            pass
    return sum(x.numel() * x.element_size() for x in tensors) / 2**20


def run_one(row, device, folder):
    """The record of one problem: planned, correct, shape_general, and both versions' times."""
    import contextlib
    import io
    import warnings

    from agent.heuristic.analyze import analyze
    from agent.heuristic.codegen import workspace_files
    from agent.heuristic.plan import Unsupported, make_plan
    from sandbox import EvalConfig, evaluate

    warnings.filterwarnings("ignore")
    record = {"level": row["level"], "name": row["name"], "device": device}
    problem = Path(folder) / "problem.py"
    problem.write_text(row["code"])
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            plan = make_plan(analyze(str(problem)))
    except Unsupported as exc:
        return record | {"planned": False, "reason": str(exc)[:300]}
    general = workspace_files(plan, device, row["code"])
    record |= {"planned": True, "plan": plan.kind, "runtime_batch": plan.specialized is None}
    record["specialized_reason"] = (plan.specialized or "")[:300]
    plan.batch_plans = {"reason": "specialized, for the side-by-side timing"}
    specialized = workspace_files(plan, device, row["code"])
    config = EvalConfig(device=device, compiled_baseline=False, precision_check=False)
    write_workspace(Path(folder) / "general", general)
    verdict = evaluate(str(problem), str(Path(folder) / "general"), config)
    record |= {
        "status": verdict.status,
        "correct": bool(verdict.correct),
        "shape_general": verdict.shape_general,
        "shapes_checked": verdict.shapes_checked,
        "failing_shape": verdict.failing_shape,
        "general_ms": verdict.runtime_ms,
        "eager_ms": verdict.eager_ms,
    }
    if not verdict.correct:
        record["log"] = (verdict.log or "")[-400:]
    if verdict.shape_general is False:
        record["shape_failure"] = (verdict.shape_failure or "")[-800:]
    if verdict.correct and record["runtime_batch"]:
        write_workspace(Path(folder) / "specialized", specialized)
        other = evaluate(str(problem), str(Path(folder) / "specialized"), config.replace(shape_check=False))
        record["specialized_ms"] = other.runtime_ms if other.correct else None
    elif verdict.correct:
        record["specialized_ms"] = verdict.runtime_ms  # the same kernels: nothing to compare
    return record


def run_problem(row, device, timeout_s):
    """One problem's record, from its own process (a kernel that faults or hangs takes nothing else with it)."""
    start = time.monotonic()
    command = [sys.executable, "-m", "bench.shape_generality", "--device", device, "--one", json.dumps(row)]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
        lines = [line for line in result.stdout.splitlines() if line.startswith("RECORD ")]
        record = (
            json.loads(lines[-1][len("RECORD ") :])
            if lines
            else {"level": row["level"], "name": row["name"], "error": result.stderr[-500:]}
        )
    except subprocess.TimeoutExpired:
        record = {"level": row["level"], "name": row["name"], "timeout": timeout_s}
    record["seconds"] = round(time.monotonic() - start, 1)
    return record


def describe(record, timeout_s):
    ratio = (
        f", specialized/general {record['specialized_ms'] / record['general_ms']:.3f}"
        if record.get("specialized_ms") and record.get("general_ms")
        else ""
    )
    outcome = (
        f"correct {record.get('correct')}, shape_general {record.get('shape_general')}{ratio}"
        if record.get("planned")
        else (record.get("reason") or record.get("error") or f"timeout after {timeout_s:.0f} s")[:120]
    )
    failing = f" [fails at {record['failing_shape']}]" if record.get("shape_general") is False else ""
    return f"L{record['level']} {record['name']}: {outcome}{failing} ({record['seconds']} s)"


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def summarize(records):
    lines = [
        "| level | problems | planned | correct | shape-general (of correct) | share | "
        "specialized / general time (geomean) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for level in sorted({r["level"] for r in records}):
        rows = [r for r in records if r["level"] == level]
        correct = [r for r in rows if r.get("correct")]
        general = [r for r in correct if r.get("shape_general")]
        ratios = [r["specialized_ms"] / r["general_ms"] for r in correct if r.get("specialized_ms") and r["general_ms"]]
        lines.append(
            f"| {level} | {len(rows)} | {sum(bool(r.get('planned')) for r in rows)} | {len(correct)} | "
            f"{len(general)} | {len(general) / max(1, len(correct)):.0%} | {geomean(ratios):.3f} ({len(ratios)}) |"
        )
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m bench.shape_generality",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cuda")
    parser.add_argument("--level", type=int, nargs="+", default=[1, 2], help="KernelBench levels")
    parser.add_argument("--limit", type=int, default=0, help="at most this many problems per level (0: all)")
    parser.add_argument("--only", default="", help="comma-separated problem names")
    parser.add_argument("--out", type=Path, default=None, help="results JSONL (default shape_generality_DEVICE.jsonl)")
    parser.add_argument("--timeout-s", type=float, default=600, help="per problem, analysis to timings")
    parser.add_argument(
        "--max-input-mb",
        type=float,
        default=0,
        help="only problems whose inputs are no larger (0: all); --limit counts these",
    )
    parser.add_argument("--every", type=int, default=1, help="every K-th problem of a level (a spread sample)")
    parser.add_argument("--workers", type=int, default=1, help="problems at once (each in its own process)")
    parser.add_argument("--budget-s", type=float, default=0, help="start no problem after this many seconds (0: none)")
    parser.add_argument("--problems", type=Path, default=DEFAULT if DEFAULT.exists() else SHARED)
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: run one problem (JSON) and print its record
    args = parser.parse_args(argv)
    if args.one:
        with tempfile.TemporaryDirectory(prefix="ks-shape-generality-") as folder:
            record = run_one(json.loads(args.one), args.device, folder)
            print("RECORD " + json.dumps(record))
        return 0
    if not args.problems.exists():
        sys.exit(f"no KernelBench problems at {args.problems}: copy ../shared/kernelbench/problems.jsonl there")
    out = args.out or Path(f"shape_generality_{args.device}.jsonl")
    done = {}
    if out.exists():
        for line in out.read_text().splitlines():
            if line.strip():
                record = json.loads(line)
                done[record["name"]] = record
    only = set(filter(None, args.only.split(",")))
    problems = load_problems(args.problems, args.level, args.limit, only, args.max_input_mb, args.every)
    records = [done[row["name"]] for row in problems if row["name"] in done]
    todo = [row for row in problems if row["name"] not in done]
    started = time.monotonic()

    def one(row):
        if args.budget_s and time.monotonic() - started > args.budget_s:
            return None  # left for the next run (resumable)
        return run_problem(row, args.device, args.timeout_s)

    with ThreadPoolExecutor(max_workers=max(1, args.workers)) as pool:
        for record in pool.map(one, todo):
            if record is None:
                continue
            with out.open("a") as fh:
                fh.write(json.dumps(record) + "\n")
            records.append(record)
            print(describe(record, args.timeout_s), flush=True)
    left = len(problems) - len(records)
    if left:
        print(f"{left} problems not run inside --budget-s: run the same command again to go on")
    print(summarize(records))
    print(
        f"reproduce: python -m bench.shape_generality --device {args.device} --level {' '.join(map(str, args.level))}"
        + (f" --limit {args.limit}" if args.limit else "")
        + (f" --only {args.only}" if args.only else "")
        + (f" --max-input-mb {args.max_input_mb:g}" if args.max_input_mb else "")
        + (f" --every {args.every}" if args.every > 1 else "")
        + f" --timeout-s {args.timeout_s:g} --out {out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
