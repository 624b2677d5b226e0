"""The agent: a ReAct loop (loop.py) that optimizes a KernelBench problem by acting through tools (tools.py) in a
sandbox workspace (workspace.py), driven by a policy (policies/), recorded as a trajectory (trajectory.py)."""
