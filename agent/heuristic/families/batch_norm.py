"""The batch norm family: a row-wise plan whose rows are the channels of [N, C, *spatial], read with a stride; the
batch's statistics in training mode (updating the module's running ones), the running ones in eval mode
(templates/batch_norm.cu, .cpp)."""

from agent.heuristic.emit import CPP_PRELUDE, PARALLEL_ELEMENTS, op_function
from agent.heuristic.families.common import BLOCK_REDUCE, cuda_prelude
from agent.heuristic.families.template import render, snippet


def _index(plan, row, r):
    """The flat index of element R of channel ROW in [N, C, *spatial]."""
    c, sp = plan.channels, plan.spatial
    return f"(({r}) / {sp}LL * {c}LL + ({row})) * {sp}LL + ({r}) % {sp}LL" if sp > 1 else f"({r}) * {c}LL + ({row})"


def _parts(plan, file):
    """The fields the kernel of FILE (batch_norm.cu or .cpp) shares with the other's: the channel `c`'s statistics
    (batch, or running in eval mode, where the module tracks them), the affine transform, the pointers."""
    x, n, at = plan.main.name, plan.reduce, _index(plan, "c", "r")
    affine = [o.name for o in plan.affine]
    scale = f"t = t * {affine[0]}[c]" + (f" + {affine[1]}[c]" if len(affine) > 1 else "") + ";" if affine else ""
    update, running = "", ""
    if plan.running:
        rm, rv = (o.name for o in plan.running)
        # torch updates the running variance with the unbiased estimate; the stored buffers are the module's own.
        update = snippet(
            "batch_norm.cpp",
            "update_running",
            rm=rm,
            rv=rv,
            c="c",
            decay=repr(1 - plan.momentum),
            momentum=repr(plan.momentum),
            n=n,
            n_minus_one=max(n - 1, 1),
        )
        running = snippet("batch_norm.cpp", "running_statistics", rm=rm, rv=rv, c="c", eps=repr(plan.eps))
    batch = snippet(file, "batch_statistics", x=x, n=n, at=at, eps=repr(plan.eps), update=update)
    if plan.running:
        choose = snippet("batch_norm.cpp", "choose_statistics", batch=batch, running=running)
    else:
        choose = snippet("batch_norm.cpp", "batch_statistics_only", batch=batch)
    pointers = "".join(f", const float* __restrict__ {o.name}" for o in plan.affine + plan.running)
    return {"x": x, "n": n, "at": at, "scale": scale, "choose": choose, "pointers": pointers}


def _functions(plan, qualifier):
    src = op_function("pre_op", ["LOAD_" + plan.main.name], plan.prologue, "pre", qualifier)
    return src + op_function("epi_op", ["ROW"], plan.body, qualifier=qualifier)


def cpp(plan):
    return (
        CPP_PRELUDE
        + _functions(plan, "static inline ")
        + render("batch_norm.cpp", "run", **_parts(plan, "batch_norm.cpp"), parallel=PARALLEL_ELEMENTS)
    )


def cuda(plan, block):
    parts = _parts(plan, "batch_norm.cu")
    return (
        cuda_prelude(block)
        + BLOCK_REDUCE
        + _functions(plan, "__device__ __forceinline__ ")
        + render(
            "batch_norm.cu",
            "kernel",
            **parts,
            launch_pointers=parts["pointers"].replace(" __restrict__", ""),
            args="".join(f", {o.name}" for o in plan.affine + plan.running),
        )
    )
