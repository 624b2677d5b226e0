r"""`python -m training evaluate`: run a policy over KernelBench levels, one episode per problem, and report.

    python -m training evaluate --problems ../shared/kernelbench/problems.jsonl --levels 1,2,3 \
        --policy heuristic --device cuda --out runs/heuristic [--workers 4] [--resume]

Episodes run as RQ jobs when Redis is configured (--redis-url URL or REDIS_URL; queue `staff-gpu` for --device cuda,
`staff-cpu` for --device cpu; start workers with `rq worker staff-gpu --url URL`), otherwise here in --workers
processes. Each result lands in OUT/results.jsonl as it finishes; --resume runs only what is missing (and collects
what workers finished while this command was away). --compare strict,relaxed runs every problem under each sandbox setting and
reports them side by side. OUT/metrics.json and OUT/metrics.md hold the report (--report-only rewrites them).
--retime evaluates the stored correct solutions again under the current timing protocol, and only that.
"""

import argparse
import dataclasses
import logging
import os
import shlex
import signal
import sys

from agent.cli import policy_options
from agent.policies import BACKENDS
from sandbox import EvalConfig

from training.evaluation import problems as problem_source
from training.evaluation import queues, report, runner
from training.evaluation.folder import EvalFolder, FolderError
from training.evaluation.jobs import EvaluationAborted, episodes_of
from training.evaluation.problems import ProblemsError
from training.evaluation.progress import Progress

# Sandbox settings an arm may combine with '+' (e.g. relaxed+graph); each sets EvalConfig fields.
SETTINGS = {
    "strict": {"strict": True},
    "relaxed": {"strict": False},
    "events": {"timing": "events"},
    "graph": {"timing": "graph"},
}
DEFAULT_SETTING = "strict"
JOB_TIMEOUT_S = 4 * 3600


class UsageError(ValueError):
    """A flag's value is unusable; the message says what to give."""


def add_arguments(parser):
    parser.description, parser.formatter_class = __doc__, argparse.RawDescriptionHelpFormatter
    what = parser.add_argument_group("problems")
    what.add_argument("--problems", help="a KernelBench checkout or a problems.jsonl (level, problem_id, name, code)")
    what.add_argument("--levels", default="1,2,3", help="comma-separated levels (default 1,2,3)")
    what.add_argument("--problem-ids", default="", help="ids, ranges, level:id: 19,20-23,2:5")
    what.add_argument("--names", default="", help="comma-separated problem names, e.g. 19_ReLU,21_Sigmoid")
    what.add_argument("--limit", type=int, default=None, help="at most this many problems per level")
    what.add_argument("--shard", default=None, help="K/N: run only the K-th of N interleaved parts")

    policy = parser.add_argument_group("policy and episode (as `python -m agent optimize`)")
    policy.add_argument("--policy", choices=tuple(BACKENDS))
    policy.add_argument("--model", help="model name (openai) or checkpoint (vllm, transformers)")
    policy.add_argument("--base-url", help="OpenAI-compatible endpoint (default: KS_POLICY_BASE_URL)")
    policy.add_argument("--temperature", type=float, default=None)
    policy.add_argument("--max-tokens", type=int, default=None, help="tokens per answer")
    policy.add_argument("--token-ids", action="store_true", help="ask the endpoint for token ids and logprobs")
    policy.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    policy.add_argument("--max-turns", type=int, default=60)
    policy.add_argument("--wall-clock", type=float, default=None, help="seconds per episode")
    policy.add_argument("--context-tokens", type=int, default=32768, help="the model's context window")

    box = parser.add_argument_group("sandbox")
    box.add_argument("--timeout", type=float, default=EvalConfig().timeout_s, help="seconds per sandbox run")
    box.add_argument("--no-compiled", action="store_true", help="skip the torch.compile baseline")
    box.add_argument(
        "--sandbox",
        default=DEFAULT_SETTING,
        help=f"the sandbox setting: {', '.join(SETTINGS)}, combined with + (default {DEFAULT_SETTING})",
    )
    box.add_argument("--compare", default="", help="two or more settings to run side by side, e.g. strict,relaxed")
    box.add_argument(
        "--sandbox-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set any EvalConfig field, e.g. time_budget_s=0.5 (repeatable)",
    )

    run = parser.add_argument_group("running")
    run.add_argument("--out", required=True, help="the evaluation's folder")
    run.add_argument("--resume", action="store_true", help="continue the evaluation in --out")
    run.add_argument("--workers", type=int, default=None, help="parallel episodes when running in-process (default 1)")
    run.add_argument(
        "--redis-url",
        "--redis",
        dest="redis",
        default=os.environ.get("REDIS_URL", ""),
        help="run episodes as RQ jobs on this Redis (default: REDIS_URL)",
    )
    run.add_argument("--in-process", action="store_true", help="run here even when Redis is configured")
    run.add_argument("--queue", default=None, help="RQ queue (default: staff-gpu for cuda, staff-cpu for cpu)")
    run.add_argument("--job-timeout", type=float, default=JOB_TIMEOUT_S, help="seconds an RQ job may run")
    run.add_argument(
        "--stop-after",
        type=float,
        default=None,
        help="start no episode after this many seconds (those running finish); --resume continues",
    )
    run.add_argument("--report-only", action="store_true", help="only rewrite metrics.json and metrics.md of --out")
    run.add_argument(
        "--rerun",
        action="store_true",
        help="with --resume and --names or --problem-ids: run the episodes of those problems again "
        "although results are stored (after the policy changed); the newest result counts",
    )
    run.add_argument(
        "--retime",
        action="store_true",
        help="re-time the correct solutions stored in --out under the current timing protocol (their "
        "problems from --problems), then rewrite the report; no episode runs",
    )
    run.add_argument("-q", "--quiet", action="store_true", help="no progress output")


def parse_setting(text):
    """'relaxed+graph' -> ('relaxed+graph', {"strict": False, "timing": "graph"})."""
    tokens = [t.strip().lower() for t in text.split("+") if t.strip()]
    if not tokens:
        raise UsageError(f"a sandbox setting names one or more of {', '.join(SETTINGS)} joined by +")
    fields = {}
    for token in tokens:
        if token not in SETTINGS:
            raise UsageError(f"unknown sandbox setting {token!r}: choose from {', '.join(SETTINGS)} (join with +)")
        for key, value in SETTINGS[token].items():
            if fields.get(key, value) != value:
                raise UsageError(f"sandbox setting {text!r} sets {key} twice")
            fields[key] = value
    return "+".join(tokens), fields


def parse_options(items):
    """['time_budget_s=0.5', ...] -> {"time_budget_s": 0.5}, typed after EvalConfig's defaults."""
    defaults = EvalConfig()
    names = {f.name for f in dataclasses.fields(EvalConfig)} - {"device"}
    out = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or key not in names:
            raise UsageError(
                f"--sandbox-option takes KEY=VALUE with KEY one of {', '.join(sorted(names))} (not {item!r})"
            )
        kind = type(getattr(defaults, key))
        try:
            if kind is bool:
                if raw.lower() not in ("true", "false", "1", "0"):
                    raise ValueError
                value = raw.lower() in ("true", "1")
            else:
                value = kind(raw)
        except ValueError:
            raise UsageError(f"--sandbox-option {key} takes a {kind.__name__}, not {raw!r}") from None
        out[key] = value
    return out


def arms_of(args):
    """{arm name: EvalConfig JSON}: one arm, or one per --compare setting."""
    if args.compare and args.sandbox != DEFAULT_SETTING:
        raise UsageError("--compare lists every setting to run: drop --sandbox")
    settings = [s for s in args.compare.split(",") if s.strip()] if args.compare else [args.sandbox]
    if args.compare and len(settings) < 2:
        raise UsageError("--compare takes two or more settings, such as strict,relaxed")
    base = EvalConfig(device=args.device, timeout_s=args.timeout, compiled_baseline=not args.no_compiled)
    options = parse_options(args.sandbox_option)
    arms = {}
    for text in settings:
        name, fields = parse_setting(text)
        if name in arms:
            raise UsageError(f"--compare lists {name} twice")
        try:
            arms[name] = base.replace(**{**options, **fields}).to_json()
        except (ValueError, TypeError) as exc:
            raise UsageError(f"sandbox setting {name}: {exc}") from None
    return arms


def _select(args):
    levels = problem_source.parse_levels(args.levels)
    ids = problem_source.parse_ids(args.problem_ids) if args.problem_ids else None
    names = {n.strip() for n in args.names.split(",") if n.strip()} or None
    shard = problem_source.parse_shard(args.shard) if args.shard else None
    if args.limit is not None and args.limit < 1:
        raise UsageError("--limit takes a number of problems per level, 1 or more")
    chosen = problem_source.select(problem_source.read_problems(args.problems), levels, ids, names, args.limit, shard)
    if not chosen:
        raise UsageError(
            f"no problem of {args.problems} matches --levels {args.levels}"
            + (f" --problem-ids {args.problem_ids}" if args.problem_ids else "")
            + (f" --names {args.names}" if args.names else "")
            + (f" --shard {args.shard}" if args.shard else "")
        )
    return chosen


def _spec(args, arms):
    return {
        "policy": args.policy,
        "policy_options": policy_options(args),
        "device": args.device,
        "max_turns": args.max_turns,
        "wall_clock_s": args.wall_clock,
        "context_tokens": args.context_tokens,
        "response_tokens": args.max_tokens or 4096,
        "arms": arms,
        "problems": str(args.problems),
        "command": shlex.join(["python", "-m", "training", *sys.argv[1:]]) if sys.argv[1:2] == ["evaluate"] else "",
    }


def _report(folder, quiet):
    data = report.write(folder)
    if not quiet:
        text = report.markdown(data)
        print(text.split("\n## Conventions")[0].rstrip())
    print(f"wrote {folder.path / 'metrics.md'} and {folder.path / 'metrics.json'}")
    return data


def _check(args):
    if args.report_only:
        return
    if args.retime:
        if not args.problems:
            raise UsageError("--problems is required with --retime: the solutions are evaluated on them again")
        if args.workers is not None and args.workers < 1:
            raise UsageError("--workers takes 1 or more")
        return
    for flag, value in (("--problems", args.problems), ("--policy", args.policy)):
        if not value:
            raise UsageError(f"{flag} is required (unless --report-only)")
    if args.rerun and not (args.resume and (args.names or args.problem_ids)):
        raise UsageError(
            "--rerun needs --resume and the problems to run again (--names or --problem-ids): it "
            "never re-runs a whole evaluation by accident"
        )
    for flag, value in (("--max-turns", args.max_turns), ("--workers", args.workers)):
        if value is not None and value < 1:
            raise UsageError(f"{flag} takes 1 or more")


def run(args):
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    folder = EvalFolder(args.out)
    try:
        _check(args)
        if args.report_only:
            folder.lock()
            folder.read_spec()
            _report(folder, args.quiet)
            return 0
        if args.retime:
            folder.lock()
            folder.spec = folder.read_spec()
            chosen = {p.key: p for p in problem_source.read_problems(args.problems)}
            return _retime(args, folder, chosen)
        arms = arms_of(args)
        chosen = _select(args)
        folder.open(_spec(args, arms), args.resume)
    except (UsageError, ProblemsError, FolderError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        folder.close()
        return 2
    try:
        return _evaluate(args, folder, arms, chosen)
    finally:
        folder.close()


def _retime(args, folder, chosen):
    from training.evaluation import retime

    stale = len(retime.stale(folder))
    print(f"{stale} stored correct solution(s) to re-time in {folder.path}, {args.workers or 1} at a time", flush=True)
    progress = Progress(stale, quiet=args.quiet)
    work = runner.Runner(folder, progress, args.stop_after)
    status = 0
    try:
        done, skipped = retime.retime(folder, chosen, work, args.workers or 1, progress.note)
        print(
            f"re-timed {done}, skipped {skipped}"
            + (f"; {work.not_started} left: run the same command again" if work.not_started else "")
        )
    except KeyboardInterrupt:
        print("\ninterrupted: what was re-timed is stored; run the same command again to continue", file=sys.stderr)
        status = 130
    finally:
        progress.close()
    _report(folder, args.quiet)
    return status


def _evaluate(args, folder, arms, chosen):
    spec = folder.spec
    requests, done = runner.pending_requests(
        folder, chosen, episodes_of(spec), spec["policy"], spec["policy_options"], rerun=args.rerun
    )
    use_rq = bool(args.redis) and not args.in_process
    where = (
        f"RQ queue {args.queue or queues.queue_name(args.device)!r} on {args.redis}"
        if use_rq
        else f"{args.workers or 1} local process(es)"
    )
    print(
        f"{len(requests)} episode(s) to run, {done} finished already ({len(chosen)} problem(s) x {len(arms)} "
        f"setting(s)); policy {args.policy} on {args.device}, in {where}; results in {folder.path}",
        flush=True,
    )
    if use_rq and args.workers:
        print("note: --workers counts local processes; with RQ, start more `rq worker` processes instead")
    progress = Progress(len(requests) + done, done, quiet=args.quiet)
    work = runner.Runner(folder, progress, args.stop_after)
    status = 0
    # SIGTERM (a job scheduler's or `timeout`'s stop) ends the run like Ctrl-C: stored results stay, episodes
    # in flight end cleanly, and --resume continues.
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        if requests and use_rq:
            connection = queues.connect(args.redis)
            runner.run_rq(requests, work, connection, args.queue or queues.queue_name(args.device), args.job_timeout)
        elif requests:
            runner.run_local(requests, work, args.workers or 1)
    except queues.QueueUnavailable as exc:
        progress.close()
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except EvaluationAborted as exc:
        print(
            f"error: {exc}\nnothing stored was lost: fix it, then run the same command with --resume", file=sys.stderr
        )
        status = 2
    except KeyboardInterrupt:
        print(
            "\ninterrupted: finished episodes are stored"
            + (" and queued jobs stay queued" if use_rq else "")
            + "; run the same command with --resume to continue",
            file=sys.stderr,
        )
        status = 130
    finally:
        signal.signal(signal.SIGTERM, previous)
        progress.close()
    if work.not_started:
        print(
            f"--stop-after {args.stop_after:g} s reached: {work.not_started} episode(s) not started; run the "
            f"same command with --resume to continue"
        )
    _report(folder, args.quiet)
    return status
