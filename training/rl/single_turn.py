"""Stage 0, single-turn RL warm-up: the actor writes a whole solution in one reply (no tools), the sandbox
rewards it, and a short PPO phase lifts raw kernel-writing ability before the actor acts as an agent.

    python -m training train CONFIG.yaml --stage single_turn
"""

import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

from sandbox import SandboxError, evaluate
from training.rl.generation import BatchedGenerator
from training.rl.metrics import Guards, Metrics, step_stats
from training.rl.ppo import update
from training.rl.rollouts import LivePolicy
from training.rl.tokens import Sample

SYSTEM = (
    "You are an expert GPU performance engineer. Rewrite the given PyTorch Model as ModelNew with custom "
    "{kernels}: same constructor arguments, same outputs. Answer with one complete Python file in a single "
    "```python block, nothing else."
)
CODE = re.compile(r"```(?:python|py)?\n(.*?)```", re.DOTALL)


def messages(task, device):
    kernels = "CUDA kernels" if device == "cuda" else "C++ kernels for the CPU"
    return [
        {"role": "system", "content": SYSTEM.format(kernels=kernels)},
        {"role": "user", "content": f"problem.py:\n```python\n{task.source.strip()}\n```"},
    ]


def extract(text):
    """The reply's Python code block, or None when it has none."""
    match = CODE.search(text)
    return match.group(1) if match else None


def score(task, text, folder, eval_config):
    """The sandbox verdict (as JSON) of the solution in TEXT; a reply without code fails without a sandbox run."""
    code = extract(text)
    if code is None or "ModelNew" not in code:
        return {"status": "no_code", "correct": False, "reward": -1.0}
    folder.mkdir(parents=True, exist_ok=True)
    solution = folder / "solution.py"
    solution.write_text(code)
    try:
        return evaluate(task.path, solution, eval_config).to_json()
    except SandboxError as exc:
        return {"status": "misuse", "correct": False, "reward": -1.0, "log": str(exc)}


def train(run):
    cfg, ppo, acc = run.config.single_turn, run.config.ppo, run.accelerator
    actor, critic = run.actor("single_turn"), run.critic("single_turn")
    actor_opt = torch.optim.AdamW(actor.parameters(), lr=cfg.lr)
    critic_opt = torch.optim.AdamW(critic.parameters(), lr=ppo.critic_lr)
    actor, critic, actor_opt, critic_opt = acc.prepare(actor, critic, actor_opt, critic_opt)
    optimizers = {"actor": actor_opt, "critic": critic_opt}
    start, state = run.resume("single_turn", optimizers)
    guards = Guards(ppo.guards, state.get("first_entropy"))
    metrics = Metrics(run.dir, "single_turn")
    e = run.config.episode
    r = run.config.rollouts
    generator = BatchedGenerator(
        acc.unwrap_model(actor),
        run.tokenizer,
        acc.device,
        r.max_batch,
        r.max_batch_tokens,
        decode=r.decode,
        attention=r.attention,
        loop_window=r.loop_window,
    )
    policy = LivePolicy(
        generator, temperature=e.temperature, max_new_tokens=cfg.max_new_tokens, max_context=e.context_tokens
    )
    for step in run.progress(range(start, cfg.steps), "single_turn", cfg.steps, start):
        t0 = time.monotonic()
        tasks = run.train_tasks(cfg.prompts_per_step, step)
        generations = generator.generate_all(
            [policy.prompt(messages(task, e.device), None) for task in tasks], e.temperature
        )
        folder = Path(run.episodes_dir("single_turn", step))
        with ThreadPoolExecutor(run.config.rollouts.workers) as pool:
            verdicts = list(
                pool.map(
                    lambda i: score(tasks[i], generations[i].text, folder / f"{i:03d}-{tasks[i].name}", e.eval),
                    range(len(tasks)),
                )
            )
        samples = [
            Sample(
                g.prompt_token_ids + g.response_token_ids,
                [0] * len(g.prompt_token_ids) + [1] * len(g.response_token_ids),
                [0.0] * len(g.prompt_token_ids) + g.response_logprobs,
                [0.0] * (len(g.prompt_token_ids) + len(g.response_token_ids) - 1) + [float(v["reward"])],
            )
            for g, v in zip(generations, verdicts)
            if g.response_token_ids
        ]
        rollout_s = time.monotonic() - t0
        t1 = time.monotonic()
        stats = update(
            actor, critic, run.batch(samples=samples), ppo, actor_opt, critic_opt, acc, temperature=e.temperature
        )
        stats.update(
            rollout_s=rollout_s,
            update_s=time.monotonic() - t1,
            code_rate=sum(v["status"] != "no_code" for v in verdicts) / len(verdicts),
        )
        stats = step_stats(acc, stats, [{"verdict": v} for v in verdicts])  # every rank's, not this one's
        alarms = guards.check(stats)
        if acc.is_main_process:
            metrics.log(step, {**stats, "guard_alarms": len(alarms)})
        for alarm in alarms:
            run.log.warning("single_turn step %d: %s", step, alarm)
        if alarms or (step + 1) % run.config.checkpoint_every == 0 or step + 1 == cfg.steps:
            run.save("single_turn", step, {"actor": actor, "critic": critic}, optimizers, guards.state())
    generator.close()
    metrics.close()
    return acc.unwrap_model(actor)
