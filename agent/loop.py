"""The ReAct loop: an episode owns a workspace and runs turns (the policy thinks and calls tools, the tools
observe) until the policy submits or a budget runs out, keeping the best verified solution all along.

    episode = Episode("problem.py", policy, "out/workspace", EpisodeConfig(device="cuda", max_turns=60))
    trajectory = episode.run()
    save(trajectory, "out")  # solution.py, trajectory.json, verdict.json

An episode given `stop_before` tool names ends at the first call of one of them, which is recorded in its turn but
not run: a partial episode without a verdict (distillation data built where the device is missing).
"""

import json
import logging
import time
from dataclasses import asdict, dataclass, fields
from datetime import datetime, timezone
from pathlib import Path

from sandbox import EvalConfig, Verdict

from agent.context import Context
from agent.library import library_files
from agent.policies.base import ContextTooLong, PolicyError, Task
from agent.tools import SCHEMAS, Tools, files_digest
from agent.trajectory import Trajectory, Turn
from agent.workspace import SKILL, Workspace, solution_source, write_files

log = logging.getLogger(__name__)


class EpisodeConfigError(ValueError):
    """An episode configuration that contradicts itself or names an unknown field; the message says what to change."""


@dataclass
class EpisodeConfig:
    """One episode's knobs: the one record the CLI, the studio, evaluations and RL rollouts build and send as JSON.

    The device is set once: the sandbox's settings (`eval`) run on it, derived when left out; an EvalConfig given
    for another device is an EpisodeConfigError rather than an episode that silently measures somewhere else."""

    device: str = "cuda"
    max_turns: int = 60
    wall_clock_s: float | None = None  # None: no wall-clock budget
    # The wall-clock budget the task states when it is not wall_clock_s (None: wall_clock_s's; 0: none): an evaluation
    # that stops episodes sooner than its actor trained under tells the actor the budget it trained with.
    stated_wall_clock_s: float | None = None
    context_tokens: int = 32768  # the model's context window
    response_tokens: int = 4096  # kept free for the model's answer
    observation_chars: int = 12000  # one tool observation, at most
    bash_timeout_s: float = 120.0
    eval: EvalConfig | None = None  # the sandbox's settings; None: EvalConfig(device=device)

    def __post_init__(self):
        if self.eval is None:
            self.eval = EvalConfig(device=self.device)
        elif self.eval.device != self.device:
            raise EpisodeConfigError(
                f"the episode runs on {self.device} but its sandbox settings (eval) on {self.eval.device}: one "
                f"episode runs on one device; build eval with EvalConfig(device={self.device!r}, ...), or leave the "
                f"device out of eval's JSON (it is the episode's)"
            )

    def to_json(self):
        """The fields as JSON; eval without its device, which is the episode's."""
        data = asdict(self)
        data["eval"].pop("device")
        return data

    @classmethod
    def from_json(cls, data):
        """The record of DATA (to_json's output; eval may repeat the device, if it agrees)."""
        data = dict(data)
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise EpisodeConfigError(
                f"unknown episode field(s) {', '.join(unknown)}: allowed are {', '.join(f.name for f in fields(cls))}"
            )
        settings = data.pop("eval", None)
        if settings is not None:
            device = settings.get("device", data.get("device", cls.device))
            try:
                data["eval"] = EvalConfig.from_json({**settings, "device": device})
            except TypeError as exc:  # an unknown EvalConfig field
                raise EpisodeConfigError(f"eval: {exc}") from None
        return cls(**data)


SYSTEM = (
    "You are an expert GPU performance engineer. You work in a sandboxed workspace through tools, one or "
    "more tool calls per turn, and think briefly before each. Your skill file follows.\n\n"
)

TASK = """Optimize this problem for the {device_name} (device {device}).

problem.py:
```python
{source}
```

The workspace holds:
{listing}

{budget} Read, plan, write the kernels, compile, verify, profile and improve; submit when
you cannot improve further. The best verified solution is kept whatever happens later."""


def better(verdict, best):
    """Whether VERDICT beats the best so far: higher reward first, then a shorter runtime among correct ones.
    Among failures the latest wins, so a failed episode ends with the agent's last attempt."""
    if best is None:
        return True
    old = best["verdict"]
    if verdict.reward != old.reward:
        return verdict.reward > old.reward
    if not verdict.correct:
        return True
    return verdict.runtime_ms < old.runtime_ms


class Episode:
    def __init__(self, problem, policy, workspace, config=None, on_turn=None, start_files=None, stop_before=()):
        self.problem = Path(problem).resolve()
        self.policy = policy
        self.workspace_dir = Path(workspace)
        self.config = config or EpisodeConfig()
        self.on_turn = on_turn or (lambda turn: None)
        # {relative path: text}: the solution files the workspace starts from instead of the starter's
        # (a version handed back by a person, say); the agent sees them in the task's listing.
        self.start_files = start_files
        # Tool names whose first call ends the episode unrun: that call and the turn's later ones keep no
        # observation, and no verification replaces the verdict the episode never reached.
        self.stop_before = frozenset(stop_before)

    def run(self):
        cfg = self.config
        start = time.monotonic()
        ws = Workspace.create(self.workspace_dir, self.problem, cfg.device)
        if self.start_files:  # a version saved before the library shipped lacks its headers: they are added
            restore(ws, {**library_files(cfg.device), **self.start_files})
        tools = Tools(ws, self.problem, cfg.eval, cfg.bash_timeout_s, cfg.observation_chars)
        source = self.problem.read_text()
        opening = [
            {"role": "system", "content": SYSTEM + SKILL.read_text()},
            {"role": "user", "content": self._task(ws, source)},
        ]
        context = Context(opening, cfg.context_tokens - cfg.response_tokens)
        traj = Trajectory(
            problem=self.problem.name,
            device=cfg.device,
            policy=self.policy.name,
            model=self.policy.model,
            problem_source=source,
            messages=opening,
            tools=SCHEMAS,
            started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            config=cfg.to_json(),
        )
        self.policy.reset(Task(self.problem.name, source, cfg.device, str(ws.root), cfg.max_turns))
        best, stop, stopped = None, "max_turns", None

        for index in range(1, cfg.max_turns + 1):
            if cfg.wall_clock_s is not None and time.monotonic() - start >= cfg.wall_clock_s:
                stop = "wall_clock"
                break
            turn_start = time.monotonic()
            # think: the policy sees the conversation (condensed when long) and answers with tool calls
            try:
                action, policy_s = self._act(context, traj.turns, best)
            except PolicyError as exc:
                if not traj.turns:
                    raise
                log.warning("episode %s: the policy failed at turn %d: %s", ws.root, index, exc)
                stop = f"policy_error: {exc}"
                break
            turn = Turn(
                index=index,
                thought=action.thought,
                tool_calls=action.tool_calls,
                finish_reason=action.finish_reason,
                policy_s=round(policy_s, 6),
                prompt_tokens=action.prompt_tokens,
                completion_tokens=action.completion_tokens,
                prompt_token_ids=action.prompt_token_ids,
                response_token_ids=action.response_token_ids,
                response_logprobs=action.response_logprobs,
            )
            # act and observe: every call runs in order; a verdict that beats the best replaces it
            submitted, stopped, tools_start = False, None, time.monotonic()
            for n, call in enumerate(turn.tool_calls):
                call.id = call.id or f"call_{index}_{n}"
                stopped = stopped or (call.name if call.name in self.stop_before else None)
                if stopped:
                    continue
                result = tools.run(call)
                if result.verdict is not None:
                    if better(result.verdict, best):
                        best = {"turn": index, "verdict": result.verdict, "files": result.files}
                    call.observation += "\n" + best_note(best)
                submitted = submitted or result.done
            left = cfg.max_turns - index
            if turn.tool_calls and not submitted and not stopped:
                turn.tool_calls[-1].observation += turns_left_note(left)
            tools_s = time.monotonic() - tools_start
            turn.tools_s = round(tools_s, 6)  # microseconds: a file read takes well under a millisecond
            turn.overhead_s = round(max(0.0, time.monotonic() - turn_start - policy_s - tools_s), 6)
            traj.turns.append(turn)
            self.on_turn(turn)
            self.policy.observe(turn)
            if submitted:
                stop = "submitted"
                break
            if stopped:
                stop = f"stopped before {stopped}"
                break

        traj.stop_reason = stop
        if stopped:
            traj.wall_s = round(time.monotonic() - start, 3)
            log.info("episode %s: %s after %d turns, not verified", ws.root, stop, len(traj.turns))
            return traj
        # the result is the best verified solution; with none verified, the workspace as the agent left it
        if best is None and ws.holds_the_starter():
            # Nothing was written: the starter's forward raises NotImplementedError, no need to run it to know.
            verdict = Verdict(
                status="runtime_error",
                device=cfg.device,
                log=f"no solution: the workspace still holds the starter's files, whose "
                f"ModelNew.forward raises NotImplementedError (the episode ended: {stop})",
            )
            best = {"turn": None, "verdict": verdict, "files": ws.solution_files()}
        elif best is None:
            result = tools.tool_verify()
            best = {"turn": None, "verdict": result.verdict, "files": result.files}
        restore(ws, best["files"])
        traj.best = {"turn": best["turn"], "verdict": best["verdict"].to_json(), "files": best["files"]}
        traj.verdict = traj.best["verdict"]
        traj.wall_s = round(time.monotonic() - start, 3)
        log.info("episode %s: %s after %d turns, %s", ws.root, stop, len(traj.turns), best["verdict"].summary())
        return traj

    def _act(self, context, turns, best):
        """The policy's action on the conversation so far, and the seconds the policy itself took."""
        notes = best_note(best) if best else ""
        messages = context.messages(turns, notes)
        t0 = time.monotonic()
        try:
            return self.policy.act(messages, SCHEMAS), time.monotonic() - t0
        except ContextTooLong:
            if not context.shrink(turns):
                raise
            messages = context.messages(turns, notes)
            t0 = time.monotonic()
            return self.policy.act(messages, SCHEMAS), time.monotonic() - t0

    def _task(self, ws, source):
        cfg = self.config
        stated = cfg.wall_clock_s if cfg.stated_wall_clock_s is None else cfg.stated_wall_clock_s
        device_name = "NVIDIA GPU" if cfg.device == "cuda" else "CPU (C++ kernels in kernels/*.cpp)"
        return TASK.format(
            device_name=device_name,
            device=cfg.device,
            source=source.strip(),
            listing=ws.listing(),
            budget=budget_text(cfg.max_turns, stated),
        )


def budget_text(max_turns, wall_clock_s):
    """The task's sentence stating the episode's budget (WALL_CLOCK_S None or 0: turns only)."""
    wall = f" and {wall_clock_s / 60:.0f} minutes" if wall_clock_s else ""
    return f"You have {max_turns} turns{wall}."


# What the last tool result of a turn gains when few turns are left and the agent has not submitted.
TURNS_LEFT = "\n[{left} turn(s) left: verify and submit]"


def turns_left_note(left):
    """The note for LEFT turns remaining: empty unless 1 to 3 are."""
    return TURNS_LEFT.format(left=left) if 0 < left <= 3 else ""


def best_note(best):
    v = best["verdict"]
    if v.correct:
        return (
            f"[best so far: turn {best['turn']}, reward {v.reward}, {v.runtime_ms:.4f} ms, "
            f"{v.speedup_vs_eager:.2f}x eager]"
        )
    return f"[best so far: none correct yet (turn {best['turn']}: {v.status})]"


def restore(ws, files):
    """Make the workspace's solution files exactly FILES (the best solution), if they are not already."""
    if files_digest(ws.solution_files()) == files_digest(files):
        return
    for rel in ws.solution_files():
        (ws.root / rel).unlink()
    write_files(ws.root, files)


def save(trajectory, out):
    """Write OUT/solution.py (the best solution, self-contained), OUT/trajectory.json and OUT/verdict.json."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    title = f"Kernel Studio solution of {trajectory.problem} ({trajectory.device}): {_headline(trajectory.verdict)}"
    (out / "solution.py").write_text(solution_source(trajectory.best["files"], title))
    (out / "trajectory.json").write_text(trajectory.dumps())
    (out / "verdict.json").write_text(json.dumps(trajectory.verdict, indent=2))


def _headline(verdict):
    if verdict["correct"]:
        return f"reward {verdict['reward']}, {verdict['runtime_ms']:.4f} ms, {verdict['speedup_vs_eager']:.2f}x eager"
    return f"{verdict['status']}, reward {verdict['reward']}"
