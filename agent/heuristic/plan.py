"""From an analyzed graph to a fusion plan: one elementwise kernel, one row-wise kernel, a GEMM or a convolution
with a fused epilogue (and, after it, one row-wise kernel over its result). Anything else is named as the operator
that stops the plan (no fallback is ever written).

This module walks the chain of stages; each stage's planning rule is its family's (families/: elementwise, rowwise,
gemm, conv, pool), over the records and the fusion builder of families/fuse.py."""

from agent.heuristic.errors import Unsupported
from agent.heuristic.families import conv, elementwise, gemm, pool, rowwise
from agent.heuristic.families.fuse import Operand, Plan  # noqa: F401 -- the DAG planner imports them from here
from agent.heuristic.families.fuse import compute_nodes, output_node
from agent.heuristic.families.ops import BINARY, UNARY  # noqa: F401 -- the DAG planner imports them from here
from agent.heuristic.families.ops import CASTS, POOLS, RESHAPES, canonical, starts_stage


def make_plan(analysis):
    """The Plan for an analysis, or Unsupported naming the operator that stops it: the stage planner's chain of fused
    kernels where the graph is one, else the DAG planner's kernels over the ATen graph torch.export captured.

    Its `batch_plans` are the plans of the same analysis at three batch sizes (batch.py), from which the code
    generators write kernels that read the batch size at run time; or the reason they keep the problem's."""
    plan = _plan(analysis)
    plan.batch_plans = _batch_plans(analysis, plan)
    return plan


def _batch_plans(analysis, plan):
    """{"inputs", "size", "sizes", "plans"}: the plans at batch sizes SIZES (the problem's first where it is above
    1: its plan is the fast path), or {"reason"} when the batch size cannot be a run-time size."""
    from agent.heuristic.batch import at_batch, sample_sizes

    batch = analysis.get("batch") or {"reason": "the analysis did not vary the batch size"}
    if "reason" in batch:
        return {"reason": batch["reason"]}
    size = batch["size"]
    sizes = [size, *sample_sizes(size)] if size > 1 else [2, 3, 4]  # a batch of 1 would specialize its dims of 1
    plans = []
    for other in sizes:
        try:
            plans.append(plan if other == size else _plan(at_batch(analysis, other)))
        except Unsupported as exc:
            return {"reason": f"at batch size {other}: {exc}"}
        except Exception as exc:  # noqa: BLE001 -- the problem's own plan stands: its batch size is kept, and why
            return {"reason": f"at batch size {other}: {type(exc).__name__}: {exc}"}
    kinds = {p.kind for p in plans}
    if len(kinds) != 1:
        return {"reason": f"the plan at another batch size is of another kind ({', '.join(sorted(kinds))})"}
    return {"inputs": batch["inputs"], "size": size, "sizes": sizes, "plans": plans}


def _plan(analysis):
    if not analysis.get("ok"):
        raise Unsupported(analysis.get("reason", "the problem could not be analyzed"))
    chain_error = None
    if analysis.get("nodes"):
        try:
            return _chain_plan(analysis)
        except Unsupported as exc:
            chain_error = exc
    captured = analysis.get("aten") or {}
    if captured.get("ok"):
        from agent.heuristic.dag import plan_graph

        batch = analysis.get("batch") or {}
        return plan_graph(captured, batch.get("size") if batch.get("affine") else None)
    reason = captured.get("reason", "the problem could not be captured")
    raise Unsupported(f"{chain_error}; and no ATen graph for the DAG planner: {reason}" if chain_error else reason)


def _chain_plan(analysis):
    for n in analysis["nodes"]:
        if n["op"] != "output" and n.get("dtype") not in (None, "float32"):
            raise Unsupported(f"{n['name']} is {n['dtype']}; the heuristic writes float32 kernels")
    analysis = _without_identities(analysis)
    nodes = compute_nodes(analysis)
    ops = [canonical(n) for n in nodes]
    transposes = gemm.input_transposes(analysis, nodes)
    stages = [i for i, node in enumerate(nodes) if starts_stage(node)]
    if transposes and len(ops) > len(transposes) and ops[len(transposes)] == "matmul":
        nodes = nodes[len(transposes) :]
        plan, stop = gemm.plan_stage(analysis, nodes, transposes)
    elif ops and ops[0] in ("linear", "matmul"):
        plan, stop = gemm.plan_stage(analysis, nodes)
    elif ops and ops[0] == "conv":
        plan, stop = conv.plan_stage(analysis, nodes)
    elif stages:
        plan, stop = _stage_plan(analysis, nodes, stages[0])
    else:
        return elementwise.plan_stage(analysis, nodes)
    while stop is not None:
        # the next stage reads the result of the one before it, written to an intermediate tensor
        source = nodes[stop]["args"][0]["node"]
        while canonical(nodes[stop]) in RESHAPES:
            source, stop = nodes[stop]["name"], stop + 1
            if stop == len(nodes):
                if source != output_node(analysis):
                    raise Unsupported("a reshape of the last stage's result that is not the model's output")
                plan.final_shape = list(nodes[stop - 1]["shape"])  # the output is the result, reshaped: free
                return plan
            if nodes[stop]["args"][:1] != [{"node": source}]:
                raise Unsupported(f"operator {nodes[stop].get('target')} after a reshape does not read it")
        rest, prefix = nodes[stop:], f"u{len(plan.tails)}_"
        try:
            tail, after = _next_stage(_stage_analysis(analysis, source), rest, prefix)
        except Unsupported as exc:
            raise Unsupported(f"after {plan.describe.split(' (')[0]}: {exc}") from None
        plan.tails.append(tail)
        plan.describe += f", then {tail.describe}"
        stop = None if after is None else stop + after
    return plan


def _next_stage(analysis, nodes, prefix):
    """The plan of a stage after the first, NODES[0] its operator: a product, a row-wise operator or a pool."""
    op = canonical(nodes[0])
    if op in ("linear", "matmul"):
        return gemm.plan_stage(analysis, nodes, prefix=prefix)
    if op == "conv":
        return conv.plan_stage(analysis, nodes, prefix=prefix)
    if not starts_stage(nodes[0]):
        raise Unsupported(f"operator {nodes[0].get('target')} ({nodes[0]['name']}) right after a reshape")
    return _stage_plan(analysis, nodes, 0, prefix)


def _is_identity(node):
    """nn.Identity, and dropout that drops nothing (p = 0, or training=False)."""
    op, attrs, kw, args = canonical(node), node.get("attrs") or {}, node.get("kwargs") or {}, node["args"]
    if op == "identity" or op in CASTS:
        return True
    if op == "dropout":
        p = attrs.get("p", kw.get("p", args[1] if len(args) > 1 else 0.5))
        return p == 0 or kw.get("training") is False
    return False


def _without_identities(analysis):
    """ANALYSIS with identity operators taken out, their users reading their input instead."""
    alias = {}

    def resolve(value):
        if isinstance(value, dict) and "node" in value:
            return {"node": alias.get(value["node"], value["node"])}
        if isinstance(value, list):
            return [resolve(v) for v in value]
        if isinstance(value, dict):
            return {k: resolve(v) for k, v in value.items()}
        return value

    nodes = []
    for node in analysis["nodes"]:
        node = {**node, "args": resolve(node["args"]), "kwargs": resolve(node.get("kwargs") or {})}
        if (
            node["op"] in ("call_function", "call_method", "call_module")
            and _is_identity(node)
            and node["args"]
            and isinstance(node["args"][0], dict)
            and "node" in node["args"][0]
        ):
            alias[node["name"]] = node["args"][0]["node"]
            continue
        nodes.append(node)
    return {**analysis, "nodes": _live(nodes)}


def _live(nodes):
    """NODES without the operators whose values nothing reads (dead code in forward gets no kernel)."""
    by_name = {n["name"]: n for n in nodes}
    live, stack = set(), [n["name"] for n in nodes if n["op"] in ("output", "placeholder")]

    def refs(value):
        if isinstance(value, dict) and "node" in value:
            yield value["node"]
        elif isinstance(value, (list, tuple)):
            for v in value:
                yield from refs(v)
        elif isinstance(value, dict):
            for v in value.values():
                yield from refs(v)

    while stack:
        name = stack.pop()
        if name in live or name not in by_name:
            continue
        live.add(name)
        stack += list(refs(by_name[name]["args"])) + list(refs(by_name[name].get("kwargs") or {}))
    return [n for n in nodes if n["name"] in live]


def _stage_plan(analysis, nodes, at, prefix="t"):
    return (pool.plan_stage if canonical(nodes[at]) in POOLS else rowwise.plan_stage)(analysis, nodes, at, prefix)


def _stage_analysis(analysis, source):
    """ANALYSIS as a later stage sees it: SOURCE (the previous stage's result) is its only input; the model's own
    inputs and the values computed before it are out of its reach (reading them is Unsupported, by name)."""
    renamed = []
    for node in analysis["nodes"]:
        if node["name"] == source:
            renamed.append({**node, "op": "placeholder"})
        elif node["op"] == "placeholder":
            renamed.append({**node, "op": "input_of_an_earlier_stage"})
        else:
            renamed.append(node)
    return {**analysis, "nodes": renamed, "inputs": [{}]}
