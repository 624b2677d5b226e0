"""Stage 4, multi-turn PPO: rollouts of the agent loop with the actor, sandbox rewards, GAE over policy tokens,
a token-level clipped objective, value clipping, optional KL to the reference, an entropy bonus, gradient
clipping, and loss masks on environment tokens (prompt and tool results never carry a gradient).

    python -m training train CONFIG.yaml --stage ppo
    accelerate launch -m training train CONFIG.yaml --stage ppo      # DDP/FSDP, one to many GPUs and hosts

Written by hand on purpose (see training/rl/__init__.py): TRL dropped its PPOTrainer (single-turn, tokenized
prompts only) and verl's multi-turn PPO needs Ray and its own rollout workers. The algorithm follows verl's
core_algos: token-mean aggregation, GAE that skips environment tokens, dual-clipped value loss. Under several
processes each rank runs its own share of the episodes; metrics are the main process's.
"""

import time

import torch

from training.rl.distributed import batch_count, minibatches
from training.rl.gae import explained_variance, gae, masked_mean, masked_whiten
from training.rl.metrics import Guards, Metrics, TrainingCollapsed, episode_summary, step_stats


# -- the losses ---------------------------------------------------------------------------------------------------
def policy_loss(logprobs, old_logprobs, advantages, mask, clip, clip_high=None):
    """PPO's clipped surrogate, averaged over policy tokens, and its statistics (ratios, clip fraction). The ratio
    is clipped to [1 - CLIP, 1 + CLIP_HIGH]: a higher upper bound (DAPO's clip-higher, the CUDA Agent recipe's 0.28)
    lets unlikely tokens of good answers gain probability faster, against entropy collapse."""
    ratio = torch.exp(logprobs - old_logprobs)
    unclipped = -advantages * ratio
    clipped = -advantages * torch.clamp(ratio, 1 - clip, 1 + (clip if clip_high is None else clip_high))
    loss = masked_mean(torch.maximum(unclipped, clipped), mask)
    on = mask > 0
    stats = {
        "clip_frac": masked_mean((clipped > unclipped).float(), mask).item(),
        "ratio_mean": masked_mean(ratio, mask).item(),
        "ratio_min": ratio[on].min().item() if on.any() else 1.0,
        "ratio_max": ratio[on].max().item() if on.any() else 1.0,
        "approx_kl": masked_mean(old_logprobs - logprobs, mask).item(),
    }
    return loss, stats


def value_loss(values, old_values, returns, mask, clip):
    """Half the squared error of the critic, with its change since the rollout clipped to CLIP (the larger of
    the clipped and unclipped errors, as PPO does), averaged over policy tokens."""
    clipped = old_values + torch.clamp(values - old_values, -clip, clip)
    return 0.5 * masked_mean(torch.maximum((values - returns) ** 2, (clipped - returns) ** 2), mask)


def kl_to_reference(logprobs, ref_logprobs, mask):
    """The k3 estimator of KL(actor || reference), per token: unbiased and never negative."""
    diff = ref_logprobs - logprobs
    return masked_mean(torch.exp(diff) - diff - 1, mask)


# -- model outputs, aligned with the tokens ---------------------------------------------------------------------
def per_row(forward, model, batch):
    """FORWARD(module, ids [b, n], attention [b, n] or None, positions [b, n] or None) -> [b, n, ...] over BATCH,
    as [B, T, ...]. A packed batch (positions restarting at each sample) runs without an attention mask: the model
    keeps its samples apart from the positions.

    Rows are right-padded. Where it can, each row runs alone on its own tokens (padded back with zeros):
    attention then needs no mask and takes the fused kernels, whose memory grows with the length and not its
    square (a padded batch of eight 16k-token episodes sent SDPA to its math path and asked for 30 GiB). A
    model wrapped for several processes needs one forward per backward, alike on every rank: with gradients
    it runs the padded batch in one forward; without, the unwrapped module runs row by row."""
    module = getattr(model, "module", model)
    positions = batch.positions
    if torch.is_grad_enabled() and module is not model:
        return forward(model, batch.token_ids, batch.attention if positions is None else None, positions)
    width = batch.token_ids.shape[1]
    rows = []
    for i, length in enumerate(batch.attention.sum(1).tolist()):
        out = forward(
            module,
            batch.token_ids[i : i + 1, : int(length)],
            None,
            None if positions is None else positions[i : i + 1, : int(length)],
        )
        rows.append(torch.cat([out, out.new_zeros(1, width - out.shape[1], *out.shape[2:])], 1))
    return torch.cat(rows, 0)


def token_logprobs(model, batch, temperature=1.0):
    """([B, T] log-probability of each token given the ones before it, [B, T] entropy of that distribution);
    position 0 (nothing before it) is 0."""

    def rows(module, ids, attention, positions):
        # no KV cache: scoring needs none, and transformers reads packed samples' positions only without one
        logits = (
            module(input_ids=ids, attention_mask=attention, position_ids=positions, use_cache=False)
            .logits[:, :-1]
            .float()
        )
        logp = torch.log_softmax(logits / temperature, dim=-1)
        chosen = logp.gather(-1, ids[:, 1:, None]).squeeze(-1)
        entropy = -(logp.exp() * logp).sum(-1)
        zero = chosen.new_zeros(chosen.shape[0], 1)
        return torch.stack([torch.cat([zero, chosen], 1), torch.cat([zero, entropy], 1)], -1)

    both = per_row(rows, model, batch)
    return both[..., 0], both[..., 1]


def token_values(critic, batch):
    """[B, T] values: position t holds the critic's value of the state before token t is generated."""

    def rows(module, ids, attention, positions):
        values = module(ids, attention, positions).float()[:, :-1]
        return torch.cat([values.new_zeros(values.shape[0], 1), values], 1)

    return per_row(rows, critic, batch)


# -- one PPO update -----------------------------------------------------------------------------------------------
def update(
    actor, critic, batch, cfg, actor_opt, critic_opt, accelerator, reference=None, temperature=1.0, generator=None
):
    """One PPO update on BATCH (rollouts of the current actor); returns the step's statistics."""
    mask = batch.mask
    with torch.no_grad():
        old_logprobs, _ = token_logprobs(actor, batch, temperature)
        old_values = token_values(critic, batch)
        ref_logprobs = token_logprobs(reference, batch, temperature)[0] if reference is not None else None
    advantages, returns = gae(batch.rewards, old_values, mask, cfg.gamma, cfg.lam)
    advantage_mean = masked_mean(advantages, mask).item()
    if cfg.whiten_advantages and mask.sum() > 1:
        advantages = masked_whiten(advantages, mask)
    recorded = mask * (batch.logprobs != 0)  # tokens whose rollout log-prob the policy recorded
    stats = {
        "explained_variance": explained_variance(old_values, returns, mask),
        "value_mean": masked_mean(old_values, mask).item(),
        "return_mean": masked_mean(returns, mask).item(),
        "advantage_mean": advantage_mean,
        "rollout_logprob_gap": masked_mean((batch.logprobs - old_logprobs).abs(), recorded).item()
        if recorded.sum() > 0
        else 0.0,
        "policy_tokens": int(mask.sum().item()),
        "sequence_tokens": int(batch.attention.sum().item()),
    }
    rows = []
    count = batch_count(accelerator, len(batch), cfg.minibatch_size)  # the same on every rank
    for _ in range(cfg.epochs):
        order = torch.randperm(len(batch), generator=generator).tolist()
        for chosen in minibatches(order, count, cfg.minibatch_size):
            index = torch.tensor(chosen)
            mb, mb_mask = batch.select(index), mask[index]
            # the actor: clipped surrogate, entropy bonus, KL to the reference; environment tokens masked out
            logprobs, entropy = token_logprobs(actor, mb, temperature)
            pg_loss, row = policy_loss(
                logprobs, old_logprobs[index], advantages[index], mb_mask, cfg.clip, cfg.clip_high
            )
            entropy_mean = masked_mean(entropy, mb_mask)
            loss = pg_loss - cfg.entropy_coef * entropy_mean
            if ref_logprobs is not None:
                kl = kl_to_reference(logprobs, ref_logprobs[index], mb_mask)
                loss = loss + cfg.kl_coef * kl
                row["kl_ref"] = kl.item()
            actor_opt.zero_grad()
            accelerator.backward(loss)
            row["grad_norm"] = float(accelerator.clip_grad_norm_(actor.parameters(), cfg.max_grad_norm))
            actor_opt.step()
            # the critic: clipped value loss on the same tokens
            v_loss = value_loss(token_values(critic, mb), old_values[index], returns[index], mb_mask, cfg.value_clip)
            critic_opt.zero_grad()
            accelerator.backward(cfg.value_coef * v_loss)
            row["critic_grad_norm"] = float(accelerator.clip_grad_norm_(critic.parameters(), cfg.max_grad_norm))
            critic_opt.step()
            row.update(policy_loss=pg_loss.item(), value_loss=v_loss.item(), entropy=entropy_mean.item())
            rows.append(row)
    for key in rows[0]:
        values = [r[key] for r in rows]
        stats[key] = (
            min(values) if key == "ratio_min" else max(values) if key == "ratio_max" else sum(values) / len(values)
        )
    return stats


# -- the stage ------------------------------------------------------------------------------------------------------
def train(run):
    """PPO steps from the last PPO checkpoint (or from the actor the earlier stages left and the pre-trained
    critic); each step: rollouts -> samples -> update -> metrics and guards -> checkpoint."""
    cfg, acc = run.config.ppo, run.accelerator
    actor, critic = run.actor("ppo"), run.critic("ppo")
    reference = run.reference() if cfg.kl_coef > 0 else None
    actor_opt = torch.optim.AdamW(actor.parameters(), lr=cfg.lr)
    critic_opt = torch.optim.AdamW(critic.parameters(), lr=cfg.critic_lr)
    actor, critic, actor_opt, critic_opt = acc.prepare(actor, critic, actor_opt, critic_opt)
    optimizers = {"actor": actor_opt, "critic": critic_opt}
    start, state = run.resume("ppo", optimizers)
    guards = Guards(cfg.guards, state.get("first_entropy"))
    metrics = Metrics(run.dir, "ppo")
    rollouts = run.rollouts()
    for step in run.progress(range(start, cfg.steps), "ppo", cfg.steps, start):
        t0 = time.monotonic()
        rollouts.sync(acc.unwrap_model(actor), acc)
        trajectories = rollouts.collect(
            run.train_tasks(cfg.episodes_per_step, step), "actor", run.episodes_dir("ppo", step)
        )
        rollout_s = time.monotonic() - t0
        batch = run.batch(trajectories)
        t1 = time.monotonic()
        stats = update(actor, critic, batch, cfg, actor_opt, critic_opt, acc, reference, run.config.episode.temperature)
        update_s = time.monotonic() - t1
        stats.update(rollout_s=rollout_s, update_s=update_s, rollout_failures=rollouts.failures)
        stats = step_stats(acc, stats, [episode_summary(t) for t in trajectories])  # every rank's, not this one's
        stats["tokens_per_s"] = stats["sequence_tokens"] / max(stats["rollout_s"] + stats["update_s"], 1e-9)
        alarms = guards.check(stats)
        stats["guard_alarms"] = len(alarms)
        if acc.is_main_process:
            metrics.log(step, stats)
        if alarms or (step + 1) % run.config.checkpoint_every == 0 or step + 1 == cfg.steps:
            run.save("ppo", step, {"actor": actor, "critic": critic}, optimizers, guards.state())
        if (
            cfg.eval_every
            and (step + 1) % cfg.eval_every == 0
            and step + 1 < cfg.steps
            and run.config.eval_episodes
            and acc.is_main_process
        ):
            run.evaluate("ppo", acc.unwrap_model(actor), ppo_steps=step + 1)  # the learning curve, held out
        for alarm in alarms:
            run.log.warning("ppo step %d: %s", step, alarm)
        if alarms and cfg.guards.action == "stop":
            rollouts.stop_server()
            metrics.close()
            raise TrainingCollapsed(
                f"PPO stopped at step {step} (checkpoint kept): {'; '.join(alarms)}. Lower "
                f"ppo.lr or ppo.clip, run more RFT or value pre-training, or set "
                f"ppo.guards.action: warn to go on"
            )
    rollouts.stop_server()
    metrics.close()
    return acc.unwrap_model(actor)
