"""The verdict's JSON: the contract's fields, a lossless round trip, and rejection of unknown statuses."""

import json

import pytest

from sandbox.verdict import STATUSES, Verdict


def _full():
    return Verdict(
        status="ok",
        correct=True,
        violations=["x"],
        runtime_ms=0.25,
        eager_ms=0.5,
        compiled_ms=0.4,
        speedup_vs_eager=2.0,
        speedup_vs_compiled=1.6,
        reward=3,
        reward_schedule="paper",
        compile_s=1.25,
        log="line 1\nline 2 \u00e9",
        max_abs_error=1e-6,
        max_rel_error=2e-6,
        trials=[{"trial": "trial 1", "ok": True, "max_abs_error": 0.0, "max_rel_error": 0.0, "sampled": False}],
        timing={"candidate": {"median_ms": 0.25, "samples": 10}, "stages_s": {"build": 0.1}},
        profile={"reference": [{"name": "aten::relu", "calls": 1}]},
        device="cpu",
        problem_hash="a" * 64,
        solution_hash="b" * 64,
        isolation="namespaces+uid",
        wall_s=3.5,
    )


def test_round_trip_is_lossless():
    v = _full()
    text = v.dumps()
    assert Verdict.loads(text) == v
    assert Verdict.from_json(json.loads(text)).to_json() == v.to_json()


@pytest.mark.parametrize("status", STATUSES)
def test_every_status_round_trips_with_its_defaults(status):
    v = Verdict(status=status)
    back = Verdict.loads(v.dumps())
    assert back == v and back.reward == -1 and back.correct is False and back.violations == []


def test_the_contract_fields_are_present():
    data = json.loads(Verdict(status="incorrect").dumps())
    for key in (
        "status",
        "correct",
        "violations",
        "runtime_ms",
        "eager_ms",
        "compiled_ms",
        "speedup_vs_eager",
        "speedup_vs_compiled",
        "reward",
        "compile_s",
        "log",
    ):
        assert key in data
    assert data["runtime_ms"] is None and data["reward"] == -1


def test_unknown_keys_are_ignored_and_unknown_statuses_rejected():
    data = {**_full().to_json(), "added_later": 1}
    assert Verdict.from_json(data) == _full()
    with pytest.raises(ValueError, match="unknown verdict status"):
        Verdict(status="fast")
    with pytest.raises(ValueError):
        Verdict.from_json({**data, "status": "great"})


@pytest.mark.parametrize("schedule", ["paper", "milestone"])
def test_the_reward_schedule_round_trips(schedule):
    v = Verdict(status="ok", correct=True, reward=1, reward_schedule=schedule)
    assert json.loads(v.dumps())["reward_schedule"] == schedule
    assert Verdict.loads(v.dumps()).reward_schedule == schedule


def test_a_stored_verdict_without_a_schedule_reads_as_the_milestones():
    # Every verdict stored before the field existed (bench/results) was rewarded by the milestone schedule.
    old = {k: v for k, v in _full().to_json().items() if k != "reward_schedule"}
    assert Verdict.from_json(old).reward_schedule == "milestone"
    assert Verdict(status="ok").reward_schedule == "paper"  # what new evaluations use


def test_a_real_verdict_round_trips(run_eval, elementwise, honest):
    v = run_eval(elementwise, honest)
    assert Verdict.loads(v.dumps()) == v


def test_summary_names_the_headline_numbers():
    line = _full().summary()
    assert line.startswith("ok, reward 3 (paper)") and "2.00x eager" in line and "1.60x compiled" in line
