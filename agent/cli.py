"""`python -m agent optimize PROBLEM.py --policy ... --device ... --out DIR`: one episode from the command line.

Writes DIR/solution.py (the best solution, KernelBench style and self-contained), DIR/workspace/ (holding
that solution's files), DIR/trajectory.json and DIR/verdict.json, and prints a line per turn.
"""

import argparse
import json
import logging
import shutil
import sys
import time
from pathlib import Path

from sandbox import EvalConfig
from sandbox.errors import MisuseError

from agent.loop import Episode, EpisodeConfig, save
from agent.policies import BACKENDS, PolicyUnavailable, make_policy

# Which command-line options each back-end takes (the heuristic policy takes none).
POLICY_OPTIONS = {
    "openai": ("model", "base_url", "temperature", "max_tokens", "token_ids"),
    "vllm": ("model", "temperature", "max_tokens"),
    "transformers": ("model", "temperature", "max_new_tokens"),
    "heuristic": (),
}


def policy_options(args):
    values = {
        "model": args.model,
        "base_url": args.base_url,
        "temperature": args.temperature,
        "max_tokens": args.max_tokens,
        "max_new_tokens": args.max_tokens,
        "token_ids": args.token_ids or None,
    }
    return {k: values[k] for k in POLICY_OPTIONS[args.policy] if values[k] is not None}


def progress(turn, max_turns, out=sys.stdout):
    calls = "; ".join(call.describe() for call in turn.tool_calls) or "(no tool call)"
    print(
        f"turn {turn.index}/{max_turns}  {calls}  [policy {turn.policy_s:.1f} s, tools {turn.tools_s:.1f} s]",
        file=out,
        flush=True,
    )
    for call in turn.tool_calls:
        if call.error:
            print(f"    error: {call.error}", file=out, flush=True)
        elif call.verdict:
            print(f"    {call.observation.splitlines()[0]}", file=out, flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m agent", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    opt = sub.add_parser("optimize", help="run one episode on a KernelBench problem")
    opt.add_argument("problem", help="a KernelBench problem file (Model, get_inputs, get_init_inputs)")
    opt.add_argument("--policy", choices=tuple(BACKENDS), required=True)
    opt.add_argument("--model", help="model name (openai) or checkpoint (vllm, transformers)")
    opt.add_argument(
        "--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 (default: KS_POLICY_BASE_URL)"
    )
    opt.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    opt.add_argument("--max-turns", type=int, default=60)
    opt.add_argument("--wall-clock", type=float, default=None, help="seconds for the whole episode")
    opt.add_argument("--out", required=True, help="output folder")
    opt.add_argument("--context-tokens", type=int, default=32768, help="the model's context window")
    opt.add_argument("--temperature", type=float, default=None)
    opt.add_argument("--max-tokens", type=int, default=None, help="tokens per answer")
    opt.add_argument("--token-ids", action="store_true", help="ask the endpoint for token ids and logprobs (vLLM)")
    opt.add_argument("--timeout", type=float, default=EvalConfig().timeout_s, help="seconds per sandbox run")
    opt.add_argument("--no-compiled", action="store_true", help="skip the torch.compile baseline")
    opt.add_argument("-q", "--quiet", action="store_true", help="no per-turn progress")
    opt.add_argument(
        "--json",
        action="store_true",
        help="print the best verdict as one JSON object on stdout (progress and notes go to stderr)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    problem, out = Path(args.problem), Path(args.out)
    if not problem.is_file():
        print(f"error: {problem} does not exist", file=sys.stderr)
        return 2
    if (out / "workspace").exists() and any((out / "workspace").iterdir()):
        print(f"error: {out / 'workspace'} is not empty: choose a fresh --out", file=sys.stderr)
        return 2
    config = EpisodeConfig(
        device=args.device,
        max_turns=args.max_turns,
        wall_clock_s=args.wall_clock,
        context_tokens=args.context_tokens,
        response_tokens=args.max_tokens or 4096,
        eval=EvalConfig(device=args.device, timeout_s=args.timeout, compiled_baseline=not args.no_compiled),
    )
    notes = sys.stderr if args.json else sys.stdout
    on_turn = None if args.quiet else (lambda turn: progress(turn, args.max_turns, notes))
    t0 = time.monotonic()
    try:
        policy = make_policy(args.policy, **policy_options(args))
        try:
            trajectory = Episode(problem, policy, out / "workspace", config, on_turn).run()
        finally:
            policy.close()
    except (PolicyUnavailable, MisuseError) as exc:
        # Nothing was done: leave no half-made workspace behind, so that the same command can run again.
        shutil.rmtree(out / "workspace", ignore_errors=True)
        print(f"error: {exc}", file=sys.stderr)
        return 2
    save(trajectory, out)
    v = trajectory.verdict
    print(
        f"{trajectory.stop_reason} after {len(trajectory.turns)} turns, {time.monotonic() - t0:.0f} s: "
        f"{v['status']}, reward {v['reward']}"
        + (f", {v['runtime_ms']:.4f} ms, {v['speedup_vs_eager']:.2f}x eager" if v["correct"] else "")
        + _matched(v),
        file=notes,
    )
    print(
        f"wrote {out / 'solution.py'}, {out / 'workspace'}, {out / 'trajectory.json'}, {out / 'verdict.json'}",
        file=notes,
    )
    if args.json:
        print(json.dumps(v, sort_keys=True))
    return 0


def _matched(verdict):
    """The precision-matched speedup, where the sandbox measured one that differs from the default baseline's."""
    tf32, default = verdict.get("speedup_vs_eager_tf32"), verdict.get("speedup_vs_eager")
    if not verdict.get("correct") or tf32 is None or default is None or abs(tf32 - default) < 0.005 * default:
        return ""
    return f" ({tf32:.2f}x eager with TF32 allowed in the baseline too)"
