"""The agent loop's own cost per turn (context building, condensation, records, callbacks), beside the policy's
and the tools' time in the same episode: 60 turns of a scripted policy reading and searching a 3,000-line kernel
file, with a context small enough that old turns are condensed. Runs on the CPU; target: median under 50 ms.

    python -m bench.loop_overhead [--turns 60] [--context-tokens 16000]
"""

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from agent.loop import Episode, EpisodeConfig
from agent.policies.base import Action, Policy
from agent.trajectory import ToolCall
from sandbox import EvalConfig

PROBLEM = """import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.randn(64, 64)]

def get_init_inputs():
    return []
"""
LONG_FILE = "".join(f"// line {i} of a long kernel file\n" for i in range(3000))


class ReadAndSearch(Policy):
    """Writes the long file once, then reads and searches it every turn: tool calls that cost the loop the most
    (long observations to truncate, a context that grows until it is condensed)."""

    name = "scripted"

    def act(self, messages, tools):
        self.turns = getattr(self, "turns", 0) + 1
        if self.turns == 1:
            calls = [ToolCall("write_file", {"path": "kernels/long.cpp", "content": LONG_FILE})]
        else:
            calls = [
                ToolCall("read_file", {"path": "kernels/long.cpp"}),
                ToolCall("search", {"pattern": "line 1234", "path": "kernels"}),
            ]
        return Action(thought=f"step {self.turns}", tool_calls=calls)


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m bench.loop_overhead", description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--context-tokens", type=int, default=16000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ks-bench-loop-") as tmp:
        problem = Path(tmp) / "relu.py"
        problem.write_text(PROBLEM)
        config = EpisodeConfig(
            device="cpu",
            max_turns=args.turns,
            context_tokens=args.context_tokens,
            response_tokens=2000,
            eval=EvalConfig(device="cpu", compiled_baseline=False),
        )
        traj = Episode(problem, ReadAndSearch(), Path(tmp) / "workspace", config).run()
    overhead = sorted(t.overhead_s * 1000 for t in traj.turns)
    tools = [t.tools_s * 1000 for t in traj.turns]
    policy = [t.policy_s * 1000 for t in traj.turns]
    median = statistics.median(overhead)
    print(f"{'per turn (ms)':28} {'median':>8} {'p95':>8} {'max':>8}")
    for label, values in (
        ("loop's own overhead", overhead),
        ("tools (jailed bash, files)", sorted(tools)),
        ("policy (scripted)", sorted(policy)),
    ):
        print(
            f"{label:28} {statistics.median(values):8.2f} {values[int(0.95 * (len(values) - 1))]:8.2f} "
            f"{max(values):8.2f}"
        )
    share = sum(overhead) / max(1e-9, sum(overhead) + sum(tools) + sum(policy))
    print(
        f"{len(traj.turns)} turns; the loop's share of the episode's time: {share:.1%}; median overhead "
        f"{median:.1f} ms against the 50 ms target: {'met' if median < 50 else 'MISSED'}"
    )
    print(f"reproduce: python -m bench.loop_overhead --turns {args.turns} --context-tokens {args.context_tokens}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
