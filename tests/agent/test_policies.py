"""Policy plumbing that needs no server: reading tool calls from model text, and back-ends that cannot load."""

import pytest

from agent.policies import make_policy
from agent.policies.base import PolicyUnavailable, parse_tool_calls, template_messages
from agent.policies.openai import parse_completion


def test_hermes_tool_calls_are_read_from_model_text():
    content, calls = parse_tool_calls(
        'Plan.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a.cu"}}\n'
        '</tool_call>\n<tool_call>{"name": "verify", "arguments": "{}"}</tool_call>'
    )
    assert content == "Plan."
    assert [(c.name, c.arguments, c.error) for c in calls] == [("read_file", {"path": "a.cu"}, ""), ("verify", {}, "")]


def test_broken_tool_calls_in_model_text_become_errors_not_exceptions():
    _, calls = parse_tool_calls(
        '<tool_call>{"name": "bash", "arguments": {"command": "ls"</tool_call>'
        '<tool_call>["bash"]</tool_call><tool_call>{"arguments": {}}</tool_call>'
        '<tool_call>{"name": "bash", "arguments": {"command": "ls"}}'
    )  # unterminated
    assert [
        "not valid JSON" in calls[0].error,
        "JSON object" in calls[1].error,
        "no function name" in calls[2].error,
        calls[3].error,
    ] == [True, True, True, ""]


def test_openai_completions_with_odd_tool_calls_parse_into_errors():
    action = parse_completion(
        {
            "choices": [
                {
                    "finish_reason": "tool_calls",
                    "message": {
                        "content": None,
                        "reasoning_content": "think",
                        "tool_calls": [
                            {"id": "1", "function": {"name": "read_file", "arguments": '{"path": '}},
                            {"id": "2", "function": {"name": "read_file", "arguments": '"problem.py"'}},
                            {"id": "3", "function": {"arguments": "{}"}},
                            {"id": "4", "function": {"name": "verify", "arguments": ""}},
                        ],
                    },
                }
            ]
        }
    )
    assert action.thought == "think"
    assert [bool(c.error) for c in action.tool_calls] == [True, True, True, False]
    assert action.tool_calls[3].arguments == {}


def test_chat_templates_get_arguments_as_dicts():
    messages = [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "x"}'}}
            ],
        }
    ]
    assert template_messages(messages)[0]["tool_calls"][0]["function"]["arguments"] == {"path": "x"}
    assert messages[0]["tool_calls"][0]["function"]["arguments"] == '{"path": "x"}'  # the input is untouched


def test_transformers_policy_reports_a_checkpoint_it_cannot_load(tmp_path):
    pytest.importorskip("transformers")
    with pytest.raises(PolicyUnavailable, match="cannot load the checkpoint"):
        make_policy("transformers", model=str(tmp_path / "missing"))


def test_missing_back_ends_name_the_extra_to_install():
    with pytest.raises(PolicyUnavailable, match=r"kernel-studio\[vllm\]"):
        make_policy("vllm", model="m")
    with pytest.raises(ValueError, match="unknown policy"):
        make_policy("gpt", model="m")
