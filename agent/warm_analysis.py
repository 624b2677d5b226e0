"""The heuristic's analysis (`python -m agent.heuristic.analyze FILE`, the first turn's bash command) run by a warm
pooled process (sandbox.warm_pool) instead of a fresh jailed Python that imports torch and pays torch.export's
first-call costs: what the pool runs, how it is warmed, and which bash commands it may take over.
"""

import re

from sandbox.warm_pool import Daemon, PoolSpec

# A small model through the paths every analysis takes (module construction on meta and fake tensors, torch.export
# with its decompositions, torch.fx with shape propagation): their imports and first-call costs are paid once.
SAMPLE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(16, 16)
        self.norm = nn.LayerNorm(16)

    def forward(self, x):
        return torch.softmax(self.norm(torch.relu(self.linear(x))) * 2.0, dim=-1).sum(dim=0)


def get_inputs():
    return [torch.randn(8, 16)]


def get_init_inputs():
    return []
"""
SPEC = PoolSpec(module="agent.heuristic.analyze", warm_files={"problem.py": SAMPLE}, warm_args=("problem.py",))
# Exactly the command, with one plain path: anything else (pipes, other options, more commands) runs in bash.
COMMAND = re.compile(r"python -m agent\.heuristic\.analyze ([\w./-]+)")


def arguments(command):
    """The analysis's arguments when COMMAND is the analysis alone (the pool can run it), else None."""
    match = COMMAND.fullmatch(command.strip())
    return [match.group(1)] if match else None


def start_pool(devices, size):
    """A warm pool of SIZE analysis processes per device of DEVICES, in a process of its own; its Daemon."""
    return Daemon(SPEC, devices, size).start()
