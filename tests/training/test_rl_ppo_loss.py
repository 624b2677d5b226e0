"""PPO's losses against hand-computed values, and the loss masks: environment tokens never carry a gradient."""

import math

import pytest
import torch

from training.rl.metrics import Guards
from training.rl.config import GuardsConfig
from training.rl.ppo import kl_to_reference, policy_loss, value_loss


def test_the_clipped_surrogate_matches_a_hand_computation():
    old = torch.log(torch.tensor([[0.5, 0.5, 0.5]]))
    new = torch.log(torch.tensor([[0.75, 0.25, 0.55]]))  # ratios 1.5, 0.5, 1.1
    adv = torch.tensor([[1.0, -2.0, 3.0]])
    mask = torch.ones(1, 3)
    loss, stats = policy_loss(new, old, adv, mask, clip=0.2)
    # token 0: min(1.5, 1.2) * 1 = 1.2; token 1: max of -(-2 * 0.5), -(-2 * 0.8) -> 1.6; token 2: 1.1 * 3 = 3.3
    assert loss.item() == pytest.approx(-(1.2 - 1.6 + 3.3) / 3)
    assert stats["clip_frac"] == pytest.approx(2 / 3)
    assert (stats["ratio_min"], stats["ratio_max"]) == pytest.approx((0.5, 1.5))
    assert stats["ratio_mean"] == pytest.approx((1.5 + 0.5 + 1.1) / 3)


def test_the_value_loss_takes_the_larger_of_clipped_and_unclipped_errors():
    values = torch.tensor([[1.0, 0.0]])
    old = torch.tensor([[0.0, 0.0]])
    returns = torch.tensor([[2.0, 0.5]])
    loss = value_loss(values, old, returns, torch.ones(1, 2), clip=0.2)
    # token 0: unclipped (1-2)^2 = 1, clipped (0.2-2)^2 = 3.24 -> 3.24; token 1: 0.25 both ways
    assert loss.item() == pytest.approx(0.5 * (3.24 + 0.25) / 2)


def test_the_kl_estimate_is_zero_on_the_reference_and_positive_elsewhere():
    logp = torch.log(torch.tensor([[0.2, 0.7]]))
    mask = torch.ones(1, 2)
    assert kl_to_reference(logp, logp, mask).item() == pytest.approx(0.0)
    ref = torch.log(torch.tensor([[0.4, 0.35]]))
    expected = sum(math.exp(r - p) - (r - p) - 1 for r, p in zip(ref[0].tolist(), logp[0].tolist())) / 2
    assert kl_to_reference(logp, ref, mask).item() == pytest.approx(expected)


def test_environment_tokens_get_no_gradient_and_do_not_move_the_loss():
    new = torch.log(torch.tensor([[0.3, 0.6, 0.2, 0.9]])).requires_grad_()
    old = torch.log(torch.tensor([[0.3, 0.5, 0.4, 0.8]]))
    mask = torch.tensor([[0.0, 1.0, 0.0, 1.0]])
    adv = torch.tensor([[5.0, 1.0, -7.0, 0.5]])
    loss, _ = policy_loss(new, old, adv, mask, clip=0.2)
    loss.backward()
    assert new.grad[0, 0].item() == 0.0 and new.grad[0, 2].item() == 0.0
    assert new.grad[0, 1].item() != 0.0
    changed = adv.clone()
    changed[0, 0], changed[0, 2] = -100.0, 100.0
    assert policy_loss(new.detach(), old, changed, mask, 0.2)[0].item() == pytest.approx(loss.item())


def test_guards_flag_an_entropy_surge_and_exploding_ratios():
    guards = Guards(GuardsConfig(entropy_surge=2.0, ratio_max=10.0))
    assert guards.check({"entropy": 1.0, "ratio_min": 0.9, "ratio_max": 1.1}) == []
    assert guards.check({"entropy": 1.5, "ratio_min": 0.9, "ratio_max": 1.1}) == []
    alarms = guards.check({"entropy": 2.5, "ratio_min": 0.05, "ratio_max": 30.0})
    assert [a.split(":")[0] for a in alarms] == ["entropy surge", "ratio explosion"]
