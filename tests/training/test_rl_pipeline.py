"""End to end on the CPU: `python -m training train training/configs/toy.yaml` through every stage with real
episodes of the agent loop rewarded by the sandbox, then a resumed run that continues PPO where it stopped;
and rollouts as jobs on an RQ queue served by a real worker."""

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHORT = [
    "--set",
    "episode.max_turns=2",
    "--set",
    "single_turn.steps=1",
    "--set",
    "rft.epochs=1",
    "--set",
    "value.max_epochs=2",
    "--set",
    "eval_episodes=1",
]


@pytest.fixture
def env(tmp_path):
    return {**os.environ, "KS_CACHE_DIR": str(tmp_path / "sandbox-cache"), "HF_HUB_OFFLINE": "1"}


def train(run_dir, env, *extra):
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "training",
            "train",
            "training/configs/toy.yaml",
            "--run-dir",
            str(run_dir),
            "-q",
            *SHORT,
            *extra,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def records(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_a_toy_run_goes_through_every_stage_and_a_resumed_run_continues(tmp_path, env):
    run_dir = tmp_path / "run"
    first = train(
        run_dir, env, "--set", "ppo.steps=1", "--set", "eval_after=[rft,value,ppo]", "--set", "eval_temperature=0"
    )
    assert first.returncode == 0, first.stderr[-3000:]
    stages = [r["stage"] for r in records(run_dir)]
    assert stages == ["single_turn", "rft", "eval", "value", "value", "eval", "ppo", "eval"] or stages == [
        "single_turn",
        "rft",
        "eval",
        "value",
        "eval",
        "ppo",
        "eval",
    ], stages
    assert [(r["after"], r["ppo_steps"]) for r in records(run_dir) if r["stage"] == "eval"] == [
        ("rft", 0),
        ("value", 0),
        ("ppo", 1),
    ]
    for stage, kinds in {
        "single_turn": ("actor", "critic"),
        "rft": ("actor",),
        "value": ("critic",),
        "ppo": ("actor", "critic"),
    }.items():
        for kind in kinds:
            assert (run_dir / "checkpoints" / stage / "step-0" / kind / "config.json").is_file(), (stage, kind)
        assert list((run_dir / "tensorboard" / stage).glob("events.out.tfevents.*")), stage
    assert (run_dir / "config.yaml").is_file() and (run_dir / "plots" / "ppo-stability.png").is_file()
    assert (run_dir / "plots" / "rft-training.png").is_file() and not (run_dir / "plots" / "ppo-training.png").exists()
    # RFT trained on the heuristic's real episode, which the sandbox verified
    heuristic = json.loads((run_dir / "rft" / "trajectories.jsonl").read_text().splitlines()[0])
    assert heuristic["policy"] == "heuristic" and heuristic["verdict"]["correct"]
    # PPO's episodes were the actor's, with the token data training needs, rewarded by the sandbox
    ppo = next(r for r in records(run_dir) if r["stage"] == "ppo")
    assert ppo["episodes"] == 2 and ppo["policy_tokens"] > 0 and ppo["reward_mean"] <= -1.0
    assert 0.5 < ppo["ratio_min"] <= ppo["ratio_mean"] <= ppo["ratio_max"] < 2.0
    episode = json.loads(next((run_dir / "episodes" / "ppo").rglob("trajectory.json")).read_text())
    assert episode["policy"] == "transformers" and episode["turns"][0]["response_logprobs"]
    assert "correct_rate" in next(r for r in records(run_dir) if r["stage"] == "eval")
    assert all(r["temperature"] == 0.0 for r in records(run_dir) if r["stage"] == "eval")  # greedy evaluations

    second = train(run_dir, env, "--set", "ppo.steps=3", "--set", "ppo.eval_every=2")
    assert second.returncode == 0, second.stderr[-3000:]
    log = (run_dir / "train.log").read_text()
    assert "single_turn: already done" in log and "rft: already done" in log and "value: already done" in log
    assert "ppo: resuming after step 0" in log
    ppo_steps = [r["step"] for r in records(run_dir) if r["stage"] == "ppo"]
    assert ppo_steps == [0, 1, 2]
    assert (run_dir / "checkpoints" / "ppo" / "step-2" / "actor").is_dir()
    # the learning curve: held-out evaluations every two PPO steps and after the stage, beside the stability panel
    curve = [(r["after"], r["ppo_steps"]) for r in records(run_dir) if r["stage"] == "eval"]
    assert curve[-2:] == [("ppo", 2), ("ppo", 3)], curve
    assert (run_dir / "plots" / "eval-learning.png").is_file()
    last = [r for r in records(run_dir) if r["stage"] == "ppo"][-1]
    assert {"ratio_min", "ratio_max", "clip_frac", "approx_kl", "entropy", "explained_variance"} <= set(last)


def test_a_bad_config_is_an_error_that_names_the_key(tmp_path, env):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "training",
            "train",
            "training/configs/toy.yaml",
            "--run-dir",
            str(tmp_path / "run"),
            "--set",
            "ppo.cliip=0.1",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2 and "unknown key(s) ppo.cliip" in result.stderr
    assert not (tmp_path / "run").exists()


def test_rollouts_run_as_jobs_on_an_rq_queue_with_the_pushed_actor(tmp_path, env, monkeypatch):
    from redis import Redis

    from training.rl import config as run_config, tokens
    from training.rl.models import base_checkpoint, load_actor, load_tokenizer
    from training.rl.rollouts import Rollouts
    from training.rl.tasks import load as load_tasks

    monkeypatch.setenv("KS_CACHE_DIR", env["KS_CACHE_DIR"])
    queue = f"test-rl-{uuid.uuid4().hex[:8]}"
    redis_url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")  # the worker's and the trainer's alike
    config = run_config.override(
        run_config.load(ROOT / "training/configs/toy.yaml"),
        [
            f"run_dir={tmp_path}",
            "rollouts.backend=rq",
            f"rollouts.queue={queue}",
            f"rollouts.redis_url={redis_url}",
            "episode.max_turns=1",
            "rollouts.job_timeout_s=600",
        ],
    )
    config.tasks.source = str(ROOT / config.tasks.source)
    train_set, _ = load_tasks(config.tasks, tmp_path / "tasks")
    base = base_checkpoint(config.model, tmp_path / "base", [t.source for t in train_set])
    rollouts = Rollouts(config, tmp_path, load_tokenizer(base))
    rollouts.sync(load_actor(base))
    jobs = rollouts.enqueue(train_set[:1], "actor", [tmp_path / "episodes" / "0"])
    worker = subprocess.run(
        [str(Path(sys.executable).with_name("rq")), "worker", queue, "--burst", "--url", redis_url],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    try:
        (trajectory,) = rollouts.gather(jobs)
    finally:
        Redis.from_url(redis_url).delete(f"rq:queue:{queue}")
    assert not isinstance(trajectory, str), trajectory + worker.stderr[-2000:]
    assert trajectory.policy == "transformers" and trajectory.verdict["reward"] == -1
    turn = trajectory.turns[0]
    assert (
        turn.prompt_token_ids
        and turn.response_token_ids
        and len(turn.response_logprobs) == len(turn.response_token_ids)
    )
    (sample,) = tokens.samples(trajectory, rollouts.tokenizer)
    assert sum(sample.mask) == len(turn.response_token_ids) and sample.rewards[-1] == -1


@pytest.mark.slow
def test_a_run_out_of_time_keeps_its_checkpoint_and_the_same_command_finishes_it(tmp_path, env):
    run_dir = tmp_path / "run"
    command = ["--set", "stages=[rft]", "--set", "rft.epochs=2", "--set", "eval_after=[rft]"]
    first = train(run_dir, env, *command, "--stop-after", "0")
    assert first.returncode == 4 and "run the same command again" in first.stderr, first.stderr[-2000:]
    assert [r["step"] for r in records(run_dir) if r["stage"] == "rft"] == [0]
    second = train(run_dir, env, *command)
    assert second.returncode == 0, second.stderr[-2000:]
    assert [(r["stage"], r["step"]) for r in records(run_dir)] == [("rft", 0), ("rft", 1), ("eval", 0)]


def test_an_evaluation_that_did_not_finish_is_kept_aside_and_run_afresh(tmp_path):
    from training.rl.runtime import set_aside_unfinished

    folder = tmp_path / "episodes" / "eval" / "0-rft"
    for attempt in (1, 2):
        (folder / "000-task" / "workspace").mkdir(parents=True)
        (folder / "000-task" / "workspace" / "kernel.cu").write_text(f"attempt {attempt}")
        assert set_aside_unfinished(folder) == folder and not folder.exists()
    kept = sorted(p.name for p in folder.parent.iterdir())
    assert kept == ["0-rft.unfinished-1", "0-rft.unfinished-2"]
    assert (folder.parent / "0-rft.unfinished-2/000-task/workspace/kernel.cu").read_text() == "attempt 2"
    assert set_aside_unfinished(tmp_path / "never-run") == tmp_path / "never-run"


def test_an_evaluation_under_the_time_limit_gives_each_episode_its_share_of_the_time_left():
    from training.rl import config as run_config
    from training.rl.rollouts import episode_config
    from training.rl.runtime import EVAL_MIN_WALL_CLOCK_S, eval_wall_clock

    config = run_config.override(
        run_config.load(ROOT / "training/configs/toy.yaml"), ["rollouts.workers=24", "rollouts.backend=inprocess"]
    )
    assert eval_wall_clock(600, 26, config.rollouts) == pytest.approx(0.9 * 600 / 2)  # two waves of 24 at most
    assert eval_wall_clock(600, 24, config.rollouts) == pytest.approx(0.9 * 600)
    assert eval_wall_clock(10, 26, config.rollouts) == EVAL_MIN_WALL_CLOCK_S
    on_rq = run_config.override(config, ["rollouts.backend=rq"])
    assert eval_wall_clock(600, 26, on_rq.rollouts) == pytest.approx(0.9 * 600)  # RQ workers run them all at once
    assert episode_config(config, "actor", 270.0).wall_clock_s == 270.0
    # the task still states the budget the actor trained under (training/rl/restate.py restates the teacher's in it)
    assert episode_config(config, "actor", 270.0).stated_wall_clock_s == (config.episode.wall_clock_s or 0)
    assert episode_config(config, "actor").wall_clock_s == config.episode.wall_clock_s
    tighter = run_config.override(config, ["episode.wall_clock_s=100"])
    assert episode_config(tighter, "actor", 270.0).wall_clock_s == 100  # the section's own budget when tighter
