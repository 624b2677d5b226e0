"""EpisodeConfig, the one episode record: one device (the sandbox's settings derived from it or refused when they
disagree) and a JSON round-trip that the CLI, evaluations and RL rollout jobs all send."""

import json

import pytest

from agent.loop import EpisodeConfig, EpisodeConfigError
from sandbox import EvalConfig


def test_the_sandbox_settings_run_on_the_episode_device_when_left_out():
    config = EpisodeConfig(device="cpu", max_turns=3)
    assert config.eval.device == "cpu" and config.eval == EvalConfig(device="cpu")


def test_sandbox_settings_for_another_device_are_refused_with_the_fix():
    with pytest.raises(EpisodeConfigError, match=r"EvalConfig\(device='cpu'"):
        EpisodeConfig(device="cpu", eval=EvalConfig(device="cuda", trials=2))


def test_the_json_round_trip_keeps_every_field_and_names_the_device_once():
    config = EpisodeConfig(
        device="cpu",
        max_turns=7,
        wall_clock_s=90.0,
        context_tokens=4096,
        response_tokens=128,
        observation_chars=500,
        bash_timeout_s=5.0,
        eval=EvalConfig(device="cpu", trials=2, compiled_baseline=False, time_budget_s=0.2),
    )
    data = json.loads(json.dumps(config.to_json()))
    assert data["device"] == "cpu" and "device" not in data["eval"]
    assert EpisodeConfig.from_json(data) == config


def test_json_settings_take_the_episode_device_and_may_repeat_it_but_not_contradict_it():
    derived = EpisodeConfig.from_json({"device": "cpu", "eval": {"trials": 2}})
    assert derived.eval.device == "cpu" and derived.eval.trials == 2
    assert EpisodeConfig.from_json({"device": "cpu", "eval": {"device": "cpu"}}).eval.device == "cpu"
    with pytest.raises(EpisodeConfigError, match="one episode runs on one device"):
        EpisodeConfig.from_json({"device": "cpu", "eval": {"device": "cuda"}})


def test_unknown_fields_in_json_are_named():
    with pytest.raises(EpisodeConfigError, match="unknown episode field.*temperature"):
        EpisodeConfig.from_json({"device": "cpu", "temperature": 0.7})
    with pytest.raises(EpisodeConfigError, match="eval: .*trails"):
        EpisodeConfig.from_json({"device": "cpu", "eval": {"trails": 2}})
