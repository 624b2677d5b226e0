"""Run configs: YAML into dataclasses, with errors that name the key, and --set overrides."""
import pytest

from training.rl import config as run_config
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
