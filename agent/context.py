"""What the model sees: the opening messages, the turns as OpenAI-format messages, truncation and condensation.

Observations are cut to a budget when a tool produces them (with a note saying how to see the rest). When the
whole conversation nears the model's context, the oldest turns are condensed to one line per tool call, in
one step down to a fraction of the budget: the turns after that extend the same prefix again, which keeps
token sequences long for training and the server's prefix cache warm. Files are never condensed away: the
agent reads their current state whenever it needs it.
"""

import json

CHARS_PER_TOKEN = 3.0  # code and logs tokenize denser than prose; err on the side of condensing early
CONDENSE_TO = 0.6  # after condensing, the conversation fills this fraction of the budget
KEEP_RECENT = 4  # the latest turns always stay whole
MAX_SUMMARY_LINES = 150
NO_TOOL_CALL = (
    "You did not call a tool. Every turn must call at least one tool: act with bash, read_file, "
    "write_file, edit_file, search, compile, verify or profile, and call submit when you are done."
)


def truncate(text, limit, hint="narrow the request to see the rest"):
    """TEXT cut to about LIMIT characters, head and tail kept, with a note of what was cut."""
    if len(text) <= limit:
        return text
    head, tail = (limit * 2) // 3, limit // 3
    return (
        f"{text[:head]}\n[... {len(text) - head - tail} characters cut ({len(text)} in all): {hint} ...]\n"
        f"{text[len(text) - tail :]}"
    )


def assistant_message(turn):
    message = {"role": "assistant", "content": turn.thought or ""}
    if turn.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    # A malformed call is shown as an empty one: echoing broken JSON back breaks some servers' templates.
                    "name": call.name or "invalid",
                    "arguments": "{}" if call.error else json.dumps(call.arguments),
                },
            }
            for call in turn.tool_calls
        ]
    return message


def turn_messages(turn):
    if not turn.tool_calls:
        return [assistant_message(turn), {"role": "user", "content": turn.note or NO_TOOL_CALL}]
    return [assistant_message(turn)] + [
        {"role": "tool", "tool_call_id": call.id, "content": call.observation} for call in turn.tool_calls
    ]


def summary_line(turn):
    if not turn.tool_calls:
        return f"turn {turn.index}: no tool call"
    parts = []
    for call in turn.tool_calls:
        first = (call.error or call.observation).strip().splitlines()
        outcome = first[0][:120] if first else ""
        parts.append(f"{call.describe()} -> {outcome}")
    return f"turn {turn.index}: " + "; ".join(parts)


class Context:
    """Builds each turn's messages from the opening messages and the turns so far, condensing when needed."""

    def __init__(self, opening, budget_tokens, keep_recent=KEEP_RECENT):
        self.opening = opening
        self.budget_chars = int(budget_tokens * CHARS_PER_TOKEN)
        self.keep_recent = keep_recent
        self.condensed = 0  # turns[:condensed] are shown as summary lines only
        self._sizes = {}
        self._summary = (0, [])

    def _size(self, turn):
        if turn.index not in self._sizes:
            self._sizes[turn.index] = sum(len(json.dumps(m)) for m in turn_messages(turn))
        return self._sizes[turn.index]

    def messages(self, turns, notes=""):
        """The messages for the next turn. NOTES (the best solution so far) go into the condensed summary."""
        opening = sum(len(json.dumps(m)) for m in self.opening)
        total = opening + sum(self._size(t) for t in turns[self.condensed :])
        if total > self.budget_chars:
            target = self.budget_chars * CONDENSE_TO
            while self.condensed < len(turns) - self.keep_recent and total > target:
                total -= self._size(turns[self.condensed])
                self.condensed += 1
        return (
            self.opening + self.summary(turns, notes) + [m for t in turns[self.condensed :] for m in turn_messages(t)]
        )

    def shrink(self, turns):
        """Condense half of what is still whole (the endpoint said the prompt is too long); False if nothing is left."""
        whole = len(turns) - self.condensed
        if whole <= 1:
            return False
        self.condensed += max(1, whole // 2)
        return True

    def summary(self, turns, notes):
        """The condensed turns as one message, written when they are condensed and unchanged until the next time."""
        if self._summary[0] == self.condensed:
            return self._summary[1]
        lines = [summary_line(t) for t in turns[: self.condensed]]
        if len(lines) > MAX_SUMMARY_LINES:
            lines = [f"({len(lines) - MAX_SUMMARY_LINES} earlier turns omitted)"] + lines[-MAX_SUMMARY_LINES:]
        text = (
            "Earlier turns, condensed to save context (files hold their current state: read them again "
            "when you need them):\n" + "\n".join(lines)
        )
        if notes:
            text += "\n" + notes
        self._summary = (self.condensed, [{"role": "user", "content": text}])
        return self._summary[1]
