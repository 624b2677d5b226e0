"""A run: its folder, config record, accelerator, tasks, tokenizer, models per stage, resume and common plumbing
shared by the stages (each stage module keeps only its algorithm)."""

import logging
import random
import time
from pathlib import Path

import torch

from training.rl import checkpoints, models, tokens
from training.rl import config as run_config
from training.rl import tasks as run_tasks
from training.rl.config import STAGES
from training.rl.distributed import mean
from training.rl.restate import restate

TOTALS = {
    "distill": lambda c: c.distill.epochs,
    "single_turn": lambda c: c.single_turn.steps,
    "rft": lambda c: c.rft.epochs,
    "value": lambda c: c.value.max_epochs,
    "ppo": lambda c: c.ppo.steps,
}


class OutOfTime(RuntimeError):
    """The run's time budget (--stop-after) ran out; the last step's checkpoint is kept: run again to go on."""


class Run:
    def __init__(self, config, quiet=False, stop_after=None):
        from accelerate import Accelerator
        from accelerate.utils import set_seed
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # the stages' own bars say what is going on
        self.config, self.quiet = config, quiet
        self.deadline = time.monotonic() + stop_after if stop_after is not None else None
        self.dir = Path(config.run_dir).resolve()
        self.accelerator = Accelerator(cpu=not torch.cuda.is_available(), mixed_precision=config.model.mixed_precision)
        set_seed(config.seed)
        self.log = logging.LoggerAdapter(logging.getLogger("training.rl"), {"run": self.dir.name})
        with self.accelerator.main_process_first():
            self.dir.mkdir(parents=True, exist_ok=True)
            if self.accelerator.is_main_process:
                run_config.dump(config, self.dir / "config.yaml")
            self.train_set, self.held_out = run_tasks.load(config.tasks, self.dir / "tasks", config.seed)
            self.base = models.base_checkpoint(
                config.model,
                self.dir / "base",
                [t.source for t in self.train_set + self.held_out],
                config.seed,
                self._tokenizer_trajectories(),
            )
        self.tokenizer = models.load_tokenizer(self.base)

    def _tokenizer_trajectories(self):
        """The fine-tuning data a from-scratch tokenizer learns from: a data build's trajectories (rft.data) and the
        teacher's first turns (distill.data), those given, when the base model is still to be built."""
        paths = [p for p in (self.config.rft.data, self.config.distill.data) if p]
        if self.config.model.path or not paths or (self.dir / "base" / "config.json").is_file():
            return []
        from training.rl.rft import load_trajectories

        return [t for path in paths for t in load_trajectories(path)]

    # -- models -------------------------------------------------------------------------------------------------
    def actor(self, stage):
        """The actor STAGE trains: its own last checkpoint, else the last one an earlier stage left, else the base."""
        path = checkpoints.model_from(self.dir, "actor", STAGES[: STAGES.index(stage) + 1]) or self.base
        self.log.info("%s: actor from %s", stage, path)
        return models.load_actor(path, self.config.model.dtype)

    def critic(self, stage):
        path = checkpoints.model_from(self.dir, "critic", STAGES[: STAGES.index(stage) + 1])
        base = (self.config.critic.path if self.config.critic and self.config.critic.path else None) or self.base
        self.log.info("%s: critic from %s", stage, path or base)
        return models.ValueModel.from_pretrained(path or base, self.config.model.dtype)

    def reference(self):
        """The frozen actor PPO started from (for the KL term)."""
        path = checkpoints.model_from(self.dir, "actor", STAGES[: STAGES.index("ppo")]) or self.base
        ref = models.load_actor(path, self.config.model.dtype).to(self.accelerator.device).eval()
        ref.requires_grad_(False)
        return ref

    # -- resume and checkpoints ---------------------------------------------------------------------------------
    def resume(self, stage, optimizers):
        """(first step to run, saved state) of STAGE: 0 and {} for a fresh stage. The models were loaded from the
        same checkpoint by actor()/critic(); optimizers and random states are restored here."""
        folder = checkpoints.latest(self.dir, stage)
        if folder is None:
            return 0, {}
        checkpoints.restore_optimizers(folder, optimizers)
        checkpoints.restore_rng(folder)
        state = checkpoints.state(folder)
        self.log.info("%s: resuming after step %d from %s", stage, state["step"], folder)
        return state["step"] + 1, state

    def save(self, stage, step, models_, optimizers, extra=None):
        """Checkpoint STAGE after STEP; then OutOfTime when the time budget is spent (every rank alike)."""
        folder = checkpoints.save(
            self.dir,
            stage,
            step,
            self.accelerator,
            models_,
            optimizers,
            {"total": TOTALS[stage](self.config), **(extra or {})},
        )
        if self.deadline is not None and mean(self.accelerator, time.monotonic() > self.deadline) > 0:
            raise OutOfTime(
                f"{stage}: stopped after step {step} for the time budget (checkpoint kept): run the "
                f"same command again to go on"
            )
        return folder

    def evaluated(self, after):
        """Whether an evaluation after the stage AFTER is recorded (one cut short by a stop is run on resume)."""
        return any(
            r.get("after") == after and r.get("ppo_steps", 0) in (0, self.config.ppo.steps)
            for r in _records(self.dir)
            if r["stage"] == "eval"
        )

    def stage_done(self, stage):
        folder = checkpoints.latest(self.dir, stage)
        if folder is None:
            return False
        state = checkpoints.state(folder)
        return bool(state.get("converged")) or state["step"] + 1 >= TOTALS[stage](self.config)

    # -- data -----------------------------------------------------------------------------------------------------
    def rollouts(self):
        from training.rl.rollouts import Rollouts

        return Rollouts(self.config, self.dir, self.tokenizer, self.accelerator.device)

    def train_tasks(self, n, step, pool=None):
        """N tasks for STEP (a seeded draw, the same on resume), this process's share of them."""
        pool = pool or self.train_set
        rng = random.Random(self.config.seed * 100_003 + step)
        chosen = rng.sample(pool, n) if n <= len(pool) else [rng.choice(pool) for _ in range(n)]
        acc = self.accelerator
        return chosen[acc.process_index :: acc.num_processes] or chosen[:1]

    def episodes_dir(self, stage, step):
        return self.dir / "episodes" / stage / f"step-{step}" / f"rank-{self.accelerator.process_index}"

    def samples(self, trajectories):
        r, e = self.config.rollouts, self.config.episode
        if self.config.rft.restate_budget:  # the teacher's episodes in the actor's budget (training/rl/restate.py)
            trajectories = [
                restate(t, e.max_turns, e.wall_clock_s) if t.policy == "heuristic" else t for t in trajectories
            ]
        return [
            s
            for t in trajectories
            for s in tokens.samples(t, self.tokenizer, e.context_tokens, r.format_penalty, r.turn_penalty)
        ]

    def batch(self, trajectories=None, samples=None):
        samples = samples if samples is not None else self.samples(trajectories)
        return tokens.Batch.collate(samples, self.tokenizer.pad_token_id).to(self.accelerator.device)

    def progress(self, iterable, stage, total, start):
        from tqdm.auto import tqdm

        return tqdm(
            iterable,
            desc=stage,
            total=total - start if total > start else 0,
            initial=0,
            disable=self.quiet or not self.accelerator.is_main_process,
        )

    # -- evaluation -------------------------------------------------------------------------------------------------
    def evaluate(self, after, actor, ppo_steps=None):
        """Correct rate, rewards and well-formed-turn share of the actor on held-out tasks (logged as stage 'eval',
        with the stage AFTER which it ran and how many PPO steps the actor has had); the record."""
        from training.rl.metrics import Metrics, episode_stats

        n = self.config.eval_episodes
        held = self.held_out or self.train_set
        chosen = [held[i % len(held)] for i in range(n)]
        rollouts = self.rollouts()
        rollouts.temperature = self.config.eval_temperature
        if self.deadline is not None:  # a figure within the time left, its episodes cut short where they must be
            rollouts.wall_clock_s = eval_wall_clock(self.deadline - time.monotonic(), n, self.config.rollouts)
        rollouts.sync(actor, self.accelerator)
        step = len([r for r in _records(self.dir) if r["stage"] == "eval"])
        label = after if ppo_steps is None else f"{after}-{ppo_steps}"
        folder = set_aside_unfinished(self.dir / "episodes" / "eval" / f"{step}-{label}")
        trajectories = rollouts.collect(chosen, "actor", folder)
        rollouts.stop_server()
        metrics = Metrics(self.dir, "eval")
        if ppo_steps is None:
            ppo_steps = self.config.ppo.steps if after == "ppo" else 0
        record = metrics.log(
            step,
            {
                "after": after,
                "ppo_steps": ppo_steps,
                "temperature": (
                    self.config.episode.temperature
                    if self.config.eval_temperature is None
                    else self.config.eval_temperature
                ),
                **episode_stats(trajectories),
                "rollout_failures": rollouts.failures,
                "episode_wall_clock_s": rollouts.wall_clock_s,
                "stopped_by_wall_clock": sum(t.stop_reason == "wall_clock" for t in trajectories),
            },
        )
        metrics.close()
        return record


EVAL_MIN_WALL_CLOCK_S = 60.0  # an evaluation's episodes get at least this much turn time, deadline or not


def eval_wall_clock(left_s, episodes, rollouts):
    """Each evaluation episode's turn time when LEFT_S seconds remain: EPISODES run in waves of rollouts.workers
    (inprocess; RQ workers are elsewhere, all at once), each wave's share less a tenth for the last turn's overrun
    and the record (a turn under way is finished, not cut)."""
    waves = -(-episodes // max(1, rollouts.workers)) if rollouts.backend == "inprocess" else 1
    return max(EVAL_MIN_WALL_CLOCK_S, 0.9 * left_s / waves)


def set_aside_unfinished(folder):
    """FOLDER, empty: an evaluation that stopped before its record was logged (a crash, the call's time limit) left
    its episodes there; they are kept beside it as FOLDER.unfinished-K and the evaluation runs afresh."""
    folder = Path(folder)
    if folder.exists():
        k = 1
        while folder.with_name(f"{folder.name}.unfinished-{k}").exists():
            k += 1
        folder.rename(folder.with_name(f"{folder.name}.unfinished-{k}"))
    return folder


def _records(run_dir):
    from training.rl.metrics import read

    return read(run_dir)
