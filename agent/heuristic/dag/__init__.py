"""The DAG planner: any captured ATen graph partitioned into fused kernels (loops, scans, GEMMs, convolutions,
attention), for problems whose graph is not the chain the stage planner (plan.py) expects."""

from agent.heuristic.dag.lower import lower
from agent.heuristic.dag.match import fuse_attention
from agent.heuristic.dag.online import fuse_online_softmax
from agent.heuristic.dag.rewrite import fold_parameters, rewrite
from agent.heuristic.dag.schedule import DagPlan, schedule


def plan_graph(captured, batch_size=None):
    """The DagPlan of capture.py's JSON, or Unsupported naming the operator or construct that stops it. BATCH_SIZE: the
    problem's batch where its kernels take the batch at run time (a value of that size is never computed once)."""
    graph = lower(captured)
    graph.rewrites = rewrite(graph)
    fuse_attention(graph)
    graph.rewrites += fuse_online_softmax(graph)  # after attention, which matches the two-pass softmax
    graph.rewrites += fold_parameters(graph, schedule, batch_size)
    plan = schedule(graph)
    from agent.heuristic.dag.codegen import Writer

    Writer(plan, "cpu").write()  # an element without a C form is Unsupported now, by name, not at codegen
    return plan


__all__ = ["DagPlan", "plan_graph"]
