"""The Policy interface: a policy sees the episode's messages and tool schemas and answers with an Action."""

import json
import re
from dataclasses import dataclass, field

from agent.trajectory import ToolCall


class PolicyError(Exception):
    """The policy could not produce an action; the message says why and what to do."""


class PolicyUnavailable(PolicyError):
    """The policy's back-end cannot be reached or loaded (endpoint down, extra not installed, no checkpoint)."""


class ContextTooLong(PolicyError):
    """The prompt does not fit the model's context: the loop condenses harder and asks again."""


@dataclass
class Task:
    """What a policy is told at the start of an episode, besides the messages."""

    problem_name: str
    problem_source: str
    device: str
    workspace: str
    max_turns: int


@dataclass
class Action:
    """A policy's answer to one turn: its reasoning and the tool calls to run, with token data when it has them."""

    thought: str = ""
    tool_calls: list = field(default_factory=list)
    finish_reason: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    prompt_token_ids: list | None = None
    response_token_ids: list | None = None
    response_logprobs: list | None = None


class Policy:
    """Base class of policies. `act` is the one method a policy must write.

    An episode calls reset(task) once, then act(messages, tools) every turn with the OpenAI-format messages
    (system, task, then the assistant/tool exchange so far, condensed when long) and tool schemas, then
    observe(turn) with the turn's full record (observations and verdicts as data), and close() at the end.
    """

    name = "policy"
    model = ""

    def reset(self, task):
        self.task = task

    def act(self, messages, tools):
        raise NotImplementedError

    def observe(self, turn):
        pass

    def close(self):
        pass


def call_from_json(name, arguments, call_id=""):
    """A ToolCall from a name and its JSON arguments (a string or an already parsed dict); bad JSON sets .error."""
    if not isinstance(name, str) or not name:
        return ToolCall(name=str(name or ""), id=call_id, error="the tool call has no function name")
    if isinstance(arguments, dict):
        return ToolCall(name=name, arguments=arguments, id=call_id)
    text = (arguments or "").strip() or "{}"
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        return ToolCall(
            name=name,
            id=call_id,
            error=f"the arguments of {name} are not valid JSON ({exc.msg} at character {exc.pos}): {text[:300]!r}",
        )
    if not isinstance(parsed, dict):
        return ToolCall(
            name=name, id=call_id, error=f"the arguments of {name} must be a JSON object, not {text[:100]!r}"
        )
    return ToolCall(name=name, arguments=parsed, id=call_id)


TOOL_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)


def parse_tool_calls(text):
    """(content, [ToolCall]) from a model's raw text with Hermes-style `<tool_call>{"name", "arguments"}</tool_call>`
    blocks, the format of the Qwen, Hermes and many other chat templates (vLLM's `hermes` parser reads the same)."""
    calls = []
    for index, match in enumerate(TOOL_CALL.finditer(text)):
        body = match.group(1).strip()
        try:
            data = json.loads(body)
        except json.JSONDecodeError as exc:
            calls.append(
                ToolCall(
                    name="",
                    id=f"call_{index}",
                    error=f"a <tool_call> block is not valid JSON ({exc.msg}): {body[:300]!r}",
                )
            )
            continue
        if not isinstance(data, dict):
            calls.append(
                ToolCall(
                    name="",
                    id=f"call_{index}",
                    error=f"a <tool_call> block must hold a JSON object with name and arguments: {body[:200]!r}",
                )
            )
            continue
        calls.append(call_from_json(data.get("name"), data.get("arguments", {}), f"call_{index}"))
    content = TOOL_CALL.sub("", text).strip()
    return content, calls


def template_messages(messages):
    """MESSAGES in the form Hugging Face chat templates expect: tool-call arguments as dicts, not JSON strings."""
    out = []
    for message in messages:
        if message.get("tool_calls"):
            message = {
                **message,
                "tool_calls": [
                    {**tc, "function": {**tc["function"], "arguments": _as_dict(tc["function"].get("arguments"))}}
                    for tc in message["tool_calls"]
                ],
            }
        out.append(message)
    return out


def _as_dict(arguments):
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except json.JSONDecodeError:
            return {}
    return arguments if isinstance(arguments, dict) else {}


def require(module, extra):
    """Import MODULE (a policy's optional back-end) or raise PolicyUnavailable naming the extra to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise PolicyUnavailable(
            f"this policy needs the {module!r} package ({exc}): pip install 'kernel-studio[{extra}]'"
        ) from None
