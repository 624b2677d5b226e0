"""Teacher trajectories restated in the actor's budget: the text an episode of the actor's budget shows, and
nothing else changed."""

import textwrap

import pytest

from agent.loop import Episode, EpisodeConfig
from agent.policies.base import Action, Policy, PolicyError, ToolCall
from agent.trajectory import Trajectory
from training.rl.restate import RestateError, restate

PROBLEM = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(8, 16)]


def get_init_inputs():
    return []
"""

# Reads only, so two runs of these turns observe the same text; then the script ends (a policy error ends the
# episode), with the workspace still the starter's: no evaluation to wait for.
TURNS = [
    [("read_file", {"path": "problem.py"})],
    [("read_file", {"path": "binding.cpp"})],
    [("read_file", {"path": "model_new.py"})],
]


class Replay(Policy):
    name = "heuristic"  # restated as the teacher's episodes are

    def __init__(self):
        self.turns = list(TURNS)

    def act(self, messages, tools):
        if not self.turns:
            raise PolicyError("the script is over")
        calls = [ToolCall(name=name, arguments=dict(args)) for name, args in self.turns.pop(0)]
        return Action(thought="next step", tool_calls=calls)


def episode(tmp_path, name, **config):
    problem = tmp_path / "relu.py"
    problem.write_text(textwrap.dedent(PROBLEM))
    return Episode(problem, Replay(), tmp_path / name, EpisodeConfig(device="cpu", **config)).run()


def observations(trajectory):
    return [[call.observation for call in turn.tool_calls] for turn in trajectory.turns]


def test_a_teacher_episode_restated_in_the_actors_budget_reads_as_the_actors_own_episode(tmp_path):
    teacher = episode(tmp_path, "teacher", max_turns=12)
    actor = episode(tmp_path, "actor", max_turns=4, wall_clock_s=120.0)
    assert len(teacher.turns) == len(actor.turns) == 3
    # the texts differ where the budgets do: the task's sentence and the turns-left notes
    assert teacher.messages != actor.messages and observations(teacher) != observations(actor)
    assert "You have 4 turns and 2 minutes." in actor.messages[-1]["content"]
    assert "[3 turn(s) left" in actor.turns[0].tool_calls[-1].observation
    restated = restate(teacher, 4, 120.0)
    assert restated.messages == actor.messages
    assert observations(restated) == observations(actor)
    # the answers (what the actor learns) are the teacher's, and the teacher's record is left as it was
    assert [t.thought for t in restated.turns] == [t.thought for t in teacher.turns]
    assert [[c.arguments for c in t.tool_calls] for t in restated.turns] == [
        [c.arguments for c in t.tool_calls] for t in teacher.turns
    ]
    assert "You have 12 turns." in teacher.messages[-1]["content"] and "turn(s) left" not in str(observations(teacher))
    # and back: the actor's episode restated in the teacher's budget is the teacher's text
    back = restate(Trajectory.from_json(restated.to_json()), 12, None)
    assert back.messages == teacher.messages and observations(back) == observations(teacher)


def test_a_teacher_episode_longer_than_the_actors_budget_states_the_turns_it_took(tmp_path):
    teacher = episode(tmp_path, "teacher", max_turns=12)
    restated = restate(teacher, 2, None)
    assert "You have 3 turns." in restated.messages[-1]["content"]
    assert restated.turns[0].tool_calls[-1].observation.endswith("[2 turn(s) left: verify and submit]")
    assert restated.turns[1].tool_calls[-1].observation.endswith("[1 turn(s) left: verify and submit]")
    # a turn that submits gets no note (the loop adds none once the agent has submitted)
    teacher.turns[0].tool_calls[-1].name = "submit"
    restated = restate(teacher, 4, None)
    assert "turn(s) left" not in restated.turns[0].tool_calls[-1].observation
    assert restated.turns[1].tool_calls[-1].observation.endswith("[2 turn(s) left: verify and submit]")


def test_a_trajectory_whose_task_does_not_state_its_budget_is_refused_by_name(tmp_path):
    teacher = episode(tmp_path, "teacher", max_turns=12)
    teacher.messages[-1]["content"] = teacher.messages[-1]["content"].replace("You have 12 turns.", "Go.")
    with pytest.raises(RestateError, match="relu.*0 opening messages state 'You have 12 turns.'"):
        restate(teacher, 4, None)
