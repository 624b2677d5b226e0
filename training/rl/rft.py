"""Stage 2, rejection fine-tuning: episodes (the heuristic optimizer's, or the actor's own), kept when their
reward clears a threshold, then supervised fine-tuning of the actor with the loss on policy tokens only.

    python -m training train CONFIG.yaml --stage rft

The episodes are collected once and stored in RUN/rft/trajectories.jsonl, so a resumed stage trains on the same
data; value pre-training reuses them.
"""

from pathlib import Path

import torch

from agent.trajectory import Trajectory
from sandbox.jsonl import read_jsonl, write_jsonl
from training.rl import tokens
from training.rl.distributed import batch_count, gather, minibatches
from training.rl.gae import masked_mean
from training.rl.metrics import Metrics, distribution, merge_process_stats
from training.rl.ppo import token_logprobs
from training.rl.schedule import lr_at, set_lr
from training.rl.tokens import episode_reward


class RFTError(RuntimeError):
    """Nothing to fine-tune on; the message says what to change."""


def keep(trajectories, threshold):
    """The trajectories whose episode reward is at least THRESHOLD."""
    return [t for t in trajectories if episode_reward(t) >= threshold]


def sft_loss(model, batch):
    """Mean negative log-likelihood of the policy tokens (prompts and tool results carry no loss)."""
    logprobs, _ = token_logprobs(model, batch)
    return -masked_mean(logprobs, batch.mask)


def answer_lengths(samples):
    """The token count of every answer in SAMPLES (each run of policy tokens in a mask)."""
    lengths = []
    for sample in samples:
        n = 0
        for bit in list(sample.mask) + [0]:
            if bit:
                n += 1
            elif n:
                lengths.append(n)
                n = 0
    return lengths


def trajectories_file(run):
    """Where the stage's trajectories are: a data build's (rft.data), else those collected into the run."""
    if run.config.rft.data:
        return Path(run.config.rft.data)
    return run.dir / "rft" / "trajectories.jsonl"


def load_trajectories(path):
    return [Trajectory.from_json(row) for row in read_jsonl(path)]


def collect(run, actor=None):
    """The stage's episodes: read back when stored, else run on the training tasks and stored."""
    path = trajectories_file(run)
    stored = load_trajectories(path)
    if stored:
        return stored
    if run.config.rft.data:
        raise RFTError(
            f"rft.data {path} holds no trajectory: build it with `python -m training data` (its "
            f"trajectories.jsonl), or leave rft.data empty to collect episodes in the run"
        )
    cfg = run.config.rft
    rollouts = run.rollouts()
    if cfg.source == "policy":
        rollouts.sync(actor, run.accelerator)
    trajectories = rollouts.collect(
        run.train_tasks(cfg.episodes, 0), "actor" if cfg.source == "policy" else "heuristic", run.episodes_dir("rft", 0)
    )
    rollouts.stop_server()
    write_jsonl(path, [t.to_json() for t in trajectories])
    return trajectories


def train(run):
    cfg = run.config.rft
    actor = run.actor("rft")
    trajectories = collect(run, actor)
    kept = keep(trajectories, cfg.threshold)
    if not kept:
        rewards = sorted(episode_reward(t) for t in trajectories)
        raise RFTError(
            f"no trajectory of {len(trajectories)} reached rft.threshold {cfg.threshold} (rewards "
            f"{rewards}): lower the threshold or collect more episodes (rft.episodes)"
        )
    figures = {
        "collected": len(trajectories),
        "kept": len(kept),
        "kept_fraction": len(kept) / len(trajectories),
        **distribution("kept_reward", [episode_reward(t) for t in kept]),
    }
    return fine_tune(run, "rft", actor, run.samples(kept), figures, {"collected", "kept"})


def fine_tune(run, stage, actor, samples, figures=None, summed=()):
    """Supervised fine-tuning of ACTOR on SAMPLES with the loss on policy tokens only, under the run's STAGE section
    (config.FineTuneConfig: epochs, lr, batch size, packing, schedule), resumed from and checkpointed as STAGE. Each
    epoch's record holds FIGURES, the stage's own (SUMMED: those added up over the ranks, the others averaged).
    Returns the unwrapped actor."""
    cfg, acc = getattr(run.config, stage), run.accelerator
    answers = answer_lengths(samples)
    cap = run.config.episode.response_tokens
    over = sum(n > cap for n in answers)
    if over:
        run.log.warning(
            "%s: %d of %d teacher answers are longer than episode.response_tokens %d (longest %d): the actor's "
            "own answers are cut there",
            stage,
            over,
            len(answers),
            cap,
            max(answers),
        )
    rows = tokens.pack(samples, cfg.max_tokens) if cfg.pack else samples
    optimizer = torch.optim.AdamW(actor.parameters(), lr=cfg.lr)
    actor, optimizer = acc.prepare(actor, optimizer)
    start, _ = run.resume(stage, {"actor": optimizer})
    metrics = Metrics(run.dir, stage)
    per_epoch = batch_count(acc, len(rows), cfg.batch_size)
    for epoch in run.progress(range(start, cfg.epochs), stage, cfg.epochs, start):
        order = torch.randperm(len(rows), generator=torch.Generator().manual_seed(run.config.seed + epoch))
        losses, norms = [], []
        for b, index in enumerate(minibatches(order.tolist(), per_epoch, cfg.batch_size)):
            lr = lr_at(
                epoch * per_epoch + b, cfg.epochs * per_epoch, cfg.lr, cfg.schedule, cfg.warmup, cfg.min_lr_ratio
            )
            set_lr(optimizer, lr)
            batch = run.batch(samples=[rows[j] for j in index])
            loss = sft_loss(actor, batch)
            optimizer.zero_grad()
            acc.backward(loss)
            norms.append(float(acc.clip_grad_norm_(actor.parameters(), run.config.ppo.max_grad_norm)))
            optimizer.step()
            losses.append(loss.item())
        record = {
            "loss": sum(losses) / len(losses),
            "grad_norm": sum(norms) / len(norms),
            "lr": lr,
            "rows": len(rows),
            "policy_tokens": sum(sum(s.mask) for s in samples),
            "answer_tokens_max": max(answers, default=0),
            "answers_over_cap": over,
            **(figures or {}),
        }
        record = merge_process_stats(
            gather(acc, (record, [])),
            summed={"policy_tokens", "rows", "answers_over_cap", *summed},
            episodes=False,
        )  # every rank's share of the samples
        if acc.is_main_process:
            metrics.log(epoch, record)
        if (epoch + 1) % run.config.checkpoint_every == 0 or epoch + 1 == cfg.epochs:
            run.save(stage, epoch, {"actor": actor}, {"actor": optimizer})
    metrics.close()
    return acc.unwrap_model(actor)
