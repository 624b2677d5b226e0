"""Context management: observations cut with a note, old turns condensed near the budget."""

from agent.context import NO_TOOL_CALL, Context, truncate
from agent.trajectory import ToolCall, Turn

OPENING = [{"role": "system", "content": "skill " * 100}, {"role": "user", "content": "task"}]


def _turn(index, size=3000):
    return Turn(
        index=index,
        thought=f"thinking {index}",
        tool_calls=[
            ToolCall(
                "read_file",
                {"path": f"f{index}.cu"},
                id=f"c{index}",
                observation=f"f{index}.cu (9 lines)\n" + "x" * size,
            )
        ],
    )


def test_long_observations_are_truncated_with_a_note():
    text = "".join(f"{i}\n" for i in range(10000))
    cut = truncate(text, 1000, "read a line range")
    assert len(cut) < 1200 and cut.startswith("0\n1\n") and cut.endswith("9999\n")
    assert "characters cut" in cut and "read a line range" in cut
    assert truncate("short", 1000) == "short"


def test_messages_follow_the_openai_format():
    turns = [_turn(1), Turn(index=2, thought="hmm")]
    messages = Context(OPENING, budget_tokens=100000).messages(turns)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert messages[2]["tool_calls"][0] == {
        "id": "c1",
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "f1.cu"}'},
    }
    assert messages[3]["tool_call_id"] == "c1"
    assert messages[5]["content"] == NO_TOOL_CALL


def test_old_turns_are_condensed_when_the_context_nears_its_budget():
    context = Context(OPENING, budget_tokens=8000, keep_recent=2)  # 24k characters
    turns, sizes, condensations = [], [], 0
    previous = None
    for index in range(1, 40):
        turns.append(_turn(index))
        messages = context.messages(turns, notes="[best so far: none]")
        sizes.append(sum(len(str(m)) for m in messages))
        if previous is not None and messages[: len(previous)] != previous:
            condensations += 1
        previous = messages
    assert max(sizes) < 8000 * 3 * 1.1
    # Condensing goes down to a fraction of the budget, so most turns extend the previous prompt.
    assert 1 <= condensations <= 10
    summary = messages[2]["content"]
    assert summary.startswith("Earlier turns, condensed")
    assert "turn 1: read_file(path=f1.cu) -> f1.cu (9 lines)" in summary
    assert "[best so far: none]" in summary
    assert messages[-1]["content"].endswith("x" * 100)  # the latest turn is whole


def test_shrink_condenses_half_of_what_is_whole():
    context = Context(OPENING, budget_tokens=100000)
    turns = [_turn(i, 10) for i in range(1, 9)]
    assert context.shrink(turns) and context.condensed == 4
    assert len([m for m in context.messages(turns) if m["role"] == "assistant"]) == 4
