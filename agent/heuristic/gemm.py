"""The GEMM family's C++ kernel and headers under their former names, for the DAG planner (families/gemm.py)."""

from agent.heuristic.families.gemm import HEADERS  # noqa: F401 -- imported by agent/heuristic/dag/codegen.py
from agent.heuristic.families.gemm import cpp as cpp_gemm  # noqa: F401
