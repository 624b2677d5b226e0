"""Generalized advantage estimation over multi-turn token sequences, and the masked statistics PPO needs.

Environment tokens (prompt, tool results) are not steps of the decision process: GAE skips them, carrying the
next policy token's value and advantage across, so a turn's last token bootstraps from the first token of the
next turn (verl's treatment of multi-turn sequences). Rewards sit on policy tokens only.
"""

import torch


def gae(rewards, values, mask, gamma, lam):
    """(advantages, returns), each [B, T], zero off MASK. REWARDS, VALUES and MASK are [B, T]."""
    batch, width = rewards.shape
    advantages = torch.zeros_like(rewards)
    next_value = rewards.new_zeros(batch)
    next_advantage = rewards.new_zeros(batch)
    for t in reversed(range(width)):
        step = mask[:, t] > 0
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        advantage = delta + gamma * lam * next_advantage
        advantages[:, t] = torch.where(step, advantage, torch.zeros_like(advantage))
        next_value = torch.where(step, values[:, t], next_value)
        next_advantage = torch.where(step, advantage, next_advantage)
    returns = (advantages + values) * mask
    return advantages, returns


def masked_mean(x, mask):
    return (x * mask).sum() / mask.sum().clamp(min=1)


def masked_var(x, mask):
    mean = masked_mean(x, mask)
    return masked_mean((x - mean) ** 2, mask)


def masked_whiten(x, mask, eps=1e-8):
    """X shifted and scaled to mean 0 and variance 1 over MASK; zero elsewhere."""
    return (x - masked_mean(x, mask)) * torch.rsqrt(masked_var(x, mask) + eps) * mask


def explained_variance(values, returns, mask):
    """1 - Var(returns - values) / Var(returns) over MASK: 1 is a perfect critic, 0 no better than a constant,
    negative worse than one."""
    var = masked_var(returns, mask)
    if var.item() == 0:
        return float("nan")
    return (1 - masked_var(returns - values, mask) / var).item()
