"""Why a job failed, as a sentence a user can act on; the raw text (RQ's, the worker's, the agent's) kept as details."""

import re
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Failure:
    sentence: str
    details: str  # the raw text, shown folded; '' when the sentence says it all

    def to_json(self):
        return asdict(self)


SIGNALS = {
    9: "killed (SIGKILL), most often because it ran out of memory",
    15: "stopped (SIGTERM), as when its worker is shut down or restarted",
    11: "crashed (a segmentation fault)",
    6: "aborted",
}

# (pattern of the raw text, sentence); the first that matches wins. Patterns come from what RQ, the reconciler
# (studio.reconcile), the run job (studio.jobs) and the agent's episode write.
RULES = [
    (
        re.compile(r"Work-horse terminated unexpectedly; waitpid returned (\d+)"),
        lambda m: (
            f"The worker's process was {SIGNALS.get(int(m.group(1)) % 128, f'ended by signal {m.group(1)}')}. "
            "Retry; if it happens again, try fewer turns or a smaller problem, or ask an operator to give the "
            "workers more memory."
        ),
    ),
    (
        re.compile(r"JobTimeoutException|exceeded maximum timeout|Task exceeded", re.IGNORECASE),
        lambda m: (
            "The job ran past its time limit and was stopped. Retry with fewer turns, or ask an operator to raise "
            "the limit (KS_RUN_TIMEOUT, KS_EVALUATE_TIMEOUT)."
        ),
    ),
    (
        re.compile(r"its worker (\S+) stopped answering"),
        lambda m: (
            f"The worker running this ({m.group(1)}) stopped answering, so the job was lost. Retry: another "
            "worker will take it."
        ),
    ),
    (
        re.compile(r"its job is gone from the queue"),
        lambda m: "The queue lost this job (Redis was restarted or emptied). Retry it.",
    ),
    (
        re.compile(r"its job (?:JobStatus\.)?(stopped|canceled)", re.IGNORECASE),
        lambda m: "The job was stopped before it finished. Retry it to run it again.",
    ),
    (
        re.compile(r"its job ended without closing it"),
        lambda m: "The job ended without recording its result. Retry; if it happens again, report it with the details.",
    ),
    (re.compile(r"^cancelled by (.+)$"), lambda m: f"Cancelled by {m.group(1)}."),
    (
        re.compile(r"no correct solution \(max_turns\)"),
        lambda m: (
            "The agent found no correct kernel within its turns. Retry with more turns, or open a version in the "
            "editor and hand it back."
        ),
    ),
    (
        re.compile(r"no correct solution \(wall_clock\)"),
        lambda m: (
            "The agent found no correct kernel before its time ran out. Retry, or hand a version back from the editor."
        ),
    ),
    (
        re.compile(r"no correct solution \(submitted\)"),
        lambda m: "The agent submitted a kernel that is not correct. Retry, or fix it in the editor and evaluate it.",
    ),
    (
        re.compile(
            r"Connection refused|Failed to establish a new connection|ConnectError|APIConnectionError", re.IGNORECASE
        ),
        lambda m: (
            "The policy's model server did not answer. Check that it is running (KS_POLICY_BASE_URL), then retry."
        ),
    ),
    # The policy gave up (the heuristic names the operator it cannot plan): its own words are the actionable part.
    (
        re.compile(r"no correct solution \(policy_error: (.+)\)\s*$", re.DOTALL),
        lambda m: (
            f"The agent stopped without a correct kernel: {m.group(1).strip().rstrip('.')}. Change what it names, "
            "or write a kernel for it in the editor."
        ),
    ),
    (
        re.compile(r"(?:run|evaluation|validation) crashed: (\w+)"),
        lambda m: (
            f"The job stopped on an internal error ({m.group(1)}). Retry; if it happens again, report it with "
            "the details."
        ),
    ),
]


def explain(raw):
    """The Failure of RAW (an error text as stored), or None when there is none."""
    raw = (raw or "").strip()
    if not raw:
        return None
    for pattern, sentence in RULES:
        match = pattern.search(raw)
        if match:
            said = sentence(match)
            return Failure(said, "" if said.rstrip(".").lower() == raw.rstrip(".").lower() else raw)
    first = raw.splitlines()[0]
    return Failure(first if first.endswith(".") else first + ".", raw if "\n" in raw else "")
