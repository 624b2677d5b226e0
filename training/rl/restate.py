"""Teacher trajectories restated in the actor's budget: the task's turn and time budget and the turns-left notes,
as the actor's own episodes show them.

The heuristic teacher runs with more turns than the actor (rft.heuristic_max_turns) and without the evaluation's
wall clock, so its opening says "You have 12 turns." where the actor's says "You have 4 turns and 2 minutes.", and
the actor sees "[3 turn(s) left: verify and submit]" after turns the teacher's never had a note after. A model
trained on the teacher's text meets prompts at evaluation it never saw in training. Restating changes only that
environment text, never an answer: the policy tokens the actor learns are the teacher's.
"""

from agent.loop import budget_text, turns_left_note
from agent.trajectory import Trajectory


class RestateError(ValueError):
    """A trajectory's opening does not state its budget where agent.loop writes it; the message says why."""


def _strip_note(observation, max_turns, index):
    note = turns_left_note(max_turns - index)
    return observation[: -len(note)] if note and observation.endswith(note) else observation


def restate(trajectory, max_turns, wall_clock_s):
    """TRAJECTORY (not changed) as a copy whose task states MAX_TURNS turns (the trajectory's own length where it took
    more) and WALL_CLOCK_S (None or 0: none), with the turns-left notes of that budget."""
    old_turns = trajectory.config.get("max_turns") if trajectory.config else None
    if not old_turns:
        raise RestateError(f"{trajectory.problem}: the trajectory records no episode config to restate")
    old_wall = trajectory.config.get("stated_wall_clock_s")
    old_wall = trajectory.config.get("wall_clock_s") if old_wall is None else old_wall
    turns = max(max_turns, len(trajectory.turns))
    out = Trajectory.from_json(trajectory.to_json())
    old_text, new_text = budget_text(old_turns, old_wall), budget_text(turns, wall_clock_s)
    tasks = [m for m in out.messages if m.get("role") == "user" and old_text in (m.get("content") or "")]
    if len(tasks) != 1:
        raise RestateError(
            f"{trajectory.problem}: {len(tasks)} opening messages state {old_text!r}; restate trajectories that "
            f"agent.loop wrote (their first user message states the budget once), or train on them as they are "
            f"with rft.restate_budget: false"
        )
    tasks[0]["content"] = tasks[0]["content"].replace(old_text, new_text, 1)
    for index, turn in enumerate(out.turns, start=1):
        if not turn.tool_calls or any(call.name == "submit" for call in turn.tool_calls):
            continue
        last = turn.tool_calls[-1]
        last.observation = _strip_note(last.observation, old_turns, index) + turns_left_note(turns - index)
    out.config = {**out.config, "max_turns": turns, "wall_clock_s": wall_clock_s, "stated_wall_clock_s": None}
    return out
