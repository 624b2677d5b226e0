"""Episodes as training samples: token ids, the mask of policy-generated tokens, rollout log-probs and
token-level rewards (each turn's reward on its last generated token), padded into batches.

A turn the policy recorded tokens for (transformers, vLLM) is used token for token. A turn without them (the
heuristic policy's, for RFT) is rendered through the actor's chat template: each rendering of the conversation
must be a prefix of the next, and the pieces between are tokenized apart, environment text and answers alike.
"""

from dataclasses import dataclass, field

import torch

from agent.context import turn_messages
from agent.policies.base import template_messages


class TokenizationError(ValueError):
    """A trajectory cannot be turned into training tokens; the message says why."""


@dataclass
class Sample:
    token_ids: list
    mask: list  # 1 on policy-generated tokens, 0 on the prompt and on tool results (environment tokens)
    logprobs: list  # the rollout's log-probs on policy tokens, 0 elsewhere
    rewards: list  # token-level rewards: nonzero only on the last token of a turn's answer
    reward: float = 0.0  # the episode's reward (the sandbox's reward of its best solution, sandbox/reward.py)
    meta: dict = field(default_factory=dict)
    positions: list = field(default_factory=list)  # packed samples only: each token's position in its own episode


def turn_rewards(trajectory, format_penalty=0.0, turn_penalty=0.0):
    """The reward of each turn: the episode's reward on its last turn, penalties (<= 0) on every turn that
    pays them (malformed tool calls, the cost of one more turn)."""
    rewards = []
    for turn in trajectory.turns:
        r = turn_penalty
        if format_penalty and (not turn.tool_calls or any(call.error for call in turn.tool_calls)):
            r += format_penalty
        rewards.append(r)
    if rewards:
        rewards[-1] += episode_reward(trajectory)
    return rewards


def episode_reward(trajectory):
    return float((trajectory.verdict or {}).get("reward", -1.0))


def turn_tokens(trajectory, tokenizer):
    """[(prompt_ids, response_ids, logprobs)] per turn: recorded by the policy, or rendered by TOKENIZER."""
    if all(t.prompt_token_ids is not None and t.response_token_ids is not None for t in trajectory.turns):
        return [
            (t.prompt_token_ids, t.response_token_ids, t.response_logprobs or [0.0] * len(t.response_token_ids))
            for t in trajectory.turns
        ]
    messages, out = list(trajectory.messages), []
    eos = tokenizer.eos_token
    previous_text, previous_ids = "", []
    for turn in trajectory.turns:
        prompt = tokenizer.apply_chat_template(
            template_messages(messages), tools=trajectory.tools or None, add_generation_prompt=True, tokenize=False
        )
        answer = turn_messages(turn)
        full = tokenizer.apply_chat_template(
            template_messages(messages + answer[:1]), tools=trajectory.tools or None, tokenize=False
        )
        if not prompt.startswith(previous_text) or not full.startswith(prompt) or eos not in full[len(prompt) :]:
            raise TokenizationError(
                "the chat template does not render a conversation as a prefix of its "
                "continuation: training on rendered trajectories needs one that does"
            )
        response_text = full[len(prompt) : full.index(eos, len(prompt)) + len(eos)]
        prompt_ids = previous_ids + _ids(tokenizer, prompt[len(previous_text) :])
        response_ids = _ids(tokenizer, response_text)
        out.append((prompt_ids, response_ids, [0.0] * len(response_ids)))
        previous_text, previous_ids = prompt + response_text, prompt_ids + response_ids
        messages += answer
    return out


def _ids(tokenizer, text):
    return tokenizer(text, add_special_tokens=False)["input_ids"] if text else []


def samples(trajectory, tokenizer, max_tokens=None, format_penalty=0.0, turn_penalty=0.0):
    """The trajectory as Samples: one per run of turns whose prompts extend each other (one per episode unless
    its context was condensed). A sample that ends before the episode does gets the rewards of the turns after
    it on its last answer token: its return is the episode's (exactly so for gamma = 1)."""
    rewards = turn_rewards(trajectory, format_penalty, turn_penalty)
    out, owner = [], []  # owner[i]: the sample holding turn i
    for index, (prompt, response, logprobs) in enumerate(turn_tokens(trajectory, tokenizer)):
        last = out[-1] if out else None
        if last is not None and len(prompt) >= len(last.token_ids) and prompt[: len(last.token_ids)] == last.token_ids:
            new = prompt[len(last.token_ids) :]
        else:
            last = Sample([], [], [], [], episode_reward(trajectory), _meta(trajectory))
            out.append(last)
            new = prompt
        last.token_ids += new + response
        last.mask += [0] * len(new) + [1] * len(response)
        last.logprobs += [0.0] * len(new) + list(logprobs)
        last.rewards += [0.0] * (len(new) + len(response))
        if response:
            last.rewards[-1] += rewards[index]
        owner.append(len(out) - 1)
    for k, sample in enumerate(out):
        later = sum(r for i, r in enumerate(rewards) if owner[i] > k)
        _place_last(sample, later)
    if max_tokens:
        for sample in out:
            _truncate(sample, max_tokens)
    return [s for s in out if any(s.mask)]


def _place_last(sample, reward):
    if reward:
        positions = [i for i, m in enumerate(sample.mask) if m]
        if positions:
            sample.rewards[positions[-1]] += reward


def _truncate(sample, max_tokens):
    """Cut SAMPLE to MAX_TOKENS, moving the rewards that fall off onto its last remaining policy token."""
    if len(sample.token_ids) <= max_tokens:
        return
    lost = sum(sample.rewards[max_tokens:])
    for name in ("token_ids", "mask", "logprobs", "rewards"):
        setattr(sample, name, getattr(sample, name)[:max_tokens])
    _place_last(sample, lost)


def _meta(trajectory):
    verdict = trajectory.verdict or {}
    return {
        "problem": trajectory.problem,
        "turns": len(trajectory.turns),
        "correct": bool(verdict.get("correct")),
        "speedup": verdict.get("speedup_vs_eager") if verdict.get("correct") else None,
        "status": verdict.get("status", ""),
    }


def pack(items, width):
    """ITEMS concatenated into rows of at most WIDTH tokens (first fit, longest first), fewer and fuller rows for
    fine-tuning. Each token keeps its position within its own sample, from which the model's attention mask keeps
    samples apart (transformers builds a block-diagonal causal mask from restarting position ids). A sample's first
    token is never a policy token (it opens the prompt), so no loss crosses from one sample into the next."""
    rows = []
    for sample in sorted(items, key=lambda s: -len(s.token_ids)):
        row = next((r for r in rows if len(r.token_ids) + len(sample.token_ids) <= width), None)
        if row is None:
            row = Sample([], [], [], [], meta={"packed": 0})
            rows.append(row)
        for name in ("token_ids", "mask", "logprobs", "rewards"):
            getattr(row, name).extend(getattr(sample, name))
        row.positions.extend(range(len(sample.token_ids)))
        row.meta["packed"] += 1
    return rows


FIELDS = ("token_ids", "attention", "mask", "logprobs", "rewards", "positions")


@dataclass
class Batch:
    """Samples padded on the right into [B, T] tensors; `attention` is 1 on real tokens; `positions` (packed
    samples only, else None) restart at each packed sample's first token."""

    token_ids: torch.Tensor
    attention: torch.Tensor
    mask: torch.Tensor
    logprobs: torch.Tensor
    rewards: torch.Tensor
    positions: torch.Tensor | None = None

    @classmethod
    def collate(cls, items, pad_id=0):
        if not items:
            raise ValueError("an empty batch: no sample has a policy token")
        width = max(len(s.token_ids) for s in items)

        def pad(name, value, dtype):
            return torch.tensor([getattr(s, name) + [value] * (width - len(s.token_ids)) for s in items], dtype=dtype)

        attention = torch.tensor([[1] * len(s.token_ids) + [0] * (width - len(s.token_ids)) for s in items])
        positions = None
        if any(s.positions for s in items):
            positions = torch.tensor(
                [(s.positions or list(range(len(s.token_ids)))) + list(range(len(s.token_ids), width)) for s in items],
                dtype=torch.long,
            )
        return cls(
            pad("token_ids", pad_id, torch.long),
            attention,
            pad("mask", 0, torch.float32),
            pad("logprobs", 0.0, torch.float32),
            pad("rewards", 0.0, torch.float32),
            positions,
        )

    def _map(self, fn):
        return Batch(*(None if getattr(self, f) is None else fn(getattr(self, f)) for f in FIELDS))

    def to(self, device):
        return self._map(lambda t: t.to(device))

    def __len__(self):
        return self.token_ids.shape[0]

    def select(self, index):
        return self._map(lambda t: t[index])
