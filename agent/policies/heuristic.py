"""The heuristic policy: a real optimizer written as code, acting through the same tools a model uses.

analyze (the problem's graph, traced jailed through `bash`) -> plan (one fused kernel: elementwise chain,
row-wise reduction or normalization, or a cuBLAS GEMM with its epilogue fused) -> write the workspace ->
compile -> verify -> tune the block size by measuring (CUDA) -> submit the fastest verified variant.
When it cannot plan a problem it says which operator stopped it and submits nothing: it never writes a
PyTorch fallback.
"""

import json
import re

from agent.heuristic.codegen import workspace_files
from agent.library import library_files
from agent.heuristic.plan import Unsupported, make_plan
from agent.policies.base import Action, Policy, PolicyError
from agent.trajectory import ToolCall

BLOCKS = (256, 128, 512)
READ_LINES = 2  # lines of analysis.json a read_file call asks for: within one observation (analyze.CHUNK)


class CannotOptimize(PolicyError):
    """The heuristic has no kernel for this problem; the message names the operator that stopped it."""


class HeuristicPolicy(Policy):
    name = "heuristic"
    model = "heuristic"

    def __init__(self, tune=True, **_options):
        """The heuristic needs no model, endpoint or key; options meant for other back-ends are ignored. TUNE: on
        CUDA, measure the other block sizes after the first verified one (False: submit that one; a teacher's
        shorter episodes for distillation data)."""
        self.tune = tune

    def reset(self, task):
        super().reset(task)
        self.state = "analyze"
        self.plan = None
        self.block = BLOCKS[0]
        self.results = {}  # block -> runtime_ms of a correct verification
        self.pending = list(BLOCKS[1:]) if task.device == "cuda" and self.tune else []
        self.last_verdict = None
        self.last_observation = ""
        self.observations = []  # the last turn's, one per tool call

    def observe(self, turn):
        self.observations = []
        for call in turn.tool_calls:
            self.last_observation = call.observation or call.error
            self.observations.append(self.last_observation)
            if call.verdict is not None:
                self.last_verdict = call.verdict

    def act(self, messages, tools):
        return getattr(self, f"_{self.state}")()

    # -- the states -------------------------------------------------------------------------------------------
    def _analyze(self):
        self.state = "write"
        return Action(
            thought="Read the problem's graph (shapes and operators) to decide what to fuse.",
            tool_calls=[ToolCall("bash", {"command": "python -m agent.heuristic.analyze problem.py"})],
        )

    def _write(self):
        match = re.search(r"^ANALYSIS (.*)$", self.last_observation, re.MULTILINE)
        if match:
            try:
                analysis = json.loads(match.group(1))
            except json.JSONDecodeError:
                analysis = None  # cut short in the observation: analysis.json holds it whole
            if analysis is not None:
                return self._plan(analysis)
        match = re.search(r"^ANALYSIS-FILE (\S+) (\d+) lines", self.last_observation, re.MULTILINE)
        if not match:
            raise CannotOptimize(f"the analysis did not run: {self.last_observation[-1500:]}")
        # A graph too large for one observation: read its file back, READ_LINES lines a call, in one turn.
        path, count = match.group(1), int(match.group(2))
        self.state = "read"
        return Action(
            thought=f"The graph is too large to print: read {path} back ({count} lines).",
            tool_calls=[
                ToolCall(
                    "read_file", {"path": path, "start_line": first, "end_line": min(count, first + READ_LINES - 1)}
                )
                for first in range(1, count + 1, READ_LINES)
            ],
        )

    def _read(self):
        # Each observation is a header line, then the lines asked for; joined, the lines are the JSON.
        text = "".join("".join(obs.splitlines()[1:]) for obs in self.observations)
        try:
            analysis = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CannotOptimize(f"the analysis could not be read back ({exc}; {len(text)} characters)") from None
        return self._plan(analysis)

    def _plan(self, analysis):
        try:
            self.plan = make_plan(analysis)
        except Unsupported as exc:
            raise CannotOptimize(f"no kernel written: {exc}") from None
        self.state = "verify"
        if self.plan.kind in ("gemm", "conv"):
            # The library call dominates; the epilogue's block size is not worth a verification each.
            self.pending = []
        files = workspace_files(self.plan, self.task.device, self.task.problem_source, self.block)
        library = library_files("cuda" if self.task.device == "cuda" else "cpu")
        files = {path: text for path, text in files.items() if library.get(path) != text}  # the workspace has them
        calls = [ToolCall("write_file", {"path": path, "content": text}) for path, text in sorted(files.items())]
        return Action(
            thought=f"Plan: {self.plan.describe}. Write the kernel, the binding and ModelNew, then compile.",
            tool_calls=calls + [ToolCall("compile", {})],
        )

    def _verify(self):
        self.state = "judge"
        return Action(
            thought=f"Verify the version with {self.block} threads per block against the reference and time it.",
            tool_calls=[ToolCall("verify", {})],
        )

    def _judge(self):
        verdict = self.last_verdict or {}
        if verdict.get("status") != "ok":
            if not self.results:
                raise CannotOptimize(
                    f"the generated kernel did not verify ({verdict.get('status')}): "
                    f"{(verdict.get('log') or self.last_observation)[-1500:]}"
                )
        else:
            self.results[self.block] = verdict["runtime_ms"]
        if self.pending:
            previous, self.block = self.block, self.pending.pop(0)
            self.state = "judge"
            return Action(
                thought=f"Measure {self.block} threads per block against {previous}.",
                tool_calls=[
                    ToolCall(
                        "edit_file",
                        {
                            "path": "kernels/fused.cu",
                            "old_string": f"#define BLOCK {previous}\n",
                            "new_string": f"#define BLOCK {self.block}\n",
                        },
                    ),
                    ToolCall("verify", {}),
                ],
            )
        best = min(self.results, key=self.results.get)
        calls = []
        if best != self.block:
            calls.append(
                ToolCall(
                    "edit_file",
                    {
                        "path": "kernels/fused.cu",
                        "old_string": f"#define BLOCK {self.block}\n",
                        "new_string": f"#define BLOCK {best}\n",
                    },
                )
            )
        timings = ", ".join(f"{b} threads: {ms:.4f} ms" for b, ms in sorted(self.results.items()))
        self.state = "done"
        return Action(
            thought=f"Keep the fastest verified variant ({timings or 'one variant'}) and submit.",
            tool_calls=calls + [ToolCall("submit", {"summary": self.plan.describe})],
        )

    def _done(self):
        raise CannotOptimize("the episode continued after submit")
