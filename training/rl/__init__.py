"""RL training of the agent: single-turn warm-up, RFT, value pre-training and multi-turn PPO with sandbox rewards.

Engine choice. We read TRL and verl before writing this. TRL's PPOTrainer took tokenized single-turn prompts
and a reward model, had no environment or tool turns, moved to trl.experimental and was then removed (2026);
its GRPO trainers have no critic. verl serves multi-turn PPO with a critic, but through Ray worker groups, its
own vLLM/SGLang rollout workers and agent-loop classes, Hydra configs and a DataProto batch format: our episodes
are the studio's own agent loop (agent.loop.Episode) acting in the jailed sandbox as RQ jobs, which verl cannot
drive without replacing its rollout side, and Ray is not part of this deployment. So we build on
`accelerate` (DDP/FSDP over one to many GPUs and hosts, `accelerate launch`) and `transformers` (models,
generation, checkpoints) and write by hand only the RL core: GAE over multi-turn token sequences, the clipped
losses (following verl's core_algos: environment tokens skipped, token-mean aggregation, dual-clipped value
loss), RFT's filter and masked SFT, and value pre-training until the explained variance holds.

One module per stage and concern: config (YAML -> dataclasses), models, tasks, tokens (episodes -> samples),
rollouts, gae, ppo, distill (the teacher's first turns, built on the CPU), rft, value, single_turn, metrics (JSONL +
TensorBoard, collapse guards), checkpoints, runtime (a run's plumbing), plots, cli (`python -m training train
CONFIG.yaml [--stage ...]`).
"""
