"""Each operator's fake implementation, derived from what it did when the solution ran (jailed) and checked there
with torch.library.opcheck before the package is written."""

from sandbox.package import shapes
from sandbox.package.probe import PROBE_NAMESPACE, Probe
from sandbox.package.render import op_source


def infer_fakes(plan, problem_path, solution_path):
    """Fill PLAN's fakes, batch variants and notes from a probe of the solution (skipped, with the reason in every
    fake and in the notes, where this machine cannot run its kernels)."""
    import torch

    if plan.device == "cuda" and not torch.cuda.is_available():
        why = (
            "the kernels are CUDA and this machine has no CUDA device to run them on, so nothing was recorded "
            "(build the package on a GPU worker)"
        )
        plan.fakes = {
            op.full_name: shapes.infer(op, [], plan.device) if not op.returns else shapes.unknown(op, why)
            for op in plan.ops
        }
    else:
        with Probe(problem_path, solution_path, plan) as probe:
            records = probe.record()
            plan.fakes = {op.full_name: shapes.infer(op, records.of(op.full_name), plan.device) for op in plan.ops}
            sources = {
                op.full_name: op_source(
                    op, PROBE_NAMESPACE if op.function else records.namespace, plan.fakes[op.full_name]
                )
                for op in plan.ops
                if op.returns and plan.fakes[op.full_name].assumption is not None
            }
            failures = probe.check(sources) if sources else {}
        for op in plan.ops:
            if op.full_name in failures:
                plan.fakes[op.full_name] = shapes.unknown(
                    op, f"the fake inferred from its calls failed torch.library.opcheck: {failures[op.full_name]}"
                )
        plan.variants, plan.notes = records.variants, list(records.notes)
    for op in plan.ops:
        fake = plan.fakes[op.full_name]
        if fake.assumption is None:
            plan.notes.append(
                f"the fake implementation of {op.full_name} could not be inferred ({fake.why}): it "
                f"raises; write it in src/{plan.module}/ops.py before using torch.compile"
            )
    return plan
