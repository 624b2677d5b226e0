"""The chain planner's kernel families, one module each: its planning rule (`plan_stage`, over the records and the
fusion builder of fuse.py and the operator vocabulary of ops.py), its CUDA kernels (`cuda(plan, block)`), its C++
kernels (`cpp(plan)`) and the C++ headers they include (HEADERS), the kernels written from template files in
templates/. plan.py chains the stages; codegen.py writes a plan's workspace through FAMILIES."""

from agent.heuristic.families import conv, elementwise, gemm, pool, rowwise

# A plan's kind -> its family (a batch norm is a row-wise plan: rowwise.py hands it to batch_norm.py).
FAMILIES = {"elementwise": elementwise, "rowwise": rowwise, "gemm": gemm, "conv": conv, "pool": pool}
