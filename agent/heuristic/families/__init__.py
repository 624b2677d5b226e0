"""The chain planner's kernel families, one module each: its CUDA kernels (`cuda(plan, block)`), its C++ kernels
(`cpp(plan)`) and the C++ headers they include (HEADERS), written from template files in templates/."""

from agent.heuristic.families import conv, elementwise, gemm, pool, rowwise

# A plan's kind -> its family (a batch norm is a row-wise plan: rowwise.py hands it to batch_norm.py).
FAMILIES = {"elementwise": elementwise, "rowwise": rowwise, "gemm": gemm, "conv": conv, "pool": pool}
