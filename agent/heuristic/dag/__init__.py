"""The DAG planner: any captured ATen graph partitioned into fused kernels (loops, scans, GEMMs, convolutions,
attention), for problems whose graph is not the chain the stage planner (plan.py) expects."""

from agent.heuristic.dag.lower import lower
from agent.heuristic.dag.match import fuse_attention
from agent.heuristic.dag.rewrite import fold_parameters, rewrite
from agent.heuristic.dag.schedule import DagPlan, schedule


def plan_graph(captured):
    """The DagPlan of capture.py's JSON, or Unsupported naming the operator or construct that stops it."""
    graph = lower(captured)
    graph.rewrites = rewrite(graph)
    fuse_attention(graph)
    graph.rewrites += fold_parameters(graph, schedule)
    plan = schedule(graph)
    from agent.heuristic.dag.codegen import Writer

    Writer(plan, "cpu").write()  # an element without a C form is Unsupported now, by name, not at codegen
    return plan


__all__ = ["DagPlan", "plan_graph"]
