"""The whole RL pipeline on one GPU in one command: a small model trained from scratch (tokenizer on the task
corpus), heuristic-policy episodes as RFT data, value pre-training, then PPO steps with real sandbox rewards;
prints the held-out correct rate after RFT and after PPO, the stability figures, and where the plots are.

    python -m bench.rl_pipeline [--tasks PROBLEMS.jsonl] [--out DIR] [--set KEY=VALUE ...]
    python -m bench.rl_pipeline --throughput [--config CONFIG.yaml] [--episodes N] [--out RUN]   # CPU or GPU

`--throughput` runs the same actor episodes twice side by side, generation one sequence at a time (the old
rollouts, rollouts.max_batch=1) and batched (all the step's episodes at once), and prints episodes per minute of
each and their ratio. The actor is RUN's latest (an RFT or PPO checkpoint: its episodes call tools, so generation
overlaps real builds) or, in a fresh folder, the config's model built from scratch (its replies are mostly
malformed: the figure is then generation alone). On a machine without CUDA it uses the toy config's CPU tasks.
Within one 10-minute command on the H100: `--throughput --episodes 16 --set episode.max_turns=2` (the old path
generates 32 answers of up to 512 tokens one after another). On 2 shared CPU cores, 8 episodes of 2 turns of 64
tokens, the 4.8M-parameter model of the earlier gpu.yaml: 1.32 episodes/min one at a time, 4.60 batched (3.5x;
a CPU's batched decoding is compute-bound, a GPU's per-token cost barely grows with the rows).

Tasks: KernelBench levels 1-2 (150 problems, from tests/gpu/data/ or ../shared/kernelbench/problems.jsonl) or
a synthesized dataset (`python -m training synthesize --out FILE`), taken whole. The config is
training/configs/gpu.yaml with the overrides below, sized to finish in about 8 minutes on one H100 (generation
on the live actor is serialized; tool calls and sandbox evaluations overlap in 12 threads). Outputs: DIR
(default $OUT, else a temporary folder) holds the run: metrics.jsonl, tensorboard/, plots/*.png, checkpoints/.

Needs torch with CUDA plus the `train` extra: accelerate, transformers, tokenizers, pyyaml (tensorboard and
matplotlib are optional: without them metrics go to JSONL only; plot later with `python -m training.rl.plots
DIR`). Where they are missing, carry wheels: pure Python ones are accelerate, transformers, huggingface_hub,
tqdm, filelock, fsspec, packaging, typer-slim/click and hf-xet's pure fallbacks as pip resolves them;
tokenizers, safetensors, regex and pyyaml are binary (manylinux, cp3XX of the host): `pip download
--only-binary=:all: --platform manylinux2014_x86_64 --python-version 3.XX transformers accelerate pyyaml -d
wheels/`, then `pip install --no-index --find-links wheels/ transformers accelerate pyyaml`.
"""
import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from bench._gpu import PROBLEM_SOURCES, REPO, gpu_missing

# Sized for one 10-minute command on one H100 (see the docstring); pass --set to change any of them.
OVERRIDES = ["ppo.steps=4", "ppo.episodes_per_step=12", "eval_episodes=12", "episode.max_turns=3",
             "episode.response_tokens=128", "rft.episodes=24", "value.episodes=6", "value.max_epochs=6"]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.rl_pipeline", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", help="a JSONL of problems (default: KernelBench levels 1-2)")
    parser.add_argument("--out", help="the run folder (default: $OUT/rl_pipeline or a temporary folder)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config overrides")
    parser.add_argument("--throughput", action="store_true",
                        help="episodes per minute, one sequence at a time against batched generation")
    parser.add_argument("--config", help="--throughput: the run config (default gpu.yaml, toy.yaml without CUDA)")
    parser.add_argument("--episodes", type=int, default=24, help="--throughput: episodes per measurement")
    args = parser.parse_args(argv)
    if args.throughput:
        return throughput(args)
    missing = gpu_missing("rl_pipeline")
    if missing:
        print(missing)
        return 0
    from training.rl import config as run_config
    from training.rl.cli import train
    from training.rl.metrics import read
    tasks = args.tasks or next((str(p) for p in PROBLEM_SOURCES if p.is_file()), None)
    if tasks is None:
        raise SystemExit("no tasks: pass --tasks or copy ../shared/kernelbench/problems.jsonl to tests/gpu/data/")
    out = Path(args.out or (Path(os.environ["OUT"]) / "rl_pipeline" if os.environ.get("OUT")
                            else tempfile.mkdtemp(prefix="rl-pipeline-")))
    # a dataset of your own is taken whole (gpu.yaml keeps KernelBench levels 1-2, 150 problems)
    whole = ["tasks.levels=[]", "tasks.limit=0"] if args.tasks else []
    config = run_config.override(run_config.load(REPO / "training" / "configs" / "gpu.yaml"),
                                 OVERRIDES + whole + [f"tasks.source={tasks}", f"run_dir={out}"] + args.set)
    os.environ.setdefault("KS_CACHE_DIR", str(out / "sandbox-cache"))
    t0 = time.monotonic()
    train(config, config.stages)
    wall = time.monotonic() - t0
    records = read(out)
    evals = {r["after"]: r for r in records if r["stage"] == "eval"}
    ppo = [r for r in records if r["stage"] == "ppo"]
    value = [r for r in records if r["stage"] == "value"]
    rft = [r for r in records if r["stage"] == "rft"]
    print("\n| what | figure |\n| --- | --- |")
    print(f"| tasks (train / held-out) | {_split(out)} |")
    if rft:
        print(f"| RFT: heuristic episodes kept / collected, final loss | {rft[-1]['kept']} / "
              f"{rft[-1]['collected']}, {rft[-1]['loss']:.3f} |")
    for after in ("rft", "ppo"):
        if after in evals:
            e = evals[after]
            print(f"| held-out correct rate after {after.upper()} | {e['correct_rate']:.3f} "
                  f"(mean reward {e.get('reward_mean', float('nan')):.2f}, {e['episodes']} episodes; well-formed "
                  f"turns {e.get('tool_call_rate', float('nan')):.2f}) |")
    if value:
        evs = ", ".join(f"{r['explained_variance']:.3f}" for r in value if r.get("explained_variance") is not None)
        print(f"| value pre-training: explained variance per epoch | {evs} |")
    if ppo:
        rewards = ", ".join(f"{r.get('reward_mean', 0):.2f}" for r in ppo)
        print(f"| PPO: mean reward per step | {rewards} |")
        formed = ", ".join(f"{r.get('tool_call_rate', float('nan')):.2f}" for r in ppo)
        print(f"| PPO: well-formed turns per step | {formed} |")
        print(f"| PPO: importance ratio min / max over all steps | {min(r['ratio_min'] for r in ppo):.3f} / "
              f"{max(r['ratio_max'] for r in ppo):.3f} |")
        print(f"| PPO: entropy first / last step | {ppo[0]['entropy']:.3f} / {ppo[-1]['entropy']:.3f} |")
        print(f"| PPO: rollout / update seconds per step (mean) | {sum(r['rollout_s'] for r in ppo) / len(ppo):.1f}"
              f" / {sum(r['update_s'] for r in ppo) / len(ppo):.1f} |")
    print(f"| wall time | {wall:.0f} s |")
    print(f"\nplots: {', '.join(str(p) for p in sorted((out / 'plots').glob('*.png')))}")
    print(f"reproduce: python -m bench.rl_pipeline {' '.join(sys.argv[1:])}")
    return 0


def throughput(args):
    """Episodes per minute of the same actor on the same tasks: one sequence at a time, then batched."""
    import torch

    from training.rl import config as run_config
    from training.rl.runtime import Run
    cuda = torch.cuda.is_available()
    path = Path(args.config) if args.config else REPO / "training" / "configs" / ("gpu.yaml" if cuda else "toy.yaml")
    out = Path(args.out or tempfile.mkdtemp(prefix="rl-throughput-"))
    tasks = args.tasks or (next((str(p) for p in PROBLEM_SOURCES if p.is_file()), None) if cuda else
                           str(REPO / "training" / "configs" / "toy_tasks.jsonl"))
    if tasks is None:
        raise SystemExit("no tasks: pass --tasks or copy ../shared/kernelbench/problems.jsonl to tests/gpu/data/")
    whole = ["tasks.levels=[]", "tasks.limit=0"] if args.tasks else []
    config = run_config.override(run_config.load(path), whole + [f"tasks.source={tasks}", f"run_dir={out}",
                                                                 f"rollouts.workers={args.episodes}"] + args.set)
    os.environ.setdefault("KS_CACHE_DIR", str(out / "sandbox-cache"))
    run = Run(config, quiet=True)
    actor = run.actor("ppo").to(run.accelerator.device)
    rows = []
    for label, batch in (("one sequence at a time", 1), (f"batched (max_batch {args.episodes})", args.episodes)):
        config.rollouts.max_batch = batch
        rollouts = run.rollouts()
        rollouts.sync(actor)
        chosen = run.train_tasks(args.episodes, 0)
        t0 = time.monotonic()
        trajectories = rollouts.collect(chosen, "actor", out / "throughput" / f"max_batch-{batch}")
        wall = time.monotonic() - t0
        stats = rollouts.generation_stats
        turns = sum(len(t.turns) for t in trajectories)
        tools = sum(1 for t in trajectories for turn in t.turns for call in turn.tool_calls if not call.error)
        rows.append((label, len(trajectories), turns, tools, wall, stats))
    params = sum(p.numel() for p in actor.parameters()) / 1e6
    print(f"\nactor: {params:.1f}M parameters on {run.accelerator.device}; {config.episode.max_turns} turns of at most "
          f"{config.episode.response_tokens} tokens per episode; tasks {tasks}")
    print("\n| generation | episodes | turns | tool calls run | wall s | episodes / min | new tokens / s | batches |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, episodes, turns, tools, wall, stats in rows:
        print(f"| {label} | {episodes} | {turns} | {tools} | {wall:.1f} | {episodes / wall * 60:.2f} | "
              f"{stats.get('new_tokens', 0) / wall:.0f} | {stats.get('batches', 0)} |")
    ratio = (rows[1][1] / rows[1][4]) / (rows[0][1] / rows[0][4])
    print(f"\nbatched / one at a time: {ratio:.2f}x episodes per minute")
    print(f"reproduce: python -m bench.rl_pipeline {' '.join(sys.argv[1:])}")
    return 0


def _split(out):
    import json
    split = json.loads((out / "tasks" / "split.json").read_text())
    return f"{len(split['train'])} / {len(split['held_out'])}"


if __name__ == "__main__":
    sys.exit(main())
