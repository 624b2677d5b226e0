"""Stage 3, value pre-training: the critic (a value head on a language model of its own) learns the returns of
states from collected trajectories, with Monte-Carlo (lam = 1) or GAE targets, until its explained variance is
positive and stays so, before any PPO step. A pre-trained critic is what lets PPO's advantages penalize long,
redundant searches instead of adding noise to them.

    python -m training train CONFIG.yaml --stage value
"""

import torch

from agent.trajectory import Trajectory
from sandbox.jsonl import write_jsonl
from training.rl import rft
from training.rl.distributed import batch_count, mean, minibatches
from training.rl.gae import explained_variance, gae, masked_mean
from training.rl.metrics import Metrics
from training.rl.ppo import token_values


def targets(critic, batch, gamma, lam):
    """Value targets of BATCH's policy tokens: returns (GAE with the critic's own values; Monte-Carlo at lam=1)."""
    with torch.no_grad():
        values = token_values(critic, batch)
    return gae(batch.rewards, values, batch.mask, gamma, lam)[1]


def loss_on(critic, batch, returns):
    return 0.5 * masked_mean((token_values(critic, batch) - returns) ** 2, batch.mask)


def measure(critic, batch, gamma, lam):
    """(value loss, explained variance) of the critic on BATCH."""
    returns = targets(critic, batch, gamma, lam)
    with torch.no_grad():
        values = token_values(critic, batch)
    return (0.5 * masked_mean((values - returns) ** 2, batch.mask)).item(), explained_variance(
        values, returns, batch.mask
    )


def fit_epoch(critic, samples, optimizer, accelerator, batch_of, cfg, gamma, order):
    """One pass of value regression over SAMPLES in ORDER; the mean loss."""
    losses = []
    for index in minibatches(order, batch_count(accelerator, len(samples), cfg.batch_size), cfg.batch_size):
        batch = batch_of([samples[j] for j in index])
        loss = loss_on(critic, batch, targets(critic, batch, gamma, cfg.lam))
        optimizer.zero_grad()
        accelerator.backward(loss)
        accelerator.clip_grad_norm_(critic.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    return sum(losses) / len(losses)


def collect(run):
    """The states to learn from: the RFT trajectories (when there are) and fresh episodes of the current actor,
    stored in RUN/value/trajectories.jsonl so a resumed stage trains on the same set."""
    path = run.dir / "value" / "trajectories.jsonl"
    stored = rft.load_trajectories(path)
    if stored:
        return stored
    trajectories = rft.load_trajectories(rft.trajectories_file(run))
    if run.config.value.episodes:
        rollouts = run.rollouts()
        rollouts.sync(run.actor("value"), run.accelerator)
        trajectories += rollouts.collect(
            run.train_tasks(run.config.value.episodes, 1), "actor", run.episodes_dir("value", 0)
        )
    write_jsonl(path, [t.to_json() for t in trajectories])
    return [Trajectory.from_json(t.to_json()) for t in trajectories]


def train(run):
    cfg, acc, gamma = run.config.value, run.accelerator, run.config.ppo.gamma
    samples = run.samples(collect(run))
    critic = run.critic("value")
    optimizer = torch.optim.AdamW(critic.parameters(), lr=cfg.lr)
    critic, optimizer = acc.prepare(critic, optimizer)
    start, state = run.resume("value", {"critic": optimizer})
    streak = state.get("streak", 0)
    metrics = Metrics(run.dir, "value")
    everything = run.batch(samples=samples)
    for epoch in run.progress(range(start, cfg.max_epochs), "value", cfg.max_epochs, start):
        order = torch.randperm(len(samples), generator=torch.Generator().manual_seed(run.config.seed + epoch)).tolist()
        train_loss = fit_epoch(
            critic, samples, optimizer, acc, lambda items: run.batch(samples=items), cfg, gamma, order
        )
        loss, ev = measure(critic, everything, gamma, cfg.lam)
        # Every rank measures its own states; convergence is judged on the mean, so all ranks stop together.
        loss, ev, train_loss = (mean(acc, x) for x in (loss, ev, train_loss))
        streak = streak + 1 if ev == ev and ev > cfg.min_explained_variance else 0
        converged = streak >= cfg.patience
        if acc.is_main_process:
            metrics.log(
                epoch,
                {
                    "value_loss": loss,
                    "train_loss": train_loss,
                    "explained_variance": ev,
                    "streak": streak,
                    "samples": len(samples),
                },
            )
        if converged or (epoch + 1) % run.config.checkpoint_every == 0 or epoch + 1 == cfg.max_epochs:
            run.save(
                "value", epoch, {"critic": critic}, {"critic": optimizer}, {"streak": streak, "converged": converged}
            )
        if converged:
            run.log.info("value: explained variance above %s for %d epochs: done", cfg.min_explained_variance, streak)
            break
    metrics.close()
    return acc.unwrap_model(critic)
