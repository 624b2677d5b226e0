"""Plan -> native workspace files (binding.cpp with the stable ABI, kernels/, model_new.py) for CUDA or C++: each
stage's kernels written by its family (families/), chained in one file, with the binding and model_new.py."""

from agent.heuristic.emit import BINDING_CHECKS, CPP_PRELUDE, template
from agent.heuristic.families import FAMILIES
from agent.heuristic.families.binding import batch_argument, binding, model_new
from agent.heuristic.families.binding import tensor_args as _tensor_args  # noqa: F401 -- the tests' name
from agent.heuristic.families.common import BLOCK_REDUCE, HEADER, cuda_prelude
from agent.heuristic.families.conv import CUDNN_PRELOAD  # noqa: F401 -- the DAG planner's import
from agent.heuristic.families.conv import cuda as cuda_conv  # noqa: F401 -- the DAG planner's import
from agent.heuristic.families.rowwise import cpp as cpp_rowwise  # noqa: F401 -- the tests' name
from agent.heuristic.families.template import as_format

# The DAG planner's kernels start with these too, formatted by it (str.format with `block`).
CUDA_PRELUDE = as_format("common.cuh", "prelude")
WARP_REDUCE = BLOCK_REDUCE


def _chained(sources, prelude):
    """One kernel file of a product's source and its tails', all written after PRELUDE: the prelude once, then their
    includes, then each in a namespace of its own (ks_head, ks_tail0, ks_tail1, ...)."""
    includes, blocks = [], []
    for i, source in enumerate(sources):
        space = "ks_head" if i == 0 else f"ks_tail{i - 1}"
        assert source.startswith(prelude), "a kernel source that does not start with its prelude"
        lines = source[len(prelude) :].splitlines()
        includes += [line for line in lines if line.startswith("#include") and line not in includes]
        body = "\n".join(line for line in lines if not line.startswith("#include"))
        blocks.append(f"namespace {space} {{\n{body}\n}}  // namespace {space}\n")
    return prelude + "".join(line + "\n" for line in includes) + "\n".join(blocks)


def _library_prelude(sources, prelude, chained, device, block):
    """(the kernel file of SOURCES, {its library header: text}): the prelude (and on CUDA the block reduction) that
    each source starts with included from the kernel library (ks_common.cuh, ks_math.h) rather than written out."""
    from agent.heuristic.dag.codegen import prelude_headers

    if device == "cuda":
        sources = [s.replace(BLOCK_REDUCE, "", 1) for s in sources]
    source = _chained(sources, prelude) if chained else sources[0]
    header = "ks_common.cuh" if device == "cuda" else "ks_math.h"
    include = (f"#define BLOCK {block}\n" if device == "cuda" else "") + f'#include "{header}"\n'
    return include + source[len(prelude) :], {f"kernels/{header}": prelude_headers()[header]}


def workspace_files(plan, device, problem_source, block=256):
    """The workspace's files of PLAN (a chain's or a DAG's) for DEVICE: kernels that read the batch size at run time
    where the plans at three batch sizes allow it (batch.py), else the problem's shapes, with the reason in the
    binding's errors. The headers they include are among them, those of the kernel library too."""
    files = _batch_general_files(plan, device, problem_source, block)
    if BINDING_CHECKS in files["binding.cpp"]:
        files["kernels/ks_checks.h"] = template("ks_checks.h")
    return files


def _batch_general_files(plan, device, problem_source, block):
    from agent.heuristic.batch import Specialized, merge, merge_python, runtime_kernels

    batch = getattr(plan, "batch_plans", None) or {"reason": "planned without the batch sizes' analysis"}
    reason = batch.get("reason")
    plan.specialized = None  # why the files keep the problem's batch size (None: they read it at run time)
    if reason is None:
        try:
            versions, decisions = [], None
            for sample in batch["plans"]:  # the problem's first: its choices of kernel shape hold at every size
                versions.append(_files(sample, device, problem_source, block, batch["inputs"], None, decisions))
                decisions = decisions or getattr(getattr(sample, "writer", None), "decisions", None)
            if any(v.keys() != versions[0].keys() for v in versions):
                raise Specialized("the kernels at another batch size are other files")
            files = {}
            for path, text in versions[0].items():
                texts = [v[path] for v in versions]
                if path.endswith(".py"):
                    files[path] = merge_python(texts)
                    continue
                files[path] = merge(texts, batch["sizes"])
                if path.startswith("kernels/fused."):
                    files[path] = runtime_kernels(files[path], batch["size"], device == "cuda")
            return files
        except Specialized as exc:
            reason = str(exc)
        except Exception as exc:  # noqa: BLE001 -- the problem's own files stand: its batch size is kept, and why
            reason = f"writing the kernels at another batch size failed: {type(exc).__name__}: {exc}"
    plan.specialized = reason
    return _files(plan, device, problem_source, block, (), reason)


def _files(plan, device, problem_source, block, inputs, reason, decisions=None):
    """The files of PLAN at its own shapes; the binding reads the batch size from the first of the model's INPUTS
    it takes (none: it keeps the problem's shapes, for REASON). DECISIONS: a DAG plan's choices at another size."""
    if plan.kind == "graph":
        from agent.heuristic.dag.codegen import workspace_files as dag_files

        return dag_files(plan, device, problem_source, block, inputs, reason, decisions)
    batch = batch_argument(plan, inputs) if inputs else None
    if inputs and batch is None:
        from agent.heuristic.batch import Specialized

        raise Specialized("no input that scales with the batch reaches the kernels")
    stages = [plan] + plan.tails
    if device == "cuda":
        sources = [FAMILIES[stage.kind].cuda(stage, block) for stage in stages]
        prelude, name = cuda_prelude(block), "kernels/fused.cu"
    else:
        sources = [FAMILIES[stage.kind].cpp(stage) for stage in stages]
        prelude, name = CPP_PRELUDE, "kernels/fused.cpp"
    source, library = _library_prelude(sources, prelude, plan.tails, device, block)
    files = {
        name: HEADER.format(describe=plan.describe) + source,
        "binding.cpp": binding(plan, device, batch, reason),
        "model_new.py": model_new(plan, problem_source, device),
    }
    files.update(library)
    if device == "cpu":  # the library kernels' headers, included by name (kernels/ is on the include path)
        for header in {h for stage in stages for h in FAMILIES[stage.kind].HEADERS}:
            files[f"kernels/{header}"] = template(header)
    return files
