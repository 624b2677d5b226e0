"""The DAG planner's graph: tensors as nodes (leaves, elementwise ops, views, reductions, library calls) with shapes.

Every node's value is defined element by element (its flat index in its own row-major shape), so a kernel can
compute any node in place of reading it: views are index maps, elementwise ops read their operands broadcast.
"""

import math
from dataclasses import dataclass, field

C_TYPES = {
    "float32": "float",
    "float64": "double",
    "int64": "int64_t",
    "int32": "int32_t",
    "int16": "int16_t",
    "int8": "int8_t",
    "uint8": "uint8_t",
    "bool": "bool",
}
FLOATS = ("float32", "float64")
# Nodes that need a buffer of their own: library calls, windows, scans and reductions read their source many times
# ("maxsum": a row's max and sum of exp(x - max) side by side, online.py); a scatter or a sort writes its elements in
# an order of its own (scatter.py, sort.py).
MATERIALIZED = {"gemm", "conv", "attention", "scan", "reduce", "pool", "rnn", "topk", "maxsum", "scatter", "sort"}
# "folded": a parameter-only value the binding's fold operator computes once (rewrite.fold_parameters).
LEAVES = {"input", "param", "buffer", "constant", "scalar", "folded"}


@dataclass(eq=False)
class T:
    name: str
    kind: str  # a leaf (input, param, buffer, constant, scalar) or an operation (pointwise, view, cat, pad, ...)
    shape: list
    dtype: str
    args: list = field(default_factory=list)  # the nodes it reads
    attrs: dict = field(default_factory=dict)

    @property
    def numel(self):
        return math.prod(self.shape)

    @property
    def ctype(self):
        return C_TYPES[self.dtype]

    def __repr__(self):
        return f"T({self.name}: {self.kind} {self.shape} {self.dtype})"


def promote(*dtypes):
    """torch's type promotion over the dtypes of tensors (numbers are weak: they never widen a tensor's type)."""
    order = ["bool", "uint8", "int8", "int16", "int32", "int64", "float32", "float64"]
    return max(dtypes, key=order.index)


def contiguous_strides(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return list(reversed(strides))


@dataclass
class Graph:
    nodes: list  # in topological order
    outputs: list  # (node, kind, target): kind user_output or buffer_mutation (target the buffer's name)
    scalars: dict = field(default_factory=dict)  # input position -> the number the graph was specialized to
    folds: list = field(default_factory=list)  # (folded leaf, the node computing it once): rewrite.fold_parameters
    rewrites: list = field(default_factory=list)  # what rewrite.py changed, one line each

    def users(self):
        count = {}
        for node in self.nodes:
            for arg in node.args:
                count[arg.name] = count.get(arg.name, 0) + 1
        for node, _, _ in self.outputs:
            count[node.name] = count.get(node.name, 0) + 1
        return count
