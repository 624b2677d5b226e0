"""Which nodes get a buffer, and the kernels that write them, in order: the DAG planner's fusion decisions.

A node is computed where it is read (fused into its readers' kernel) unless it must be stored: the output, a
library call (GEMM, convolution, attention), a reduction, scan or pool (read many times), an operand a library
call reads from memory in a layout it cannot take as strides, or a value read by several kernels that would cost
more to recompute than to store. Dead and identity nodes never appear (only what the outputs reach is scheduled).

A reduction whose value only one loop kernel reads, at that kernel's own element (through elementwise ops and
reshapes of the reduction's size: its epilogue, such as relu(x.mean(-1) + b)), gives its buffer up: that kernel
computes the reduction once per element and applies the epilogue to the finished value (Kernel.layout "reductions").
Several reductions share such a kernel only where they reduce the same rows.
"""

from dataclasses import asdict, dataclass, field

from agent.heuristic.dag import attention, rnn
from agent.heuristic.dag.ir import LEAVES, MATERIALIZED, T, contiguous_strides

RECOMPUTE = 3  # a value read by several kernels is stored once its inline cost reaches this many operators
# Node kinds whose kernels are their family's own (the others: a loop over the node's elements)
FAMILIES = ("scan", "gemm", "conv", "attention", "rnn", "maxsum", "scatter", "sort")


@dataclass
class Kernel:
    kind: str  # loop, or one of FAMILIES
    node: T
    target: str = ""  # the buffer written: the node's own, or a model buffer it updates (batch norm's statistics)
    layout: dict = field(default_factory=dict)  # gemm: operand pointers, transposes, strides
    once: bool = False  # computes a folded value: run by the fold operator, once per version of the parameters


@dataclass
class DagPlan:
    graph: object
    kernels: list
    buffers: dict  # node name -> its buffer's C name (leaves, constants and materialized nodes)
    output: T
    output_shape: list = field(default_factory=list)  # the model's output: the output node's buffer, reshaped
    describe: str = ""
    kind: str = "graph"
    tails: list = field(default_factory=list)  # the chain planner's field: a DAG plan is one stage
    scalars: dict = field(default_factory=dict)

    def to_json(self):
        return {
            "kind": self.kind,
            "describe": self.describe,
            "scalars": self.scalars,
            "kernels": [
                {
                    "kind": k.kind,
                    "node": k.node.name,
                    "shape": k.node.shape,
                    "dtype": k.node.dtype,
                    "target": k.target,
                    "layout": k.layout,
                    "once": k.once,
                }
                for k in self.kernels
            ],
            "nodes": [
                asdict(n) | {"args": [a.name for a in n.args], "attrs": _plain(n.attrs)} for n in self.graph.nodes
            ],
        }


def _plain(attrs):
    return {k: (v.name if isinstance(v, T) else v) for k, v in attrs.items()}


def _reachable(graph):
    seen, stack = set(), [node for node, _, _ in graph.outputs]
    while stack:
        node = stack.pop()
        if node.name in seen:
            continue
        seen.add(node.name)
        stack += node.args
    return seen


def _fold_closure(graph):
    """Names of the nodes the fold operator computes: those the folded values read, up to the leaves."""
    seen, stack = set(), [copy for _, copy in graph.folds]
    while stack:
        node = stack.pop()
        if node.name not in seen and node.kind not in LEAVES:
            seen.add(node.name)
            stack += node.args
    return seen


def _strided(node):
    """(base, strides, offset) of a node read from memory: a view's map, or the node's own contiguous layout."""
    if node.kind == "view" and node.attrs["base"].kind != "scalar":
        return node.attrs["base"], node.attrs["strides"], node.attrs["offset"]
    return node, contiguous_strides(node.shape), 0


def _same_element(node):
    """Whether NODE reads each of its arguments of its own size at its own flat index: an elementwise op, or a
    reshape (a view in row-major order from the start of its base)."""
    if node.kind == "pointwise":
        return True
    if node.kind != "view" or node.attrs["offset"] != 0 or node.attrs["base"].numel != node.numel:
        return False
    steps = contiguous_strides(node.shape)
    return all(size == 1 or s == c for size, s, c in zip(node.shape, node.attrs["strides"], steps))


def _rows(reduction):
    return reduction.args[0].shape, reduction.attrs["dims"]


class Scheduler:
    def __init__(self, graph):
        self.graph = graph
        self.live = _reachable(graph)
        self.users = graph.users()
        self.stored = set()  # names of materialized nodes
        self.cost = {}
        self.kernels = []
        self.layouts = {}
        self.readers = {}  # node name -> the nodes that read it, each once
        for node in graph.nodes:
            for arg in dict.fromkeys(a.name for a in node.args):
                self.readers.setdefault(arg, []).append(node)
        self.position = {node.name: at for at, node in enumerate(graph.nodes)}
        self.outputs = {node.name for node, _, _ in graph.outputs}

    def store(self, node):
        if node.kind in LEAVES or node.name in self.stored:
            return
        self.stored.add(node.name)

    def merges(self, node):
        """Whether every way NODE is read meets again in one elementwise node, through elementwise ops of NODE's size
        (x * sigmoid(x), a lerp's a + (b - a) * w): computed where it is read, NODE is then computed once for each
        element of that node (a kernel's expressions are shared), as a node of one reader is, and a buffer would
        only add a pass over memory."""
        pending = {r.name for r in self.readers.get(node.name, [])}
        if node.name in self.outputs or not pending:
            return False
        for later in self.graph.nodes[self.position[node.name] + 1 :]:
            if later.name not in pending:
                continue
            pending.discard(later.name)
            if not pending:
                return later.kind == "pointwise"
            if later.name in self.outputs or later.numel != node.numel or not _same_element(later):
                return False
            pending |= {r.name for r in self.readers.get(later.name, [])}
        return False

    def in_memory(self, node):
        return node.kind in ("input", "param", "buffer", "constant", "folded") or node.name in self.stored

    def contiguous_operand(self, node, prefix=False):
        """NODE as a contiguous buffer: itself, the base of a reshape of a stored node, or stored now. PREFIX: the
        reader takes NODE's elements from the start of a longer buffer too (a GEMM's A of an RNN's states)."""
        base, strides, offset = _strided(node)
        if (
            self.in_memory(base)
            and base.kind != "constant"
            and offset == 0
            and strides == contiguous_strides(node.shape)
            and (base.numel == node.numel or prefix and base.numel > node.numel)
        ):
            return base
        self.store(node)
        return node

    def gemm_layout(self, node):
        a, b = node.args
        batch = node.shape[0] if len(node.shape) == 3 else 1
        m, n = node.shape[-2:]
        k = a.shape[-1]
        a_buf = self.contiguous_operand(a, prefix=True)
        base, strides, offset = _strided(b)
        transposed, w_stride = None, None
        if (
            not self.in_memory(base)
            and base.kind not in LEAVES
            and base.kind != "view"
            and offset == 0
            and base.numel == b.numel
            and strides[-2:] == [1, k]
        ):
            # a transpose of a computed value (normalize(b).t()): the value is stored in its own layout, written as it
            # is computed, and read transposed, rather than the transpose written through strided reads
            self.store(base)
        if self.in_memory(base) and base.kind != "constant" and offset == 0:
            last = strides[-2:]
            batch_stride = strides[0] if len(strides) == 3 else 0
            if last == [n, 1]:
                transposed = False
            elif last == [1, k]:
                transposed = True
            if batch_stride in (0, k * n) and (batch_stride == 0 or len(strides) == 3):
                w_stride = batch_stride if batch > 1 else 0
        if transposed is None or w_stride is None:
            base, transposed, w_stride = self.contiguous_operand(b), False, k * n if batch > 1 else 0
        return {
            "a": a_buf,
            "b": base,
            "batch": batch,
            "m": m,
            "n": n,
            "k": k,
            "transposed_b": transposed,
            "w_stride": w_stride,
        }

    def run(self):
        for node in self.graph.nodes:
            if node.name not in self.live:
                continue
            if node.kind in MATERIALIZED:
                self.store(node)
            if node.kind == "gemm":
                self.layouts[node.name] = self.gemm_layout(node)
            elif node.kind == "conv":
                x, w = node.args
                self.layouts[node.name] = {"x": self.contiguous_operand(x), "w": self.contiguous_operand(w)}
            elif node.kind == "rnn":
                self.layouts[node.name] = rnn.layout(self, node)
            elif node.kind == "attention":
                self.layouts[node.name] = attention.layout(self, node)
            self.cost[node.name] = 0 if node.kind in LEAVES or node.kind == "view" else 1
            self.cost[node.name] += sum(self.cost[a.name] for a in node.args if not self.in_memory(a))
            if (
                self.users.get(node.name, 0) > 1
                and self.cost[node.name] >= RECOMPUTE
                and node.kind != "view"
                and not self.merges(node)
            ):
                self.store(node)
        user_output = next(node for node, kind, _ in self.graph.outputs if kind == "user_output")
        self.output_shape = list(user_output.shape)
        base, strides, offset = _strided(user_output)
        if (
            user_output.kind == "view"
            and base.kind not in LEAVES
            and offset == 0
            and base.numel == user_output.numel
            and strides == contiguous_strides(user_output.shape)
            and self.users.get(base.name, 0) == 1
        ):
            user_output = base  # a reshape of the result: written in the output's shape, read by nothing else
        if user_output.kind in LEAVES or user_output.kind == "view":
            copy = T(
                f"{user_output.name}_out",
                "pointwise",
                user_output.shape,
                user_output.dtype,
                [user_output],
                {"op": "cast"},
            )
            user_output = copy
        self.store(user_output)
        for _, copy in self.graph.folds:
            self.store(copy)
        once = _fold_closure(self.graph)
        roots = [n for n in self.graph.nodes if n.name in self.stored]
        roots += [user_output] if user_output not in self.graph.nodes else []
        self.fuse_epilogues(roots, once, user_output)
        for node in roots:
            if node.name in self.stored:
                kind = node.kind if node.kind in FAMILIES else "loop"
                layout = self.layouts.get(node.name, {})
                self.kernels.append(Kernel(kind, node, node.name, layout, once=node.name in once))
        for node, kind, target in self.graph.outputs:
            if kind == "buffer_mutation":
                copy = T(
                    f"{node.name}_to_{target.replace('.', '_')}",
                    "pointwise",
                    node.shape,
                    node.dtype,
                    [node],
                    {"op": "cast"},
                )
                self.kernels.append(Kernel("loop", copy, f"buffer:{target}"))
        return user_output

    def computes(self, root, target):
        """Whether ROOT's kernel reads TARGET: ROOT itself or a node it computes inline reads it."""
        seen, stack = set(), list(root.args)
        while stack:
            node = stack.pop()
            if node is target:
                return True
            if node.name in seen or self.in_memory(node):
                continue
            seen.add(node.name)
            stack += node.args
        return False

    def epilogue_of(self, root, reduction):
        """Whether ROOT computes REDUCTION at its own element only: every way it reads REDUCTION goes through nodes of
        the reduction's size that read their arguments at their own element."""
        if root.numel != reduction.numel or not _same_element(root):
            return False
        for arg in root.args:
            if arg is reduction or self.in_memory(arg) or not self.computes(arg, reduction):
                continue
            if not self.epilogue_of(arg, reduction):
                return False
        return True

    def fuse_epilogues(self, roots, once, user_output):
        """Drops the buffer of each reduction that one loop kernel alone reads, at its own element (the module's
        docstring); that kernel's layout names the reductions it computes. Several reductions share a kernel only
        where they reduce the same rows (a row's mean and max): rows of other shapes may want other CUDA layouts (a
        block per output for a contiguous row, a thread for a strided one), and the kernel has one."""
        mutated = {node.name for node, kind, _ in self.graph.outputs if kind == "buffer_mutation"}
        pinned = mutated | once | {node.name for node, _, _ in self.graph.outputs} | {user_output.name}
        by_name = {node.name: node for node in self.graph.nodes}
        for reduction in self.graph.nodes:
            if reduction.kind != "reduce" or reduction.name not in self.stored or reduction.name in pinned:
                continue
            readers = [r for r in roots if r is not reduction and r.name in self.stored and self.computes(r, reduction)]
            readers += [
                m
                for m, kind, _ in self.graph.outputs
                if kind == "buffer_mutation" and not self.in_memory(m) and self.computes(m, reduction)
            ]
            if len(readers) != 1 or readers[0].kind in FAMILIES or readers[0].name in once | mutated:
                continue
            reader = readers[0]
            others = self.layouts.get(reader.name, {}).get("reductions", [])
            if not self.epilogue_of(reader, reduction) or others and _rows(by_name[others[0]]) != _rows(reduction):
                continue
            self.stored.discard(reduction.name)
            self.layouts.setdefault(reader.name, {}).setdefault("reductions", []).append(reduction.name)


def schedule(graph):
    scheduler = Scheduler(graph)
    output = scheduler.run()
    buffers = {}
    for node in graph.nodes:
        if node.kind in ("input", "param", "buffer", "folded"):
            buffers[node.name] = f"a_{node.name}"
        elif node.kind == "constant":
            buffers[node.name] = f"c_{node.name}"
    for kernel in scheduler.kernels:
        if not kernel.target.startswith("buffer:"):
            buffers[kernel.node.name] = f"b_{kernel.node.name}"
    families = {}
    per_call = [kernel for kernel in scheduler.kernels if not kernel.once]
    for kernel in per_call:
        families[kernel.kind] = families.get(kernel.kind, 0) + 1
    parts = ", ".join(f"{n} {kind}" for kind, n in families.items())
    describe = f"a DAG of {len(per_call)} kernel(s): {parts}"
    if graph.folds:
        describe += f", and {len(graph.folds)} parameter-only value(s) computed once"
    return DagPlan(
        graph,
        scheduler.kernels,
        buffers,
        output,
        scheduler.output_shape,
        describe=describe,
        scalars=dict(graph.scalars),
    )
