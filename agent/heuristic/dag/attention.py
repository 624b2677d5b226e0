"""The attention family: scaled_dot_product_attention (and the hand-written softmax(q k^T * s + mask) v, matched in
match.py) as one tiled online-softmax kernel: ks_attention.h (C++) and ks_attention.cuh (CUDA), beside this module."""

import functools
import math
from pathlib import Path

HEADERS = {"cpu": "ks_attention.h", "cuda": "ks_attention.cuh"}


@functools.cache
def template_text(name):
    return (Path(__file__).parent / name).read_text()


def geometry(node, inputs):
    """(batch, lq, lk, e, ev, mask kind, mask batch stride) of an attention node over its stored inputs."""
    q, v = inputs[0], inputs[2]
    lq, e = q.shape[-2:]
    lk, ev = v.shape[-2:]
    batch = math.prod(q.shape[:-2])
    kind, stride = 0, 0
    if len(inputs) > 3:
        mask = inputs[3]
        kind = 2 if mask.dtype == "bool" else 1
        stride = 0 if mask.numel == lq * lk else lq * lk
    return batch, lq, lk, e, ev, kind, stride


def source(kernel, buffers, device, params):
    """(function name, buffers read, C source, headers) of the kernel writing attention node KERNEL.node."""
    node = kernel.node
    inputs = kernel.layout["inputs"]
    reads = [buffers[x.name] for x in inputs]
    batch, lq, lk, e, ev, kind, stride = geometry(node, inputs)
    mask_type = inputs[3].ctype if kind else "float"
    mask = reads[3] if kind else "(const float*)nullptr"
    q, k, v = reads[:3]
    name = f"k_{node.name}"
    signature = "".join(f"const {x.ctype}* {r}, " for x, r in zip(inputs, reads)) + "float* out"
    if device == "cpu":
        body = (
            f"    const KsAttention a{{{batch}, {lq}, {lk}, {e}, {ev}, {node.attrs['scale']!r}f, "
            f"{str(node.attrs['causal']).lower()}, {kind}, {stride}}};\n"
            f"    ks_attention(a, {q}, {k}, {v}, {mask}, out, {batch}LL * {lq * lk * e}LL >= {1 << 16}LL);\n"
        )
        text = f'#include "{HEADERS[device]}"\nvoid {name}({signature}) {{\n{body}}}\n'
    else:
        tile = 32 if e + ev <= 256 else 16
        body = (
            f"    ks_attention<{e}, {ev}, {tile}, {mask_type}>({q}, {k}, {v}, {mask}, out, {batch}, {lq}, {lk}, "
            f"{node.attrs['scale']!r}f, {str(node.attrs['causal']).lower()}, {kind}, {stride}, stream);\n"
        )
        text = f'#include "{HEADERS[device]}"\nvoid {name}({signature}, cudaStream_t stream) {{\n{body}}}\n'
    return name, reads, text, [HEADERS[device]]
