"""The recipe of issue 20 on one GPU in one resumable command: the data build (heuristic teacher episodes over the
tasks, trajectories kept over the RFT threshold, split by task fingerprint: `python -m training data`), then a
model built here (tokenizer on the trajectories and sources) through RFT, value pre-training and PPO
(training/configs/gpu.yaml), held-out evaluations between; prints the learning curve, the stability figures and
the rollout throughput when the run is complete.

    python -m bench.rl_pipeline --tasks SYNTHESIZED.jsonl --out DIR [--budget-s 300] [--set KEY=VALUE ...]
    python -m bench.rl_pipeline --throughput [--config CONFIG.yaml] [--episodes N] [--out RUN]   # CPU or GPU

Each call starts nothing (no chunk of teacher episodes, no training step) after --budget-s seconds and keeps
what it finished (episodes under DIR/data/episodes/, checkpoints under DIR/run/checkpoints/), so it fits a
10-minute command: run it again until it prints the table. About an hour of H100 time in all for ~600 tasks.

`--finish-data` ends the data build with the episodes done so far (the other tasks are left out) and
`--data-only` stops there: the data (DIR/data/{summary.json,tasks.jsonl,trajectories.jsonl}) can then travel to
another machine, where the same command with it in place goes straight to training.

With `--distill-data DISTILL` (the folder or trajectories.jsonl of `python -m training distill-data`, built on a CPU
over the same tasks: the teacher's analysis and write turns, unverified) and `--set 'stages=[distill,rft]'` the actor
first learns those turns on every training task (gpu.yaml's distill section), then RFT on the verified episodes,
then the held-out evaluation:

    python -m training distill-data --tasks TASKS.jsonl --out DISTILL --data DIR/data/tasks.jsonl   # on a CPU
    python -m bench.rl_pipeline --tasks TASKS.jsonl --out DIR --distill-data DISTILL --set 'stages=[distill,rft]'

`--throughput` runs the same actor episodes side by side with generation one sequence at a time (the old
rollouts, rollouts.max_batch=1), batched (all the step's episodes at once) and batched with a static KV cache
(rollouts.decode=static: on CUDA the decode step is compiled into a CUDA graph), and prints episodes per minute
of each and their ratios to the first (`--modes` picks and orders them). The actor is RUN's latest (an RFT or PPO checkpoint: its episodes call tools, so generation
overlaps real builds) or, in a fresh folder, the config's model built from scratch (its replies are mostly
malformed: the figure is then generation alone). On a machine without CUDA it uses the toy config's CPU tasks.
Within one 10-minute command on the H100: `--throughput --episodes 16 --set episode.max_turns=2` (the old path
generates 32 answers of up to 512 tokens one after another). On 2 shared CPU cores, 8 episodes of 2 turns of 64
tokens, the 4.8M-parameter model of the earlier gpu.yaml: 1.32 episodes/min one at a time, 4.60 batched (3.5x;
a CPU's batched decoding is compute-bound, a GPU's per-token cost barely grows with the rows).

Tasks: a synthesized dataset (`python -m training synthesize --out FILE`) or KernelBench levels 1-2 (from
tests/gpu/data/ or ../shared/kernelbench/problems.jsonl) when none is given. Outputs under DIR: data/ (tasks.jsonl
with the split, trajectories.jsonl, summary.json), run/ (metrics.jsonl, tensorboard/, plots/*.png including
eval-learning.png, checkpoints/) and policy/ (the final actor, servable: the KernelBench command is printed).

Needs torch with CUDA plus the `train` extra: accelerate, transformers, tokenizers, pyyaml (tensorboard and
matplotlib are optional: without them metrics go to JSONL only; plot later with `python -m training.rl.plots
DIR`). Where they are missing, carry wheels: pure Python ones are accelerate, transformers, huggingface_hub,
tqdm, filelock, fsspec, packaging, typer-slim/click and hf-xet's pure fallbacks as pip resolves them;
tokenizers, safetensors, regex and pyyaml are binary (manylinux, cp3XX of the host): `pip download
--only-binary=:all: --platform manylinux2014_x86_64 --python-version 3.XX transformers accelerate pyyaml -d
wheels/`, then `pip install --no-index --find-links wheels/ transformers accelerate pyyaml`.
"""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from bench._gpu import PROBLEM_SOURCES, REPO, gpu_missing


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m bench.rl_pipeline", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", help="a synthesized dataset or JSONL of problems (default: KernelBench levels 1-2)")
    parser.add_argument("--out", help="the pipeline's folder (default: $OUT/rl_pipeline or a temporary folder)")
    parser.add_argument(
        "--budget-s",
        type=float,
        default=300.0,
        help="start no teacher episodes or training step after this many seconds",
    )
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config overrides")
    parser.add_argument(
        "--distill-data",
        help="the distill stage's data: a `python -m training distill-data` folder or its trajectories.jsonl",
    )
    parser.add_argument("--data-only", action="store_true", help="stop after the data build (train elsewhere)")
    parser.add_argument(
        "--finish-data",
        action="store_true",
        help="run no more teacher episodes: complete the data with the tasks whose episode is done",
    )
    parser.add_argument(
        "--throughput",
        action="store_true",
        help="episodes per minute, one sequence at a time against batched generation",
    )
    parser.add_argument("--config", help="--throughput: the run config (default gpu.yaml, toy.yaml without CUDA)")
    parser.add_argument("--episodes", type=int, default=24, help="--throughput: episodes per measurement")
    parser.add_argument(
        "--modes",
        default="one,batched,static",
        help="--throughput: which generations to measure, in order (one, batched, static); ratios are to the first",
    )
    args = parser.parse_args(argv)
    if args.throughput:
        return throughput(args)
    missing = gpu_missing("rl_pipeline")
    if missing:
        print(missing)
        return 0
    from training.rl import config as run_config
    from training.rl.cli import train
    from training.rl.data import build
    from training.rl.metrics import read
    from training.rl.rollouts import RolloutError
    from training.rl.runtime import OutOfTime
    from training.rl.tasks import read_rows

    tasks = args.tasks or next((str(p) for p in PROBLEM_SOURCES if p.is_file()), None)
    if tasks is None:
        raise SystemExit("no tasks: pass --tasks or copy ../shared/kernelbench/problems.jsonl to tests/gpu/data/")
    out = Path(
        args.out
        or (
            Path(os.environ["OUT"]) / "rl_pipeline"
            if os.environ.get("OUT")
            else tempfile.mkdtemp(prefix="rl-pipeline-")
        )
    ).resolve()
    data, run_dir = out / "data", out / "run"
    distill = []
    if args.distill_data:
        path = Path(args.distill_data).resolve()
        distill = [f"distill.data={path / 'trajectories.jsonl' if path.is_dir() else path}"]
    config = run_config.override(
        run_config.load(REPO / "training" / "configs" / "gpu.yaml"),
        [
            "tasks.levels=[]",
            "tasks.limit=0",
            f"tasks.source={data / 'tasks.jsonl'}",
            f"rft.data={data / 'trajectories.jsonl'}",
            f"run_dir={run_dir}",
        ]
        + distill
        + args.set,
    )
    os.environ.setdefault("KS_CACHE_DIR", str(out / "sandbox-cache"))
    t0 = time.monotonic()
    summary = json.loads((data / "summary.json").read_text()) if (data / "summary.json").is_file() else {}
    if not summary.get("complete"):
        rows = read_rows(tasks)
        if not args.tasks:  # KernelBench: levels 1 and 2 only
            rows = [r for r in rows if r.get("level") in (1, 2)]
        summary = build(config, rows, data, held_out=0.15, stop_after=args.budget_s, finish=args.finish_data)
        print(json.dumps(summary))
        rate = summary["this_call"]
        print(
            f"teacher: {rate['episodes']} episodes in {rate['seconds']:.0f} s, {rate['per_minute']} a minute, "
            f"{rate['at_once']} at once"
        )
        if not summary["complete"]:
            print(f"data: {summary['episodes_left']} teacher episodes left; run the same command again")
            return 0
    if args.data_only:
        print(f"data complete in {data}: {summary['kept_trajectories']} trajectories kept")
        return 0
    failure = None
    try:
        train(config, config.stages, stop_after=max(1.0, args.budget_s - (time.monotonic() - t0)))
    except OutOfTime as exc:
        print(f"unfinished: {exc}")
        return 0
    except RolloutError as exc:  # an evaluation or PPO's rollouts: the stages trained before it still report
        failure = exc
    wall = time.monotonic() - t0
    records = read(run_dir)
    evals = [r for r in records if r["stage"] == "eval"]
    ppo = [r for r in records if r["stage"] == "ppo"]
    value = [r for r in records if r["stage"] == "value"]
    rft = [r for r in records if r["stage"] == "rft"]
    distilled = [r for r in records if r["stage"] == "distill"]
    policy = _export(run_dir, out / "policy")
    print("\n| what | figure |\n| --- | --- |")
    print(
        f"| data: rows, distinct tasks, teacher solved / episodes, kept trajectories | {summary['rows']}, "
        f"{summary['tasks']}, {summary['tasks'] - summary['splits'].get('unreached', 0)} / {summary['episodes']}, "
        f"{summary['kept_trajectories']} |"
    )
    print(f"| tasks (train / held-out) | {_split(run_dir)} |")
    if distilled:
        print(
            f"| distill: partial trajectories, packed rows, loss first / last epoch | {distilled[-1]['trajectories']}, "
            f"{distilled[-1].get('rows')}, {distilled[0]['loss']:.3f} / {distilled[-1]['loss']:.3f} |"
        )
    if rft:
        print(
            f"| RFT: trajectories, packed rows, loss first / last epoch | {rft[-1]['kept']}, {rft[-1].get('rows')}, "
            f"{rft[0]['loss']:.3f} / {rft[-1]['loss']:.3f} |"
        )
        print(
            f"| RFT: longest teacher answer, answers over the rollout cap ({config.episode.response_tokens}) | "
            f"{rft[-1].get('answer_tokens_max')} tokens, {rft[-1].get('answers_over_cap')} |"
        )
    for e in evals:
        label = e["after"].upper() + (f" step {e['ppo_steps']}" if e["after"] == "ppo" else "")
        print(
            f"| held-out after {label}: correct rate, mean reward, well-formed turns | {e['correct_rate']:.3f}, "
            f"{e.get('reward_mean', float('nan')):.2f}, {e.get('tool_call_rate', float('nan')):.2f} "
            f"({e['episodes']} episodes, temperature {e.get('temperature', 'of the episodes')}) |"
        )
    if value:
        evs = ", ".join(f"{r['explained_variance']:.3f}" for r in value if r.get("explained_variance") is not None)
        print(f"| value pre-training: explained variance per epoch | {evs} |")
    if ppo:
        rewards = ", ".join(f"{r.get('reward_mean', 0):.2f}" for r in ppo)
        print(f"| PPO: mean reward per step | {rewards} |")
        formed = ", ".join(f"{r.get('tool_call_rate', float('nan')):.2f}" for r in ppo)
        print(f"| PPO: well-formed turns per step | {formed} |")
        print(
            f"| PPO: importance ratio min / max over all steps | {min(r['ratio_min'] for r in ppo):.3f} / "
            f"{max(r['ratio_max'] for r in ppo):.3f} |"
        )
        print(f"| PPO: entropy first / last step | {ppo[0]['entropy']:.3f} / {ppo[-1]['entropy']:.3f} |")
        print(
            f"| PPO: rollout / update seconds per step (mean) | {sum(r['rollout_s'] for r in ppo) / len(ppo):.1f}"
            f" / {sum(r['update_s'] for r in ppo) / len(ppo):.1f} |"
        )
        print(
            f"| PPO: clip fraction max, KL to the reference last, explained variance last | "
            f"{max(r.get('clip_frac', 0) for r in ppo):.4f}, {ppo[-1].get('kl_ref', float('nan')):.4f}, "
            f"{ppo[-1].get('explained_variance', float('nan')):.3f} |"
        )
        episodes = sum(r.get("episodes", 0) for r in ppo)
        print(
            f"| PPO: rollout episodes per minute | {episodes / max(sum(r['rollout_s'] for r in ppo), 1e-9) * 60:.1f} |"
        )
    print(f"| wall time of this call | {wall:.0f} s |")
    print(f"\nplots: {', '.join(str(p) for p in sorted((run_dir / 'plots').glob('*.png')))}")
    if policy:
        print(
            f"KernelBench level 1 with the trained actor: python -m training evaluate --problems "
            f"../shared/kernelbench/problems.jsonl --levels 1 --policy transformers --model {policy} --device cuda "
            f"--out {out / 'kernelbench-l1'}"
        )
    print(f"reproduce: python -m bench.rl_pipeline {' '.join(sys.argv[1:])}")
    if failure is not None:
        print(f"error: {failure}", file=sys.stderr)
        return 2
    return 0


def _export(run_dir, out):
    """The final actor as a servable folder (the last PPO checkpoint, else RFT's, else distillation's), or None."""
    from training.rl import checkpoints

    for stage in ("ppo", "rft", "distill"):
        folder = checkpoints.latest(run_dir, stage)
        if folder is not None:
            return checkpoints.export(run_dir, folder, out)
    return None


def throughput(args):
    """Episodes per minute of the same actor on the same tasks: one sequence at a time, then batched."""
    import torch

    from training.rl import config as run_config
    from training.rl.runtime import Run

    cuda = torch.cuda.is_available()
    path = Path(args.config) if args.config else REPO / "training" / "configs" / ("gpu.yaml" if cuda else "toy.yaml")
    out = Path(args.out or tempfile.mkdtemp(prefix="rl-throughput-"))
    tasks = args.tasks or (
        next((str(p) for p in PROBLEM_SOURCES if p.is_file()), None)
        if cuda
        else str(REPO / "training" / "configs" / "toy_tasks.jsonl")
    )
    if tasks is None:
        raise SystemExit("no tasks: pass --tasks or copy ../shared/kernelbench/problems.jsonl to tests/gpu/data/")
    whole = ["tasks.levels=[]", "tasks.limit=0"] if args.tasks else []
    config = run_config.override(
        run_config.load(path),
        whole + [f"tasks.source={tasks}", f"run_dir={out}", f"rollouts.workers={args.episodes}"] + args.set,
    )
    os.environ.setdefault("KS_CACHE_DIR", str(out / "sandbox-cache"))
    run = Run(config, quiet=True)
    actor = run.actor("ppo").to(run.accelerator.device)
    rows = []
    modes = {
        "one": ("one sequence at a time", 1, "dynamic"),
        "batched": (f"batched (max_batch {args.episodes})", args.episodes, "dynamic"),
        "static": (f"batched, static cache (max_batch {args.episodes})", args.episodes, "static"),
    }
    for mode in args.modes.split(","):
        label, batch, decode = modes[mode]
        config.rollouts.max_batch, config.rollouts.decode = batch, decode
        rollouts = run.rollouts()
        rollouts.sync(actor)
        chosen = run.train_tasks(args.episodes, 0)
        t0 = time.monotonic()
        trajectories = rollouts.collect(chosen, "actor", out / "throughput" / f"{mode}-{batch}")
        wall = time.monotonic() - t0
        stats = rollouts.generation_stats
        turns = sum(len(t.turns) for t in trajectories)
        tools = sum(1 for t in trajectories for turn in t.turns for call in turn.tool_calls if not call.error)
        rows.append((label, len(trajectories), turns, tools, wall, stats))
    params = sum(p.numel() for p in actor.parameters()) / 1e6
    print(
        f"\nactor: {params:.1f}M parameters on {run.accelerator.device}; {config.episode.max_turns} turns of at most "
        f"{config.episode.response_tokens} tokens per episode; tasks {tasks}"
    )
    print("\n| generation | episodes | turns | tool calls run | wall s | episodes / min | new tokens / s | batches |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, episodes, turns, tools, wall, stats in rows:
        print(
            f"| {label} | {episodes} | {turns} | {tools} | {wall:.1f} | {episodes / wall * 60:.2f} | "
            f"{stats.get('new_tokens', 0) / wall:.0f} | {stats.get('batches', 0)} |"
        )
    first = rows[0]
    for label, episodes, _, _, wall, _ in rows[1:]:
        ratio = (episodes / wall) / (first[1] / first[4])
        print(f"{label} / {first[0]}: {ratio:.2f}x episodes per minute")
    print(f"reproduce: python -m bench.rl_pipeline {' '.join(sys.argv[1:])}")
    return 0


def _split(out):
    split = json.loads((out / "tasks" / "split.json").read_text())
    return f"{len(split['train'])} / {len(split['held_out'])}"


if __name__ == "__main__":
    sys.exit(main())
