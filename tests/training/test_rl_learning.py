"""A real learning test: a tiny randomly initialized transformer, a two-turn toy environment with a learnable
best action per turn, and training.rl.ppo.update raising the mean reward over a fixed seed.

The environment: the prompt is [BOS, c] with a context c in {1, 2, 3}; the policy answers one token; the
environment appends a tool-result token; the policy answers again. Turn 1 earns 1 for token c + 3, turn 2
earns 1 for token c + 6 (rewards on each turn's token, the tool-result token masked out). A uniform policy over
the 12 tokens earns 2/12 on average; the best one earns 2.
"""

import torch

from training.rl.config import PPOConfig
from training.rl.models import ValueModel
from training.rl.ppo import update
from training.rl.tokens import Batch, Sample

VOCAB, BOS, TOOL = 12, 0, 11


def tiny_models(seed):
    from transformers import LlamaConfig, LlamaForCausalLM, LlamaModel

    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=16,
        pad_token_id=BOS,
        bos_token_id=None,
        eos_token_id=None,
    )
    torch.manual_seed(seed)
    return LlamaForCausalLM(config), ValueModel(LlamaModel(config))


def sample_token(actor, ids, generator):
    with torch.no_grad():
        logits = actor(input_ids=ids).logits[:, -1].float()
    return torch.multinomial(torch.softmax(logits, -1), 1, generator=generator)


def rollout(actor, contexts, generator):
    """One episode per context: (samples, mean total reward)."""
    ids = torch.stack([torch.full_like(contexts, BOS), contexts], 1)
    first = sample_token(actor, ids, generator)
    ids = torch.cat([ids, first, torch.full_like(first, TOOL)], 1)
    second = sample_token(actor, ids, generator)
    ids = torch.cat([ids, second], 1)
    r1 = (first[:, 0] == contexts + 3).float()
    r2 = (second[:, 0] == contexts + 6).float()
    samples = [
        Sample(row.tolist(), [0, 0, 1, 0, 1], [0.0] * 5, [0.0, 0.0, a, 0.0, b])
        for row, a, b in zip(ids, r1.tolist(), r2.tolist())
    ]
    return samples, (r1 + r2).mean().item()


def test_ppo_raises_the_mean_reward_of_a_tiny_model_on_a_toy_environment():
    from accelerate import Accelerator

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        actor, critic = tiny_models(seed=0)
        cfg = PPOConfig(
            gamma=1.0,
            lam=0.95,
            clip=0.2,
            value_clip=0.5,
            lr=3e-3,
            critic_lr=3e-3,
            epochs=2,
            minibatch_size=16,
            entropy_coef=0.0,
            max_grad_norm=1.0,
        )
        actor_opt = torch.optim.AdamW(actor.parameters(), lr=cfg.lr)
        critic_opt = torch.optim.AdamW(critic.parameters(), lr=cfg.critic_lr)
        accelerator = Accelerator(cpu=True)
        generator = torch.Generator().manual_seed(1)
        contexts = torch.tensor([1, 2, 3] * 16)
        curve, stats = [], []
        for _ in range(25):
            samples, mean_reward = rollout(actor, contexts, generator)
            curve.append(mean_reward)
            stats.append(
                update(
                    actor, critic, Batch.collate(samples), cfg, actor_opt, critic_opt, accelerator, generator=generator
                )
            )
        _, final = rollout(actor, contexts, generator)
    finally:
        torch.set_num_threads(threads)
    start = sum(curve[:3]) / 3
    assert start < 0.6, f"a random policy should earn about 2/12, not {start}"
    assert final >= 1.6, f"PPO did not learn the best actions: {curve} -> {final}"
    # the policy only moved within the trust region, and its entropy fell as it committed to the best actions
    assert max(s["ratio_max"] for s in stats) < 3.0
    assert stats[-1]["entropy"] < stats[0]["entropy"]
    with torch.no_grad():
        greedy = actor(input_ids=torch.tensor([[BOS, 1], [BOS, 2], [BOS, 3]])).logits[:, -1].argmax(-1)
    assert greedy.tolist() == [4, 5, 6]
