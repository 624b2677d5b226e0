"""Run by test_rl_distributed.py in each of two processes (torch.distributed over gloo, as `accelerate launch`
starts them): one PPO update on batches of different sizes per rank, then the step's statistics; prints JSON."""

import json
import sys

import torch
from accelerate import Accelerator

import agent.loop  # noqa: E402,F401  the project's sandbox and agent, imported before the tests folder goes first

#                                     on the path (its tests/sandbox and tests/agent would shadow them)
sys.path.insert(0, sys.argv[1])  # the tests folder: the toy environment of test_rl_learning
from training.test_rl_learning import rollout, tiny_models  # noqa: E402

from training.rl.cli import end_processes  # noqa: E402
from training.rl.config import PPOConfig  # noqa: E402
from training.rl.distributed import mean  # noqa: E402
from training.rl.metrics import episode_summary, step_stats  # noqa: E402
from training.rl.ppo import update  # noqa: E402
from training.rl.tokens import Batch  # noqa: E402

torch.set_num_threads(1)
accelerator = Accelerator(cpu=True)
rank = accelerator.process_index
actor, critic = tiny_models(seed=0)
cfg = PPOConfig(gamma=1.0, lam=0.95, epochs=2, minibatch_size=16, lr=1e-3, critic_lr=1e-3)
actor_opt = torch.optim.AdamW(actor.parameters(), lr=cfg.lr)
critic_opt = torch.optim.AdamW(critic.parameters(), lr=cfg.critic_lr)
actor, critic, actor_opt, critic_opt = accelerator.prepare(actor, critic, actor_opt, critic_opt)
generator = torch.Generator().manual_seed(10 + rank)
# Rank 0 has 12 samples (one minibatch), rank 1 has 40 (three): without agreement rank 1 would wait forever in
# its second backward pass for a rank that has finished.
samples, _ = rollout(
    accelerator.unwrap_model(actor),
    torch.tensor([1, 2, 3] * (4 if rank == 0 else 14))[: 12 if rank == 0 else 40],
    generator,
)
stats = update(actor, critic, Batch.collate(samples), cfg, actor_opt, critic_opt, accelerator, generator=generator)


class Episode:  # what episode_summary reads of a trajectory
    def __init__(self, reward, correct, turns, calls):
        turn = type("T", (), {"response_token_ids": [1, 2], "tool_calls": calls})()
        self.verdict, self.turns = {"reward": reward, "correct": correct}, [turn] * turns


well_formed = [type("Call", (), {"error": ""})()]
episodes = (
    [Episode(3.0, True, 2, well_formed)] if rank == 0 else [Episode(-1.0, False, 5, []), Episode(1.0, True, 3, [])]
)
merged = step_stats(accelerator, {**stats, "rollout_failures": rank}, [episode_summary(e) for e in episodes])
weights = sum(float(p.detach().double().sum()) for p in accelerator.unwrap_model(actor).parameters())
print(
    json.dumps(
        {
            "rank": rank,
            "world": accelerator.num_processes,
            "policy_tokens_here": stats["policy_tokens"],
            "merged": merged,
            "weights": weights,
            "mean_rank": mean(accelerator, rank),
        }
    )
)
end_processes(accelerator)
