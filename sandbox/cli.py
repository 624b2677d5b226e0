"""`python -m sandbox`: evaluate, profile, validate and build from the command line."""

import argparse
import json
import logging
import sys

from sandbox.config import EvalConfig
from sandbox.errors import BuildError, MisuseError, SandboxError
from sandbox.reward import DEFAULT_SCHEDULE, SCHEDULES


def _config(args, **extra):
    return EvalConfig(
        device=args.device,
        trials=args.trials,
        atol=args.atol,
        rtol=args.rtol,
        timeout_s=args.timeout,
        strict=not args.relaxed,
        timing=args.timing,
        reward=args.reward,
        margin=args.margin,
        shape_check=not args.no_shape_check,
        compiled_baseline=not args.no_compiled,
        **extra,
    )


def _eval_args(p):
    p.add_argument("problem")
    p.add_argument("solution", help="a KernelBench-style .py file or a native workspace folder")
    p.add_argument(
        "--device",
        choices=("cuda", "cpu"),
        default="cuda",
        help="the target: cuda (CUDA kernels on this host's GPU) or cpu (C++ kernels); default cuda",
    )
    p.add_argument("--json", action="store_true", help="print the verdict as one JSON object")
    p.add_argument(
        "--timeout",
        type=float,
        default=EvalConfig().timeout_s,
        help="seconds the solution may take to load (building its extensions) and run its trials, and "
        "again to be timed; the default (KS_SANDBOX_TIMEOUT, 300) covers torch's own load_inline of a "
        "CUDA extension on two cores three times over",
    )
    p.add_argument("--trials", type=int, default=5, help="correctness trials on fresh random inputs (default 5)")
    p.add_argument("--atol", type=float, default=1e-2, help="absolute tolerance against the reference (default 1e-2)")
    p.add_argument("--rtol", type=float, default=1e-2, help="relative tolerance against the reference (default 1e-2)")
    p.add_argument("--relaxed", action="store_true", help="record PyTorch fallbacks instead of failing on them")
    p.add_argument(
        "--timing",
        choices=("auto", "events", "graph"),
        default="auto",
        help="auto: CUDA-graph replay for a launch-bound problem (eager under 0.1 ms), device events "
        "otherwise, one protocol for baselines and solution; events or graph: that protocol always",
    )
    p.add_argument(
        "--reward",
        choices=SCHEDULES,
        default=DEFAULT_SCHEDULE,
        help="reward schedule: paper (CUDA Agent's Eq. 1: -1 failed, 1 correct, 2 more than 5%% faster "
        "than eager, 3 than eager and torch.compile) or milestone (-1 failed, 0 correct, 1 faster "
        "than eager, 2 than both, 3 than both by 5%%)",
    )
    p.add_argument(
        "--margin",
        type=float,
        default=0.05,
        help="paper: the share of a baseline's time to save (0.05: more than 5%% faster); milestone: "
        "the speedup margin of the top reward",
    )
    p.add_argument("--no-compiled", action="store_true", help="skip the torch.compile baseline")
    p.add_argument(
        "--no-shape-check",
        action="store_true",
        help="skip the trials at other sizes (the batch halved and doubled, or the problem's "
        "get_input_variants()) that decide the verdict's shape_general",
    )


def main(argv=None):
    return _run(build_parser(), argv)


def build_parser():
    """The command line's parser: its subcommands and their options."""
    parser = argparse.ArgumentParser(prog="python -m sandbox", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    _eval_args(sub.add_parser("evaluate", help="build, verify, time and reward a solution"))
    prof = sub.add_parser("profile", help="evaluate and print per-kernel tables for reference and solution")
    _eval_args(prof)
    prof.add_argument("--ncu", action="store_true", help="add DRAM and SM throughput from Nsight Compute")
    val = sub.add_parser("validate", help="check a problem file and print its input and output spec")
    val.add_argument("problem")
    val.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="where the problem runs (default cuda)")
    build = sub.add_parser("build", help="build a native workspace (cached) and print the library path")
    build.add_argument("workspace")
    build.add_argument(
        "--device",
        choices=("cuda", "cpu"),
        default=None,
        help="build for this target (default: cuda where kernels/ holds .cu files, else cpu)",
    )
    pkg = sub.add_parser("package", help="write a pip-installable PyTorch extension package of a solution")
    pkg.add_argument("problem")
    pkg.add_argument("solution", help="a KernelBench-style .py file (load_inline) or a native workspace folder")
    pkg.add_argument("--out", required=True, help="folder for NAME-VERSION.tar.gz and the wheel")
    pkg.add_argument("--name", help="distribution name (default ks-<problem>); its import name is the op namespace")
    pkg.add_argument("--verdict", help="the JSON of `evaluate --json`, whose measurements go into the README")
    pkg.add_argument(
        "--wheel",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="build the wheel too (default: where this machine can compile the kernels)",
    )
    pkg.add_argument(
        "--check",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="install the wheel into a fresh virtual environment and run the package's own tests; a "
        "failing test is an error naming it (default: on; --no-check skips it)",
    )
    pkg.add_argument(
        "--allow-specialized",
        action="store_true",
        help="package a solution whose --verdict says it is specialised to the problem's shapes (shape_general "
        "false), which is refused otherwise; the package's README and notes then say it only accepts those shapes",
    )
    return parser


def _run(parser, argv):
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        return _dispatch(args)
    except MisuseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BuildError as exc:
        print(f"build failed: {exc}\n{exc.log}", file=sys.stderr)
        return 1
    except SandboxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _dispatch(args):
    from sandbox import evaluate

    if args.command == "validate":
        from sandbox.validate import validate_problem

        print(json.dumps(validate_problem(args.problem, args.device), indent=2))
        return 0
    if args.command == "build":
        from sandbox.native import build_workspace

        result = build_workspace(args.workspace, args.device)
        print(json.dumps({"library": result.library, "cached": result.cached, "seconds": round(result.seconds, 3)}))
        return 0
    if args.command == "package":
        from pathlib import Path

        from sandbox.package import PackageCheckFailed, package_solution

        if args.verdict and not Path(args.verdict).is_file():
            raise MisuseError(f"verdict file {args.verdict} does not exist")
        verdict = json.loads(Path(args.verdict).read_text()) if args.verdict else None
        try:
            result = package_solution(
                args.problem,
                args.solution,
                args.out,
                args.name,
                verdict,
                args.wheel,
                check=args.check,
                allow_specialized=args.allow_specialized,
            )
        except PackageCheckFailed as failed:
            print(f"{failed.log}\nerror: {failed}", file=sys.stderr)
            print(json.dumps(failed.result.to_json(), indent=2))
            return 1
        print(json.dumps(result.to_json(), indent=2))
        return 0
    profiling = args.command == "profile"
    verdict = evaluate(args.problem, args.solution, _config(args, profile=profiling, ncu=getattr(args, "ncu", False)))
    if args.json:
        print(verdict.dumps())
    else:
        print(verdict.summary())
        if verdict.log:
            print(verdict.log)
        if profiling:
            from sandbox.profiling import format_ncu, format_table

            for who in ("reference", "candidate"):
                if who in verdict.profile:
                    print(f"\n{who} (torch.profiler):\n{format_table(verdict.profile[who])}")
                if f"ncu_{who}" in verdict.profile:
                    print(f"\n{who} (Nsight Compute):\n{format_ncu(verdict.profile[f'ncu_{who}'])}")
                if verdict.profile.get(f"ncu_{who}_error"):
                    print(f"ncu failed for the {who}: {verdict.profile[f'ncu_{who}_error']}")
    return 0
