"""Trajectories: the JSON round-trip, and the token sequences training reads from them."""

import json

from agent.trajectory import ToolCall, Trajectory, Turn


def _trajectory():
    first = Turn(
        index=1,
        thought="read",
        tool_calls=[ToolCall("read_file", {"path": "problem.py"}, id="a", observation="import torch")],
        prompt_token_ids=[1, 2, 3],
        response_token_ids=[4, 5],
        response_logprobs=[-0.1, -0.2],
    )
    second = Turn(
        index=2,
        thought="verify",
        tool_calls=[ToolCall("verify", {}, id="b", observation="verify: ok", verdict={"status": "ok", "reward": 1})],
        prompt_token_ids=[1, 2, 3, 4, 5, 6, 7],
        response_token_ids=[8],
        response_logprobs=[-0.3],
    )
    # The context was condensed before the third turn: its prompt does not extend the second's.
    third = Turn(
        index=3,
        tool_calls=[ToolCall("bash", {}, id="c", error="the arguments of bash are not valid JSON")],
        prompt_token_ids=[1, 9],
        response_token_ids=[10, 11],
        response_logprobs=[-0.4, -0.5],
    )
    return Trajectory(
        problem="relu.py",
        device="cpu",
        policy="scripted",
        problem_source="class Model: ...",
        messages=[{"role": "system", "content": "skill"}],
        turns=[first, second, third],
        stop_reason="submitted",
        best={"turn": 2, "verdict": {"reward": 1}, "files": {"a": "b"}},
        verdict={"reward": 1},
    )


def test_trajectory_round_trips_to_json():
    trajectory = _trajectory()
    again = Trajectory.loads(json.dumps(json.loads(trajectory.dumps())))
    assert again == trajectory
    assert again.turns[1].verdict == {"status": "ok", "reward": 1}
    assert again.turns[2].tool_calls[0].error


def test_json_stores_a_prompt_that_extends_the_previous_turn_as_its_tail():
    stored = _trajectory().to_json()["turns"]
    assert stored[1]["prompt_token_ids"] == [6, 7] and stored[1]["prompt_extends_previous"] == 5
    assert stored[2]["prompt_token_ids"] == [1, 9] and "prompt_extends_previous" not in stored[2]


def test_token_sequences_mask_the_model_generated_tokens():
    first, second = _trajectory().token_sequences()
    assert first["token_ids"] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert first["loss_mask"] == [0, 0, 0, 1, 1, 0, 0, 1]
    assert first["logprobs"] == [0.0, 0.0, 0.0, -0.1, -0.2, 0.0, 0.0, -0.3]
    assert second["token_ids"] == [1, 9, 10, 11] and second["loss_mask"] == [0, 0, 1, 1]


def test_turns_without_token_data_round_trip_and_yield_no_sequence():
    trajectory = Trajectory(
        problem="p.py", device="cuda", policy="heuristic", turns=[Turn(index=1, tool_calls=[ToolCall("submit")])]
    )
    assert Trajectory.loads(trajectory.dumps()) == trajectory
    assert trajectory.token_sequences() == []
