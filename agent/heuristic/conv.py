"""The convolution family's C++ kernel and headers under their former names, for the DAG planner (families/conv.py)."""

from agent.heuristic.families.conv import HEADERS  # noqa: F401 -- imported by agent/heuristic/dag/codegen.py
from agent.heuristic.families.conv import cpp as cpp_conv  # noqa: F401
