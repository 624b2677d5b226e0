"""Records of an episode: ToolCall, Turn and Trajectory, their JSON round-trip, and the token data training needs."""

import json
from dataclasses import asdict, dataclass, field, fields


def _from(cls, data):
    known = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class ToolCall:
    """One tool call of a turn and what it returned. `error` set: the call could not be run (bad JSON, unknown tool)."""

    name: str
    arguments: dict = field(default_factory=dict)
    id: str = ""
    error: str = ""
    observation: str = ""
    verdict: dict | None = None
    seconds: float = 0.0

    def describe(self):
        """`name(key=value, ...)` with long values cut, for condensed context and progress lines."""

        def short(value):
            text = value if isinstance(value, str) else json.dumps(value)
            text = text.replace("\n", "\\n")
            return text if len(text) <= 60 else text[:57] + "..."

        return f"{self.name}(" + ", ".join(f"{k}={short(v)}" for k, v in self.arguments.items()) + ")"


@dataclass
class Turn:
    index: int
    thought: str = ""
    tool_calls: list = field(default_factory=list)
    note: str = ""
    finish_reason: str = ""
    policy_s: float = 0.0
    tools_s: float = 0.0
    overhead_s: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    # Token-level data, when the policy can provide it: the exact prompt the model saw and what it generated.
    prompt_token_ids: list | None = None
    response_token_ids: list | None = None
    response_logprobs: list | None = None

    @property
    def verdict(self):
        """The last verdict this turn produced (verify, profile or submit), or None."""
        verdicts = [c.verdict for c in self.tool_calls if c.verdict]
        return verdicts[-1] if verdicts else None

    def to_json(self):
        return asdict(self)

    @classmethod
    def from_json(cls, data):
        turn = _from(cls, data)
        turn.tool_calls = [_from(ToolCall, c) for c in data.get("tool_calls", [])]
        return turn


@dataclass
class Trajectory:
    problem: str
    device: str
    policy: str
    problem_source: str = ""
    model: str = ""
    messages: list = field(default_factory=list)  # the opening messages (system, task) the turns follow
    tools: list = field(default_factory=list)
    turns: list = field(default_factory=list)
    stop_reason: str = ""
    best: dict | None = None  # {"turn", "verdict", "files"}: the best verified solution
    verdict: dict | None = None
    wall_s: float = 0.0
    started_at: str = ""
    config: dict = field(default_factory=dict)

    def to_json(self):
        data = asdict(self)
        data["turns"] = _compress(data["turns"])
        return data

    @classmethod
    def from_json(cls, data):
        traj = _from(cls, data)
        traj.turns = [Turn.from_json(t) for t in _expand(data.get("turns", []))]
        return traj

    def dumps(self, **kw):
        return json.dumps(self.to_json(), **kw)

    @classmethod
    def loads(cls, text):
        return cls.from_json(json.loads(text))

    def token_sequences(self):
        """The turns' tokens as training sequences: [{"token_ids", "loss_mask", "logprobs"}].

        A turn whose prompt extends the previous turn's prompt + response joins its sequence, so an episode is
        one sequence until the context is condensed; loss_mask is 1 on model-generated tokens only.
        """
        sequences = []
        for turn in self.turns:
            if turn.prompt_token_ids is None or turn.response_token_ids is None:
                continue
            prompt, response = turn.prompt_token_ids, turn.response_token_ids
            logprobs = turn.response_logprobs or [0.0] * len(response)
            last = sequences[-1] if sequences else None
            if last and len(prompt) >= len(last["token_ids"]) and prompt[: len(last["token_ids"])] == last["token_ids"]:
                new = prompt[len(last["token_ids"]) :]
            else:
                last = {"token_ids": [], "loss_mask": [], "logprobs": []}
                sequences.append(last)
                new = prompt
            last["token_ids"] += new + response
            last["loss_mask"] += [0] * len(new) + [1] * len(response)
            last["logprobs"] += [0.0] * len(new) + list(logprobs)
        return sequences


def _compress(turns):
    """Store a prompt that extends the previous turn's prompt + response as just its new tail.

    Without this a long episode's JSON grows with the square of its length (every turn repeats the context).
    """
    previous = None
    for turn in turns:
        prompt, response = turn.get("prompt_token_ids"), turn.get("response_token_ids")
        if (
            prompt is not None
            and previous is not None
            and prompt[: len(previous)] == previous
            and len(prompt) >= len(previous)
        ):
            turn["prompt_token_ids"] = prompt[len(previous) :]
            turn["prompt_extends_previous"] = len(previous)
        previous = (prompt + response) if prompt is not None and response is not None else None
    return turns


def _expand(turns):
    previous, out = None, []
    for turn in turns:
        turn = dict(turn)
        if turn.pop("prompt_extends_previous", None) is not None:
            turn["prompt_token_ids"] = previous + turn["prompt_token_ids"]
        prompt, response = turn.get("prompt_token_ids"), turn.get("response_token_ids")
        previous = (prompt + response) if prompt is not None and response is not None else None
        out.append(turn)
    return out
