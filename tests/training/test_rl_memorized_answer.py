"""An actor RFT made memorize teacher trajectories writes their first answer back token for token, batched or alone."""

import gzip
import json
import threading
from pathlib import Path

import pytest

from agent.loop import SYSTEM
from agent.policies.base import Task
from agent.policies.transformers_policy import TransformersPolicy
from agent.trajectory import Trajectory
from training.rl import config as run_config
from training.rl import rft, tokens
from training.rl.generation import BatchedGenerator
from training.rl.restate import restate
from training.rl.rollouts import LivePolicy, Rollouts
from training.rl.runtime import Run

ROOT = Path(__file__).resolve().parents[2]
RECORDS = ROOT / "bench" / "results" / "rl-pipeline-h100-2026-11-28" / "trajectories.jsonl.gz"
PROBLEMS = ("aminmax.py", "transpose.py")  # two of the teacher's CUDA episodes, of prompts of different lengths
EPOCHS = 70


def teacher_trajectories():
    """The teacher's first turns on PROBLEMS, as its records hold them but for the system message: SKILL.md (~3k
    tokens) is left out so that a CPU fine-tunes on the rest in seconds; the tools and the task stay."""
    out = []
    with gzip.open(RECORDS, "rt") as f:
        for line in f:
            row = json.loads(line)
            if row["problem"] in PROBLEMS:
                trajectory = Trajectory.from_json(row)
                trajectory.messages = [{"role": "system", "content": SYSTEM}, *trajectory.messages[1:]]
                trajectory.turns = trajectory.turns[:1]
                out.append(trajectory)
    return sorted(out, key=lambda t: t.problem)


@pytest.fixture
def fresh_accelerator():
    """accelerate keeps one process-wide state: this test's bf16 may neither meet nor leave another test's setting."""
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state(reset_partial_state=True)
    yield
    AcceleratorState._reset_state(reset_partial_state=True)


@pytest.fixture
def memorized(tmp_path, fresh_accelerator):
    """(run, the RFT actor, trajectories): gpu.yaml's recipe at toy size (Qwen2, bf16 autocast, packed rows)."""
    trajectories = teacher_trajectories()
    data = tmp_path / "trajectories.jsonl"
    data.write_text("".join(json.dumps(t.to_json()) + "\n" for t in trajectories))
    config = run_config.override(
        run_config.load(ROOT / "training" / "configs" / "toy.yaml"),
        [
            f"run_dir={tmp_path / 'run'}",
            "stages=[rft]",
            "model={arch: qwen2, hidden_size: 32, layers: 1, heads: 4, intermediate_size: 64, vocab_size: 1024, "
            "max_positions: 4096, mixed_precision: bf16}",
            "episode.response_tokens=96",
            "rollouts.backend=rq",  # only for sync(): the actor is pushed where RQ workers load it
            f"rft.data={data}",
            f"rft.epochs={EPOCHS}",
            f"checkpoint_every={EPOCHS}",
            "rft.lr=1.0e-2",
            "rft.batch_size=2",
            "rft.pack=true",
        ],
    )
    run = Run(config, quiet=True)
    actor = rft.train(run)
    # trained restated in the actor's budget (rft.restate_budget): the prompts the actor's own episodes show
    episode = run.config.episode
    return run, actor, [restate(t, episode.max_turns, episode.wall_clock_s) for t in trajectories]


def first_answer(run, trajectory):
    """(the context, the answer) RFT trained the first answer on: the answer is the tokens its loss mask covers."""
    (sample,) = tokens.samples(trajectory, run.tokenizer)
    start = sample.mask.index(1)
    assert all(sample.mask[start:])
    return sample.token_ids[:start], sample.token_ids[start:]


def assert_the_teachers_turn(action, trajectory, trained):
    prompt, answer = trained
    turn = trajectory.turns[0]
    assert action.prompt_token_ids == prompt
    assert action.response_token_ids == answer
    assert action.finish_reason == "stop"
    assert action.thought == turn.thought
    assert [(c.name, c.arguments, c.error) for c in action.tool_calls] == [
        (c.name, c.arguments, "") for c in turn.tool_calls
    ]


def task(trajectory):
    return Task(trajectory.problem, trajectory.problem_source, "cpu", "", 4)


def test_a_memorized_first_answer_comes_back_token_for_token_from_the_rollouts_and_the_policy(memorized):
    run, actor, trajectories = memorized
    trained = [first_answer(run, t) for t in trajectories]
    answer = trained[0][1]
    assert trained[1][1] == answer and run.tokenizer.convert_tokens_to_ids("<tool_call>") in answer
    assert answer[-1] == run.tokenizer.eos_token_id

    # the evaluation's path: each episode's LivePolicy asks one generator, the prompts share a left-padded batch
    generator = BatchedGenerator(
        actor, run.tokenizer, "cpu", max_batch=4, wait_s=30.0, decode="static", attention="matmul"
    )
    policies = [
        LivePolicy(generator, temperature=0.0, max_new_tokens=run.config.episode.response_tokens) for _ in trajectories
    ]
    actions = [None] * len(trajectories)

    def episode(i):
        try:
            actions[i] = policies[i].act(trajectories[i].messages, trajectories[i].tools)
        finally:
            policies[i].close()

    for policy, trajectory in zip(policies, trajectories):
        policy.reset(task(trajectory))
    threads = [threading.Thread(target=episode, args=(i,)) for i in range(len(trajectories))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    generator.close()
    assert generator.stats["batches"] == 1 and generator.stats["rows"] == len(trajectories)
    assert len({len(a.prompt_token_ids) for a in actions}) == len(trajectories)  # rows of different lengths
    for action, trajectory, pair in zip(actions, trajectories, trained):
        assert_the_teachers_turn(action, trajectory, pair)

    # the one-at-a-time policy RQ workers run, on the actor pushed to RUN/policy/
    Rollouts(run.config, run.dir, run.tokenizer).sync(actor)
    policy = TransformersPolicy(
        run.dir / "policy", device="cpu", temperature=0.0, max_new_tokens=run.config.episode.response_tokens
    )
    for trajectory, pair in zip(trajectories, trained):
        policy.reset(task(trajectory))
        assert_the_teachers_turn(policy.act(trajectory.messages, trajectory.tools), trajectory, pair)
