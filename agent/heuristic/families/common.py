"""What every chain family's CUDA kernels start with (the prelude: includes, BLOCK, the device's grid limit) and the
block reduction of the families that reduce within a block (templates/common.cuh)."""

from agent.heuristic.families.template import render


def cuda_prelude(block):
    """The start of a CUDA kernel file whose blocks have BLOCK threads (unless the build defines BLOCK)."""
    return render("common.cuh", "prelude", block=block)


BLOCK_REDUCE = render("common.cuh", "block_reduce")


def pointers(names):
    """The kernel parameters of the read-only operands NAMES, each followed by a comma and a space."""
    return "".join(f"const float* __restrict__ {n}, " for n in names)


# The first line of every file the chain planner writes.
HEADER = "// Written by Kernel Studio's heuristic policy: {describe}.\n"
