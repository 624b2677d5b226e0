"""Run configs: YAML into dataclasses, with errors that name the key, and --set overrides."""

import pytest

from training.rl import config as run_config
from sandbox import EvalConfig
from training.rl.config import ConfigError


def write(tmp_path, text):
    path = tmp_path / "run.yaml"
    path.write_text(text)
    return path


def test_the_example_configs_load():
    toy = run_config.load("training/configs/toy.yaml")
    assert toy.episode.device == "cpu" and toy.ppo.steps >= 1 and toy.model.path is None
    gpu = run_config.load("training/configs/gpu.yaml")
    assert gpu.episode.device == "cuda" and gpu.stages == ["rft", "value", "ppo"]


def test_it_rejects_an_unknown_key_naming_the_allowed_ones(tmp_path):
    with pytest.raises(ConfigError, match=r"unknown key\(s\) ppo.stepz: allowed are .*ppo.steps"):
        run_config.load(write(tmp_path, "tasks: {source: t.jsonl}\nppo: {stepz: 3}\n"))


def test_it_rejects_a_value_of_the_wrong_type(tmp_path):
    with pytest.raises(ConfigError, match="ppo.steps must be int"):
        run_config.load(write(tmp_path, "tasks: {source: t.jsonl}\nppo: {steps: many}\n"))
    with pytest.raises(ConfigError, match="rollouts.backend must be inprocess or rq"):
        run_config.load(write(tmp_path, "tasks: {source: t.jsonl}\nrollouts: {backend: ray}\n"))


def test_it_requires_a_task_source_and_valid_yaml(tmp_path):
    with pytest.raises(ConfigError, match="tasks.source is required"):
        run_config.load(write(tmp_path, "seed: 1\n"))
    with pytest.raises(ConfigError, match="not valid YAML"):
        run_config.load(write(tmp_path, "seed: [1\n"))
    with pytest.raises(ConfigError, match="does not exist"):
        run_config.load(tmp_path / "missing.yaml")


def test_overrides_set_dotted_keys_and_are_validated(tmp_path):
    config = run_config.load(write(tmp_path, "tasks: {source: t.jsonl}\nppo: {lr: 1.0e-5}\n"))
    changed = run_config.override(config, ["ppo.steps=7", "ppo.guards.action=warn", "critic={path: /x}"])
    assert (changed.ppo.steps, changed.ppo.guards.action, changed.critic.path) == (7, "warn", "/x")
    assert changed.ppo.lr == 1e-5
    with pytest.raises(ConfigError, match="KEY=VALUE"):
        run_config.override(config, ["ppo.steps"])
    with pytest.raises(ConfigError, match="unknown key"):
        run_config.override(config, ["ppo.nope=1"])
    recorded = tmp_path / "recorded.yaml"
    run_config.dump(changed, recorded)
    assert run_config.load(recorded) == changed


def test_the_episode_section_is_the_agent_episode_record_with_the_run_defaults(tmp_path):
    from agent.loop import EpisodeConfig

    config = run_config.load(write(tmp_path, "tasks: {source: t.jsonl}\nepisode: {max_turns: 3, eval: {trials: 2}}\n"))
    assert isinstance(config.episode, EpisodeConfig)
    # keys left out keep the run's defaults (not the agent's, which suit a served model on a GPU)
    assert (config.episode.device, config.episode.max_turns, config.episode.response_tokens) == ("cpu", 3, 256)
    assert config.episode.eval.device == "cpu" and config.episode.eval.trials == 2
    # what episodes and rollout jobs receive: the agent's record, without the actor's sampling temperature
    sent = config.episode.episode(max_turns=12).to_json()
    assert "temperature" not in sent
    assert EpisodeConfig.from_json(sent) == EpisodeConfig(
        device="cpu",
        max_turns=12,
        context_tokens=16384,
        response_tokens=256,
        bash_timeout_s=60.0,
        eval=EvalConfig(device="cpu", trials=2),
    )


def test_setting_the_episode_device_moves_the_sandbox_settings_with_it(tmp_path):
    config = run_config.load(write(tmp_path, "tasks: {source: t.jsonl}\nepisode: {eval: {trials: 2}}\n"))
    moved = run_config.override(config, ["episode.device=cuda", "episode.temperature=0.5"])
    assert (moved.episode.device, moved.episode.eval.device, moved.episode.eval.trials) == ("cuda", "cuda", 2)
    assert moved.episode.temperature == 0.5
    recorded = tmp_path / "recorded.yaml"
    run_config.dump(moved, recorded)
    assert run_config.load(recorded) == moved


def test_sandbox_settings_on_another_device_than_the_episode_are_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="episode: the episode runs on cpu but its sandbox settings"):
        run_config.load(write(tmp_path, "tasks: {source: t.jsonl}\nepisode: {device: cpu, eval: {device: cuda}}\n"))
    with pytest.raises(ConfigError, match="episode.eval: trials must be at least 1"):
        run_config.load(write(tmp_path, "tasks: {source: t.jsonl}\nepisode: {eval: {trials: 0}}\n"))


def test_evaluations_sample_at_eval_temperature_and_rollouts_at_the_episodes(tmp_path):
    from training.rl.rollouts import Rollouts

    toy = run_config.override(
        run_config.load("training/configs/toy.yaml"),
        ["episode.temperature=0.9", "eval_temperature=0", "rollouts.decode=static", "rollouts.attention=matmul"],
    )
    assert toy.eval_temperature == 0.0 and toy.rollouts.decode == "static" and toy.rollouts.attention == "matmul"
    toy.rollouts.backend = "rq"  # the workers' policy options: what an in-process LivePolicy is given alike
    rollouts = Rollouts(toy, tmp_path, tokenizer=None)
    name, options = rollouts._policy("actor")
    assert name == "transformers" and options["temperature"] == 0.9
    rollouts.temperature = toy.eval_temperature  # as Run.evaluate sets it
    assert rollouts._policy("actor")[1]["temperature"] == 0.0
    assert run_config.load("training/configs/toy.yaml").eval_temperature is None  # the episodes' by default
    with pytest.raises(ConfigError, match="rollouts.decode must be dynamic or static"):
        run_config.override(toy, ["rollouts.decode=paged"])
    with pytest.raises(ConfigError, match="rollouts.attention must be sdpa or matmul"):
        run_config.override(toy, ["rollouts.attention=flash"])
