"""Rewrites of the DAG planner's graph before scheduling: algebra that removes work the model asks for but does not need.

- common subexpressions: two nodes of one kind reading the same nodes with the same attributes are one node (a
  mean the model takes and the mean inside its std or var, a value the model writes out twice);
- identities: x * 1, x / 1, x + 0, x - 0, x ** 1 (the lowering already drops clone, contiguous, dropout in eval and
  reshapes to the same shape);
- a product with a diagonal matrix (torch.diag(v) @ x, x @ torch.diag(v), torch.eye(n) * v as an operand) becomes a
  broadcast multiply: the N x N matrix is never built and the GEMM never runs;
- a sum over a dimension its operand is broadcast along becomes a multiply by that dimension's size (a mean, max, min,
  any or all over it simply drops the dimension);
- the negation of a sum or mean read by nothing else becomes the sum or mean of negated terms (one kernel, not two);
- dead nodes are removed, so that the scheduler's counts of readers are those of the graph that runs;
- values that depend only on parameters, buffers and constants, which the kernels would otherwise compute on every call
  (a weight scaled, transposed for a GEMM, two weights multiplied), are folded: each becomes a leaf the binding's fold
  operator computes once per version of the tensors it reads (fold_parameters, after the other rewrites).

Every rewrite keeps the graph's values element for element (up to the order of a sum's terms), and depends on its
structure only, never on its sizes: the graphs at three batch sizes rewrite alike (batch.py merges their sources).
"""

import math

from agent.heuristic.dag.ir import FLOATS, LEAVES, T, contiguous_strides

# Leaves whose values do not change between calls (a buffer the forward updates does: it is left out).
STATIC_LEAVES = {"param", "buffer", "constant", "scalar"}
# Reductions over a broadcast dim that keep the value of one element.
IDEMPOTENT = {"mean", "max", "min", "any", "all"}


def rewrite(graph):
    """GRAPH simplified in place; returns what was rewritten, one line each."""
    done = []
    prune(graph)  # readers counted by the rewrites are live ones
    done += merge_common(graph)
    for node in list(graph.nodes):
        if node.kind == "pointwise":
            kept = _identity_operand(node)
            if kept is not None:
                replace(graph, node, kept)
                done.append(f"{node.name}: {node.attrs['op']} by an identity element")
            negated = _negated_sum(graph, node)
            if negated is not None:
                _insert(graph, node, negated)
                replace(graph, node, negated[-1])
                op = negated[1].attrs["op"]
                done.append(f"{node.name}: a negated {op} as the {op} of negated terms")
        elif node.kind == "gemm":
            product = _diagonal_product(node)
            if product is not None:
                _insert(graph, node, product)
                replace(graph, node, product[-1])
                done.append(f"{node.name}: a product with a diagonal matrix as a broadcast multiply")
        elif node.kind == "reduce":
            simpler = _broadcast_reduction(node)
            if simpler is not None:
                _insert(graph, node, simpler)
                replace(graph, node, simpler[-1])
                done.append(f"{node.name}: a {node.attrs['op']} over a broadcast dimension")
    prune(graph)
    return done


def merge_common(graph):
    """GRAPH (in place) with each operation computed once: a node of the kind, shape, dtype, operands and attributes
    of an earlier one reads that one instead (nodes are in the order they run, so operands are merged first). Leaves
    stay apart (each is its own tensor of the binding). Returns one line per merged node."""
    first, done = {}, []
    for node in list(graph.nodes):
        if node.kind in LEAVES:
            continue
        key = (node.kind, tuple(node.shape), node.dtype, tuple(a.name for a in node.args), _frozen(node.attrs))
        kept = first.setdefault(key, node)
        if kept is not node:
            replace(graph, node, kept)
            done.append(f"{node.name}: the same {node.attrs.get('op', node.kind)} as {kept.name}")
    if done:
        prune(graph)
    return done


def _frozen(value):
    """VALUE (attributes: numbers, strings, nodes, lists, dicts) as a hashable key; nodes by name, numbers by type and
    repr (1 and 1.0, 0.0 and -0.0 and NaN stay apart where they would compute differently)."""
    if isinstance(value, T):
        return ("node", value.name)
    if isinstance(value, dict):
        return ("dict", tuple(sorted((k, _frozen(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return ("seq", tuple(_frozen(v) for v in value))
    return (type(value).__name__, repr(value))


# -- graph edits ---------------------------------------------------------------------------------------------------
def replace(graph, old, new, where=None):
    """Every read of OLD (by the nodes WHERE accepts, and the outputs when WHERE is None) made a read of NEW."""
    for node in graph.nodes:
        if where is not None and not where(node):
            continue
        node.args = [new if a is old else a for a in node.args]
        if node.attrs.get("base") is old:
            node.attrs["base"] = new
    if where is None:
        graph.outputs = [(new if n is old else n, kind, target) for n, kind, target in graph.outputs]


def _insert(graph, before, nodes):
    at = graph.nodes.index(before)
    graph.nodes[at:at] = list(nodes)


def walk(roots):
    """Names of ROOTS and of every node they read (iterative: a network's graph is deeper than Python's recursion)."""
    seen, stack = set(), list(roots)
    while stack:
        node = stack.pop()
        if node.name in seen:
            continue
        seen.add(node.name)
        stack += node.args
    return seen


def prune(graph):
    """GRAPH without the nodes no output reads (the model's inputs, parameters and buffers stay: the binding's leaves)."""
    live = walk([node for node, _, _ in graph.outputs])
    graph.nodes = [n for n in graph.nodes if n.name in live or n.kind in ("input", "param", "buffer")]


def _layout(node):
    """(base, strides, offset) of NODE's elements: a view's map onto its base, or NODE's own row-major layout."""
    if node.kind == "view":
        return node.attrs["base"], list(node.attrs["strides"]), node.attrs["offset"]
    return node, contiguous_strides(node.shape), 0


def _view(name, shape, base, strides, offset):
    return T(name, "view", list(shape), base.dtype, [base], {"base": base, "strides": list(strides), "offset": offset})


# -- identities ----------------------------------------------------------------------------------------------------
def constant_value(node):
    """The number NODE holds at every element, or None."""
    if node.kind == "scalar":
        return node.attrs["value"]
    if node.kind == "view" and node.attrs["base"].kind == "scalar":
        return node.attrs["base"].attrs["value"]
    if node.kind == "pointwise" and node.attrs["op"] == "cast" and node.dtype in FLOATS:
        value = constant_value(node.args[0])
        return None if value is None else float(value)
    return None


def _is(node, number):
    value = constant_value(node)
    return value is not None and not isinstance(value, bool) and value == number


def _identity_operand(node):
    """The operand NODE equals (x for x * 1, x + 0, ...), or None."""
    op, args = node.attrs["op"], node.args
    candidates = []
    if op in ("mul",):
        candidates = [(args[0], args[1]), (args[1], args[0])]
        unit = 1
    elif op == "add":
        candidates, unit = [(args[0], args[1]), (args[1], args[0])], 0
    elif op in ("sub",):
        candidates, unit = [(args[0], args[1])], 0
    elif op in ("div", "pow"):
        candidates, unit = [(args[0], args[1])], 1
    for kept, other in candidates:
        if _is(other, unit) and kept.shape == node.shape and kept.dtype == node.dtype and kept.kind != "scalar":
            return kept
    return None


# -- a product with a diagonal matrix ------------------------------------------------------------------------------
def _index_form(node, shape):
    """(constant, [coefficient per dim of SHAPE]) such that NODE broadcast to SHAPE holds constant + sum(coefficient_d *
    coordinate_d): an arange, a view of one, or an integer cast of either; None for anything else."""
    if node.kind == "pointwise" and node.attrs["op"] == "cast" and node.dtype not in FLOATS + ("bool",):
        return _index_form(node.args[0], shape)
    if node.kind == "iota":
        base, strides, offset = node, [1], 0
    elif node.kind == "view" and node.attrs["base"].kind == "iota":
        base, strides, offset = node.attrs["base"], node.attrs["strides"], node.attrs["offset"]
    else:
        return None
    start, step = base.attrs["start"], base.attrs["step"]
    pad = len(shape) - len(node.shape)
    coefficients = [0] * len(shape)
    for d, (size, stride) in enumerate(zip(node.shape, strides)):
        if size != 1:
            coefficients[pad + d] = step * stride
    return start + step * offset, coefficients


def _diagonal_mask(node, shape):
    """Whether NODE broadcast to SHAPE is true exactly where the last two coordinates are equal (i == j)."""
    if node.kind != "pointwise" or node.attrs["op"] != "eq" or len(shape) < 2 or shape[-1] != shape[-2]:
        return False
    forms = [_index_form(a, shape) for a in node.args]
    if None in forms:
        return False
    (c0, k0), (c1, k1) = forms
    diff = [a - b for a, b in zip(k0, k1)]
    return c0 == c1 and all(d == 0 for d in diff[:-2]) and diff[-2] != 0 and diff[-2] == -diff[-1]


def _diagonal_values(node):
    """V when NODE is a matrix (over its last two dims) zero off its diagonal, V broadcast to it on it, else None:
    where(i == j, V, 0) as torch.diag decomposes, or (i == j) * V as torch.eye(n) * V."""
    if node.kind != "pointwise":
        return None
    op, args = node.attrs["op"], node.args
    if op == "where" and _is(args[2], 0) and _diagonal_mask(args[0], node.shape):
        return args[1]
    if op == "mul":
        for mask, value in ((args[0], args[1]), (args[1], args[0])):
            inner = mask.args[0] if mask.kind == "pointwise" and mask.attrs["op"] == "cast" else mask
            if inner.dtype == "bool" and _diagonal_mask(inner, node.shape):
                return value
    return None


def _diagonal_product(gemm):
    """[nodes] computing GEMM without it where one operand is a diagonal matrix: its diagonal (a view of the values
    broadcast on it) times the other operand, broadcast along its rows or columns; None otherwise."""
    a, b = gemm.args
    for side, matrix, other in (("left", a, b), ("right", b, a)):
        values = _diagonal_values(matrix)
        if values is None or matrix.shape[-1] != matrix.shape[-2] or other.shape[-2:] != gemm.shape[-2:]:
            continue
        if len(matrix.shape) != len(gemm.shape) or len(other.shape) != len(gemm.shape):
            continue
        # VALUES broadcast to the matrix's shape: a stride per dim onto what VALUES reads (0 along a broadcast dim).
        base, own, offset = _layout(values)
        pad = len(matrix.shape) - len(values.shape)
        strides = [0] * pad + [0 if size == 1 else s for size, s in zip(values.shape, own)]
        step = strides[-2] + strides[-1]  # from (i, i) to (i + 1, i + 1)
        n = matrix.shape[-1]
        if side == "left":  # (D @ X)[.., i, k] = d_i * X[.., i, k]
            shape, last = list(matrix.shape[:-2]) + [n, 1], [step, 0]
        else:  # (X @ D)[.., m, j] = X[.., m, j] * d_j
            shape, last = list(matrix.shape[:-2]) + [1, n], [0, step]
        diagonal = _view(f"{gemm.name}_diag", shape, base, strides[:-2] + last, offset)
        args = [diagonal, other] if side == "left" else [other, diagonal]
        product = T(gemm.name + "_dmul", "pointwise", list(gemm.shape), gemm.dtype, args, {"op": "mul"})
        return [diagonal, product]
    return None


# -- a reduction over a broadcast dimension ------------------------------------------------------------------------
def _constant_dims(node):
    """The dims along which NODE's value does not change (each of size 1 among them)."""
    rank = len(node.shape)
    if node.kind == "scalar" or (node.kind == "view" and node.attrs["base"].kind == "scalar"):
        return set(range(rank))
    found = {d for d, size in enumerate(node.shape) if size == 1}
    if node.kind == "view":
        return found | {d for d, stride in enumerate(node.attrs["strides"]) if stride == 0}
    if node.kind == "pointwise":
        common = set(range(rank))
        for arg in node.args:
            pad = rank - len(arg.shape)
            inner = _constant_dims(arg)
            common &= set(range(pad)) | {d + pad for d in inner}
        return common | found
    return found


def _broadcast_reduction(node):
    """[nodes] computing reduction NODE over the dims its operand is not broadcast along (a sum then multiplied by the
    count of the others), or None where it reduces over no broadcast dim of size above 1."""
    op, dims, source = node.attrs["op"], node.attrs["dims"], node.args[0]
    if op not in IDEMPOTENT | {"sum"}:
        return None
    constant = {d for d in dims if source.shape[d] > 1} & _constant_dims(source)
    if not constant:
        return None
    rest = [d for d in dims if d not in constant and source.shape[d] > 1]
    # the operand at coordinate 0 of every broadcast dim: a view in its own row-major layout
    picked_shape = [1 if d in constant else size for d, size in enumerate(source.shape)]
    picked = _view(f"{node.name}_pick", picked_shape, *_layout(source))
    nodes = [picked]
    result = picked
    if rest:
        result = T(f"{node.name}_rest", "reduce", list(node.shape), node.dtype, [picked], {"dims": rest, "op": op})
        nodes.append(result)
    if result.dtype != node.dtype:
        result = T(f"{node.name}_cast", "pointwise", list(node.shape), node.dtype, [result], {"op": "cast"})
        nodes.append(result)
    if op == "sum":
        count = math.prod(source.shape[d] for d in constant)
        number = T(f"{node.name}_count", "scalar", [], node.dtype, [], {"value": count})
        result = T(f"{node.name}_times", "pointwise", list(node.shape), node.dtype, [result, number], {"op": "mul"})
        nodes += [number, result]
    return nodes


def _negated_sum(graph, node):
    """[nodes] computing NODE, the negation of a float sum or mean read by NODE alone (a loss's -mean of log
    probabilities), as the sum or mean of the negated terms, so that the negation runs inside the reduction's kernel
    instead of a kernel of its own; None otherwise. Exact: negating each term negates every partial sum."""
    if node.attrs.get("op") != "neg" or len(node.args) != 1 or node.dtype not in FLOATS:
        return None
    users = graph.users()
    total, view = node.args[0], None
    if total.kind == "view" and users.get(total.name) == 1:  # the reduction reshaped (a mean's [1] read as a scalar)
        base, strides, offset = _layout(total)
        if offset == 0 and strides == contiguous_strides(total.shape) and base.numel == total.numel:
            total, view = base, total
    if total.kind != "reduce" or total.attrs["op"] not in ("sum", "mean") or users.get(total.name) != 1:
        return None
    source = total.args[0]
    if source.dtype not in FLOATS:
        return None
    terms = T(f"{node.name}_terms", "pointwise", list(source.shape), source.dtype, [source], {"op": "neg"})
    nodes = [terms, T(f"{node.name}_of_terms", "reduce", list(total.shape), total.dtype, [terms], dict(total.attrs))]
    if view is not None:
        nodes.append(_view(f"{node.name}_shaped", view.shape, nodes[-1], contiguous_strides(view.shape), 0))
    return nodes


# -- parameter-only values, computed once ---------------------------------------------------------------------------
def static_nodes(graph):
    """Names of the nodes whose value is the same at every call: static leaves, aranges, and what reads only them."""
    mutated = {target for _, kind, target in graph.outputs if kind == "buffer_mutation"}
    static = set()
    for node in graph.nodes:
        if node.kind in STATIC_LEAVES:
            if node.kind != "buffer" or node.attrs.get("ref") not in mutated:
                static.add(node.name)
        elif node.kind == "iota" or (
            node.kind not in ("input", "folded") and node.args and all(a.name in static for a in node.args)
        ):
            static.add(node.name)
    return static


def fold_parameters(graph, schedule, batch_size=None):
    """GRAPH (in place) with each parameter-only value its SCHEDULE would write on every call (a kernel of its own,
    read by the rest of the graph) replaced by a leaf of kind "folded"; graph.folds lists (leaf, the node computing
    it), the nodes that compute them copied apart (named <name>_f) so that the per-call graph shares none of them.
    A value with a dim of BATCH_SIZE (the run-time batch) stays per call: a parameter expanded to the batch (ALiBi's
    bias over every row) has the caller's batch, which the fold operator, called once, does not know; a dim that is
    the batch's size by chance only costs that value its folding. Returns what was folded, one line each."""
    static = static_nodes(graph)
    output = next(node for node, kind, _ in graph.outputs if kind == "user_output")
    stored = {
        k.node.name
        for k in schedule(graph).kernels
        if k.node.name in static and not k.target.startswith("buffer:") and k.node is not output
    }
    if not stored:
        return []
    by_name = {n.name: n for n in graph.nodes}
    readers = {}
    for node in graph.nodes:
        for arg in node.args:
            readers.setdefault(arg.name, []).append(node)
    outputs = {node.name for node, _, _ in graph.outputs}

    def exposed(node):
        """Whether a node computed every call reads NODE, directly or through static views."""
        if node.name in outputs:
            return True
        return any(r.name not in static or (r.kind == "view" and exposed(r)) for r in readers.get(node.name, []))

    # Exposed static values computed from a stored one: folded too, so that no per-call node reads a folded
    # computation's insides. Each reads a parameter or buffer: the fold operator allocates like it, on its device.
    needs, reads_parameter = {}, {}
    for node in graph.nodes:
        reads_parameter[node.name] = node.kind in ("param", "buffer") or any(
            reads_parameter.get(a.name) for a in node.args
        )
        if node.name in static and node.kind not in STATIC_LEAVES:
            needs[node.name] = reads_parameter[node.name] and (
                node.name in stored or any(needs.get(a.name) for a in node.args)
            )
    roots = [
        by_name[name]
        for name in needs
        if needs[name]
        and (by_name[name].kind != "view" or name in stored)
        and name not in outputs
        and exposed(by_name[name])
        and not (batch_size and batch_size in by_name[name].shape)
    ]
    if not roots:
        return []
    # The folding computation: copies of every static non-leaf node the roots read.
    closure = walk(roots)
    copies = {}
    for node in graph.nodes:
        if node.name in closure and node.name in static and node.kind not in STATIC_LEAVES:
            copy = T(
                f"{node.name}_f", node.kind, list(node.shape), node.dtype, [copies.get(a.name, a) for a in node.args]
            )
            copy.attrs = {k: copies.get(v.name, v) if isinstance(v, T) else v for k, v in node.attrs.items()}
            copies[node.name] = copy
    folds, done, leaves = [], [], {}
    for i, root in enumerate(roots):
        leaf = T(f"{root.name}_fold", "folded", list(root.shape), root.dtype, [], {"ref": i})
        leaves[root.name] = leaf
        folds.append((leaf, copies[root.name]))
        done.append(f"{root.name}: computed once from the parameters ({root.kind} {root.shape})")
    # Per-call nodes read the leaves; static views of a root read by them become views of its leaf.
    rebased = {}
    for node in list(graph.nodes):
        if node.name in static:
            continue
        for i, arg in enumerate(node.args):
            if arg.name in leaves:
                node.args[i] = leaves[arg.name]
            elif arg.kind == "view" and arg.name in static and arg.attrs["base"].name in leaves:
                if arg.name not in rebased:
                    base = leaves[arg.attrs["base"].name]
                    rebased[arg.name] = T(f"{arg.name}_v", "view", list(arg.shape), arg.dtype, [base], dict(arg.attrs))
                    rebased[arg.name].attrs["base"] = base
                node.args[i] = rebased[arg.name]
    # Topological order: the leaves and the views of them first, each copy right after its original.
    ordered = [*leaves.values(), *rebased.values()]
    for node in graph.nodes:
        ordered.append(node)
        if node.name in copies:
            ordered.append(copies[node.name])
    graph.nodes = ordered
    graph.folds = folds
    graph.outputs = [o for o in graph.outputs if o[1] != "fold"] + [(copy, "fold", leaf.name) for leaf, copy in folds]
    prune(graph)
    return done
