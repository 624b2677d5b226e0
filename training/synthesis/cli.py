"""`python -m training synthesize --count N --device cuda|cpu --out FILE [--workers N]`: build verified fused-operator
tasks into a JSONL dataset; rerun the same command to continue a stopped run.

Examples:
  python -m training synthesize --count 6000 --device cuda --out data/ops.jsonl --workers 8
  python -m training synthesize --count 20 --device cpu --out /tmp/ops.jsonl --profile tiny --min-ms 0
  python -m training synthesize --count 100 --device cuda --out ops.jsonl --backend rq --workers 32
  python -m training synthesize --count 2000 --device cuda --compose-only --max-depth 3 --out tasks.jsonl
  python -m training synthesize --list-seeds
"""

import json
import logging
import sys

from training.synthesis.compose import PROFILES
from training.synthesis.dataset import DatasetError, RunConfig
from training.synthesis.filters import DEFAULT_WINDOWS, FILTERS
from training.synthesis.seed import CLASSES


def add_arguments(parser):
    parser.description = __doc__.split("\n\n")[0]
    parser.add_argument("--count", type=int, help="tasks to keep (the run stops there)")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="the target the filters run on")
    parser.add_argument("--out", help="the dataset (JSONL); its .attempts.jsonl, .run.json, .summary.json beside it")
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="candidates probed at once (local threads driving jailed processes, or RQ jobs in flight)",
    )
    parser.add_argument("--profile", choices=sorted(PROFILES), help="size profile (default: the device's)")
    parser.add_argument("--seed", type=int, default=0, help="the run's random seed (candidate i is reproducible)")
    parser.add_argument("--min-ms", type=float, help="eager-time window, low end (default: 1 on cuda, 10 on cpu)")
    parser.add_argument("--max-ms", type=float, help="eager-time window, high end (default: 100 on cuda, 1000 on cpu)")
    parser.add_argument(
        "--max-share",
        type=float,
        default=0.9,
        help="reject tasks where one library call (GEMM, conv, attention) takes more of the time",
    )
    parser.add_argument(
        "--allow-graph-breaks",
        action="store_true",
        help="accept tasks torch.compile splits into several graphs (default: fullgraph=True)",
    )
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"))
    parser.add_argument("--max-depth", type=int, default=5, choices=range(1, 6), help="most seeds fused in a task")
    parser.add_argument(
        "--classes",
        default="",
        help=f"comma-separated operator classes to draw first seeds from ({', '.join(CLASSES)})",
    )
    parser.add_argument(
        "--composer",
        choices=("program", "llm"),
        default="program",
        help="llm: an OpenAI-compatible endpoint writes the fused problem from the drawn seeds",
    )
    parser.add_argument(
        "--compose-only",
        action="store_true",
        help="keep composed, de-duplicated candidates without running them (thousands a minute on a CPU): the "
        "execution filters are left to whoever runs them, e.g. `python -m training data`'s teacher episodes",
    )
    parser.add_argument("--base-url", default="", help="llm composer endpoint (default KS_POLICY_BASE_URL)")
    parser.add_argument("--model", default="", help="llm composer model (default: the one the endpoint serves)")
    parser.add_argument("--max-resizes", type=int, default=2, help="batch rescalings toward the window per task")
    parser.add_argument("--time-budget", type=float, default=0.3, help="seconds of timing per measurement")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per probe stage before it is stopped")
    parser.add_argument(
        "--kernelbench",
        default="",
        help="KernelBench problems.jsonl to keep out of the set "
        "(default KS_KERNELBENCH_PROBLEMS or ../shared/kernelbench)",
    )
    parser.add_argument(
        "--backend",
        choices=("local", "rq"),
        default="local",
        help="rq: enqueue candidates on --queue for RQ workers (REDIS_URL)",
    )
    parser.add_argument("--queue", help="RQ queue (default: staff-gpu for cuda, staff-cpu for cpu)")
    parser.add_argument("--redis-url", help="default REDIS_URL or redis://127.0.0.1:6379/0")
    parser.add_argument("--max-attempts", type=int, help="stop after this many candidates (default 50 x --count)")
    parser.add_argument("--time-limit", type=float, help="seconds after which no new candidate starts")
    parser.add_argument(
        "-q", "--quiet", "--no-progress", dest="no_progress", action="store_true", help="no progress bar"
    )
    parser.add_argument("--list-seeds", action="store_true", help="print the seed catalogue as JSON lines and exit")


def config_from(args):
    lo, hi = DEFAULT_WINDOWS[args.device]
    window = (args.min_ms if args.min_ms is not None else lo, args.max_ms if args.max_ms is not None else hi)
    if window[0] < 0 or window[0] >= window[1]:
        raise ValueError(f"the eager-time window {window} is empty: --min-ms must be below --max-ms")
    if not 0 < args.max_share <= 1:
        raise ValueError("--max-share must be in (0, 1]")
    classes = tuple(c for c in args.classes.split(",") if c)
    unknown = set(classes) - set(CLASSES)
    if unknown:
        raise ValueError(f"unknown operator classes {sorted(unknown)}: choose from {', '.join(CLASSES)}")
    llm = {k: v for k, v in (("base_url", args.base_url), ("model", args.model)) if v}
    if args.compose_only and args.composer != "program":
        raise ValueError("--compose-only needs the program composer: an LLM's source is fingerprinted by running it")
    return RunConfig(
        device=args.device,
        profile=args.profile or args.device,
        seed=args.seed,
        window_ms=window,
        max_share=args.max_share,
        fullgraph=not args.allow_graph_breaks,
        dtype=args.dtype,
        composer=args.composer,
        max_depth=args.max_depth,
        classes=classes,
        max_resizes=args.max_resizes,
        time_budget_s=args.time_budget,
        timeout_s=args.timeout,
        kernelbench=args.kernelbench,
        llm=llm,
        compose_only=args.compose_only,
    )


def run(args):
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.list_seeds:
        from training.synthesis.seeds import catalogue

        for seed in catalogue():
            print(json.dumps(seed.describe()))
        return 0
    if args.count is None or not args.out:
        print("python -m training synthesize: --count and --out are required", file=sys.stderr)
        return 2
    try:
        config = config_from(args)
        from training.synthesis.runner import synthesize

        summary = synthesize(
            args.out,
            config,
            args.count,
            workers=args.workers,
            backend=args.backend,
            queue=args.queue,
            redis_url=args.redis_url,
            max_attempts=args.max_attempts,
            progress=not args.no_progress,
            time_limit_s=args.time_limit,
        )
    except (ValueError, DatasetError) as exc:
        print(f"python -m training synthesize: {exc}", file=sys.stderr)
        return 2
    removed = ", ".join(f"{f} {summary['removed_by'][f]}" for f in FILTERS if f in summary["removed_by"]) or "none"
    print(f"kept {summary['kept']} of {summary['attempts']} candidates into {args.out}; removed by: {removed}")
    print(
        f"execution {summary['time']['exec_s']} s, pipeline {summary['time']['pipeline_s']} s, "
        f"wall {summary['time']['wall_s']} s; summary in {args.out}.summary.json"
    )
    return 0 if summary["kept"] >= args.count else 1
