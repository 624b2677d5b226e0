"""GAE over multi-turn token sequences and the masked statistics, against values computed by hand."""

import math

import pytest
import torch

from training.rl.gae import explained_variance, gae, masked_mean, masked_whiten


def test_gae_matches_a_hand_computation_on_policy_tokens():
    # three policy tokens, reward 1 on the last; gamma 0.9, lam 0.5
    rewards = torch.tensor([[0.0, 0.0, 1.0]])
    values = torch.tensor([[0.5, 0.2, 0.4]])
    mask = torch.ones(1, 3)
    adv, ret = gae(rewards, values, mask, gamma=0.9, lam=0.5)
    d2 = 1.0 - 0.4  # terminal: no next value
    d1 = 0.0 + 0.9 * 0.4 - 0.2
    d0 = 0.0 + 0.9 * 0.2 - 0.5
    a2, a1 = d2, d1 + 0.45 * d2
    a0 = d0 + 0.45 * a1
    assert adv[0].tolist() == pytest.approx([a0, a1, a2])
    assert ret[0].tolist() == pytest.approx([a0 + 0.5, a1 + 0.2, a2 + 0.4])


def test_gae_skips_environment_tokens_between_turns():
    # turn 1 answers with tokens 1-2, the tool result is tokens 3-4, turn 2 answers with token 5
    rewards = torch.tensor([[0.0, 0.0, 0.0, 9.0, 9.0, 1.0]])  # rewards on environment tokens are ignored
    values = torch.tensor([[7.0, 0.3, 0.6, 5.0, 5.0, 0.8]])
    mask = torch.tensor([[0.0, 1.0, 1.0, 0.0, 0.0, 1.0]])
    adv, ret = gae(rewards, values, mask, gamma=1.0, lam=1.0)
    # with gamma = lam = 1, each policy token's return is the sum of rewards after it: 1
    assert ret[0].tolist() == pytest.approx([0.0, 1.0, 1.0, 0.0, 0.0, 1.0])
    assert adv[0].tolist() == pytest.approx([0.0, 0.7, 0.4, 0.0, 0.0, 0.2])
    # token 2 bootstraps from token 5 (the next policy token), not from the tool result's values
    adv_td, _ = gae(torch.tensor([[0.0, 0.0, 0.0, 0.0, 0.0, 1.0]]), values, mask, gamma=1.0, lam=0.0)
    assert adv_td[0, 2].item() == pytest.approx(0.8 - 0.6)


def test_masked_statistics_ignore_masked_entries():
    x = torch.tensor([[1.0, 2.0, 3.0, 100.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0]])
    assert masked_mean(x, mask).item() == pytest.approx(2.0)
    white = masked_whiten(x, mask)
    assert white[0, 3].item() == 0.0
    assert masked_mean(white, mask).item() == pytest.approx(0.0, abs=1e-6)
    assert masked_mean(white**2, mask).item() == pytest.approx(1.0, rel=1e-4)


def test_explained_variance_is_one_for_a_perfect_critic_and_zero_for_a_constant():
    returns = torch.tensor([[1.0, -1.0, 0.5, 2.0]])
    mask = torch.ones(1, 4)
    assert explained_variance(returns, returns, mask) == pytest.approx(1.0)
    assert explained_variance(torch.full_like(returns, 0.3), returns, mask) == pytest.approx(0.0, abs=1e-6)
    assert explained_variance(-returns, returns, mask) < 0
    assert math.isnan(explained_variance(returns, torch.ones(1, 4), mask))
