"""The attention family: scaled_dot_product_attention (and the hand-written softmax(q k^T * s + mask) v, matched in
match.py) as one tiled online-softmax kernel: ks_attention.h (C++) and ks_attention.cuh (CUDA), beside this module."""

import functools
import math
from pathlib import Path

from agent.heuristic.dag.ir import contiguous_strides

HEADERS = {"cpu": "ks_attention.h", "cuda": "ks_attention.cuh"}
# Batch dims of a mask's map the kernels take (KS_MASK_DIMS in both headers): more are merged where one stride steps
# over neighbours, and a mask that still alternates broadcast and stored dims more often is stored whole instead.
MASK_DIMS = 4


@functools.cache
def template_text(name):
    return (Path(__file__).parent / name).read_text()


def _batch_map(sizes, strides):
    """[[size, stride]] of the mask's batch dims SIZES with STRIDES: as they are when the kernels take that many (the
    same structure at every batch size, so batch.py can make the sizes run-time ones), else merged where one stride
    steps over neighbours, size-1 dims dropped."""
    if len(sizes) <= MASK_DIMS:
        return [[size, stride] for size, stride in zip(sizes, strides)]
    dims = []
    for size, stride in zip(sizes, strides):
        if size == 1:
            continue
        if dims and dims[-1][1] == stride * size:
            dims[-1] = [dims[-1][0] * size, stride]
        else:
            dims.append([size, stride])
    return dims


def layout(scheduler, node):
    """The kernel's operands: q, k and v contiguous, and the mask (the lowering's and match.py's: a node of the scores'
    full shape [*batch, lq, lk]) read through its own map where it is stored, 0 strides along the dims it is broadcast
    over, so a key-padding or [lq, lk] mask is never expanded to the scores' shape."""
    inputs = [scheduler.contiguous_operand(a) for a in node.args[:3]]
    if len(node.args) == 3:
        return {"inputs": inputs}
    mask = node.args[3]
    base, strides, offset = mask, contiguous_strides(mask.shape), 0
    if mask.kind == "view" and mask.attrs["base"].kind != "scalar":
        base, strides, offset = mask.attrs["base"], mask.attrs["strides"], mask.attrs["offset"]
    batch = _batch_map(mask.shape[:-2], strides[:-2])
    # a constant has no pointer to pass, a base far larger than the mask (a slice of a big computed one) would be
    # computed whole, and the kernels take only MASK_DIMS batch dims: each stores the mask itself
    if base.kind == "constant" or not scheduler.in_memory(base) and base.numel > mask.numel or len(batch) > MASK_DIMS:
        base, strides, offset = scheduler.contiguous_operand(mask), contiguous_strides(mask.shape), 0
        batch = _batch_map(mask.shape[:-2], strides[:-2])
    else:
        scheduler.store(base)
    strides = [0 if size == 1 else s for size, s in zip(mask.shape[-2:], strides[-2:])]
    return {"inputs": inputs + [base], "mask": {"offset": offset, "batch": batch, "row": strides[0], "col": strides[1]}}


def source(kernel, buffers, device, params):
    """(function name, buffers read, C source, headers) of the kernel writing attention node KERNEL.node."""
    node = kernel.node
    q_node, _, v_node = node.args[:3]
    lq, e = q_node.shape[-2:]
    lk, ev = v_node.shape[-2:]
    batch = math.prod(q_node.shape[:-2])
    inputs = kernel.layout["inputs"]
    reads = [buffers[x.name] for x in inputs]
    q, k, v = reads[:3]
    kind, mask, mask_type, mask_map = 0, "(const float*)nullptr", "float", "KsMask{0, {}, {}, 0, 0}"
    if len(inputs) > 3:
        m = kernel.layout["mask"]
        kind = 2 if inputs[3].dtype == "bool" else 1
        mask = f"{reads[3]} + {m['offset']}LL" if m["offset"] else reads[3]
        mask_type = inputs[3].ctype
        sizes = ", ".join(f"{size}LL" for size, _ in m["batch"])
        strides = ", ".join(f"{stride}LL" for _, stride in m["batch"])
        mask_map = f"KsMask{{{len(m['batch'])}, {{{sizes}}}, {{{strides}}}, {m['row']}LL, {m['col']}LL}}"
    masked_row = "0.f" if node.attrs["masked_rows"] == "zero" else "NAN"
    scale, causal = f"{node.attrs['scale']!r}f", str(node.attrs["causal"]).lower()
    name = f"k_{node.name}"
    signature = "".join(f"const {x.ctype}* {r}, " for x, r in zip(inputs, reads)) + "float* out"
    if device == "cpu":
        body = (
            f"    const KsAttention a{{{batch}, {lq}, {lk}, {e}, {ev}, {scale}, {causal}, {kind}, {masked_row}, "
            f"{mask_map}}};\n"
            f"    ks_attention(a, {q}, {k}, {v}, {mask}, out, {batch}LL * {lq * lk * e}LL >= {1 << 16}LL);\n"
        )
        text = f'#include "{HEADERS[device]}"\nvoid {name}({signature}) {{\n{body}}}\n'
    else:
        tile = 32 if e + ev <= 256 else 16
        body = (
            f"    ks_attention<{e}, {ev}, {tile}, {mask_type}>({q}, {k}, {v}, {mask}, out, {batch}, {lq}, {lk}, "
            f"{scale}, {causal}, {kind}, {masked_row}, {mask_map}, stream);\n"
        )
        text = f'#include "{HEADERS[device]}"\nvoid {name}({signature}, cudaStream_t stream) {{\n{body}}}\n'
    return name, reads, text, [HEADERS[device]]
