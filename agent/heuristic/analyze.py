"""`python -m agent.heuristic.analyze problem.py`: the problem's graph as JSON, traced on meta tensors.

Run through the agent's bash tool, so the problem's code executes jailed like everything else; meta tensors
mean no memory is spent on KernelBench's large inputs. The JSON is printed on one `ANALYSIS` line when it fits
one observation; a whole network's graph does not, so it is always written to analysis.json too, cut into
lines of CHUNK characters that the policy reads back a few lines per read_file call.
"""

import contextlib
import copy
import io
import json
import logging
import sys
import time
from pathlib import Path

import torch
import torch.fx
from torch.fx.passes.shape_prop import ShapeProp

from agent.heuristic.batch import Specialized, affine_leaves, sample_sizes, scaled_inputs
from agent.heuristic.capture import capture, cia_ops_listed_once
from agent.heuristic.dag import rnn
from sandbox.problem import batch_candidates, import_file

# Seconds the analyses at other batch sizes may take: the policy's analysis command runs under the bash tool's
# 120 s, and the problem's own analysis comes first.
BATCH_BUDGET_S = 60
# Module attributes worth knowing for code generation (missing ones are skipped).
MODULE_ATTRS = (
    "in_features",
    "out_features",
    "negative_slope",
    "dim",
    "eps",
    "normalized_shape",
    "min_val",
    "max_val",
    "alpha",
    "beta",
    "threshold",
    "approximate",
    "p",
    "inplace",
    "lambd",
    "upper",
    "lower",
    "in_channels",
    "out_channels",
    "kernel_size",
    "stride",
    "padding",
    "dilation",
    "groups",
    "output_padding",
    "padding_mode",
    "transposed",
    "num_groups",
    "num_channels",
    "num_features",
    "affine",
    "track_running_stats",
    "momentum",
    "ceil_mode",
    "return_indices",
    "count_include_pad",
    "divisor_override",
    "value",
)


def _arg(value):
    if isinstance(value, torch.fx.Node):
        return {"node": value.name}
    if isinstance(value, (list, tuple)):
        return [_arg(v) for v in value]
    if isinstance(value, dict):
        return {k: _arg(v) for k, v in value.items()}
    if isinstance(value, (int, float, bool, str)) or value is None:
        return value
    if isinstance(value, torch.dtype):
        return str(value)
    return {"repr": repr(value)[:80]}


def _meta(node):
    tm = node.meta.get("tensor_meta")
    if tm is None or not hasattr(tm, "shape"):
        return None, None
    return list(tm.shape), str(tm.dtype).replace("torch.", "")


def analyze(path):
    """The problem's graph twice: torch.fx's module-level graph (the stage planner's) and the ATen graph torch.export
    captures (the DAG planner's, under "aten"); ok when either was captured, else the constructs that stopped both."""
    module = import_file(path, "ks_problem")
    with torch.device("meta"):
        inputs = module.get_inputs()
        try:
            model = module.Model(*module.get_init_inputs())
        except RuntimeError as exc:
            if "meta" not in str(exc):
                raise
            model = None  # its constructor reads a value (Tensor.item()): built for real, then moved to meta
    if model is None:
        model = module.Model(*module.get_init_inputs()).to("meta")

    start = time.monotonic()
    with cia_ops_listed_once():  # three captures at three batch sizes
        result = _analysis(module, model, inputs)
        if result["ok"]:
            result["batch"] = _batch(module, model, inputs, result, time.monotonic() - start)
    return result


def _analysis(module, model, inputs, group=(), size=None):
    """The fx and ATen analyses of MODEL at INPUTS (dim 0 of the inputs at positions GROUP set to SIZE)."""
    if group:
        inputs = scaled_inputs(inputs, group, size)

    def build_fake(mode):
        with mode:
            fake_inputs = module.get_inputs()
            if group:
                fake_inputs = scaled_inputs(fake_inputs, group, size)
            return module.Model(*module.get_init_inputs()), fake_inputs

    aten = capture(model, inputs, build_fake)
    try:
        # A copy: tracing adds the constants it meets to the module (_tensor_constant0, 1, ...), and each batch
        # size's trace must name them alike.
        with rnn.capturing():  # nn.LSTM's shapes without running its steps on meta tensors
            result = _fx_analysis(copy.deepcopy(model), inputs)
    except Exception as exc:  # noqa: BLE001 -- reported to the policy as the reason it cannot plan
        reason = f"torch.fx cannot trace Model.forward: {type(exc).__name__}: {exc}"
        if not aten["ok"]:
            return {"ok": False, "reason": f"{aten['reason']}; {reason}"}
        result = {"ok": True, "nodes": [], "fx_reason": reason, "params": {}, "inputs": [], "init_inputs": []}
    result["aten"] = aten
    result["init_inputs"] = [_arg(v) for v in module.get_init_inputs()]
    return result


@contextlib.contextmanager
def _quiet():
    """torch's own reports of a failed capture (logged, and printed) kept out of the analysis' output: a batch size
    the model refuses is an expected outcome here, not an error."""
    logging.disable(logging.ERROR)
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        logging.disable(logging.NOTSET)


def _batch(module, model, inputs, base, seconds):
    """How the analysis changes with the batch (batch.py): the inputs that scale with it (the sandbox's groups, most
    inclusive first), the problem's batch size and the affine fit of every number that changes; or the reason the
    kernels keep the problem's batch size. SECONDS: what the problem's own analysis took."""
    groups = list(dict.fromkeys(tuple(c["inputs"]) for c in batch_candidates(inputs)))
    if not groups:
        return {"reason": "no tensor input has a dimension to scale"}
    if 2 * seconds > BATCH_BUDGET_S:
        return {"reason": f"the graph took {seconds:.0f} s to capture: no time to capture it at two more batch sizes"}
    size = int(inputs[groups[0][0]].shape[0])
    sizes = [size, *sample_sizes(size)]
    start = time.monotonic()
    reasons = []
    for group in groups:
        try:
            others = []
            for other in sizes[1:]:
                if time.monotonic() - start > BATCH_BUDGET_S:
                    raise Specialized(f"the analyses at other batch sizes took over {BATCH_BUDGET_S} s")
                with _quiet():
                    analysis = _analysis(module, model, inputs, group, other)
                if not analysis["ok"]:
                    raise Specialized(f"at batch size {other}: {analysis['reason']}")
                others.append(analysis)
            affine = affine_leaves(base, others, sizes)
        except Specialized as exc:
            reasons.append(f"inputs {list(group)}: {exc}")
            continue
        except Exception as exc:  # noqa: BLE001 -- a model that refuses another batch size keeps the problem's
            reasons.append(f"inputs {list(group)}: {type(exc).__name__}: {str(exc)[:200]}")
            continue
        return {"inputs": list(group), "size": size, "affine": affine}
    return {"reason": "; ".join(reasons)}


def _fx_analysis(model, inputs):
    graph_module = torch.fx.symbolic_trace(model)
    ShapeProp(graph_module).propagate(*inputs)
    nodes = []
    for node in graph_module.graph.nodes:
        shape, dtype = _meta(node)
        entry = {
            "name": node.name,
            "op": node.op,
            "args": _arg(node.args),
            "kwargs": _arg(dict(node.kwargs)),
            "shape": shape,
            "dtype": dtype,
        }
        if node.op in ("call_function", "call_method"):
            target = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", str(node.target))
            entry["target"] = target
        elif node.op == "call_module":
            sub = graph_module.get_submodule(node.target)
            entry["target"] = type(sub).__name__
            entry["module"] = node.target
            entry["attrs"] = {a: _arg(getattr(sub, a)) for a in MODULE_ATTRS if hasattr(sub, a)}
            entry["params"] = {n: list(p.shape) for n, p in sub.named_parameters(recurse=False)}
        elif node.op == "get_attr":
            entry["target"] = node.target
            value = graph_module
            for part in node.target.split("."):
                value = getattr(value, part, None)
            # A tensor constant made in forward (torch.tensor(0.5)): its value, when it is one number.
            if (
                isinstance(value, torch.Tensor)
                and not isinstance(value, torch.nn.Parameter)
                and value.numel() == 1
                and not value.is_meta
                and node.target not in dict(model.named_buffers())
            ):
                entry["value"] = float(value.item())
        nodes.append(entry)
    params = {name: list(p.shape) for name, p in model.named_parameters()}
    params.update({name: list(b.shape) for name, b in model.named_buffers()})
    return {
        "ok": True,
        "nodes": nodes,
        "params": params,
        "inputs": [
            {"shape": list(x.shape), "dtype": str(x.dtype).replace("torch.", "")}
            if isinstance(x, torch.Tensor)
            else {"value": x}
            for x in inputs
        ],
    }


CHUNK = 4000  # characters per line of the file: two lines fit one read_file observation
INLINE = 8000  # the longest JSON printed on the ANALYSIS line itself


def write(analysis, out="analysis.json"):
    """ANALYSIS's JSON written to OUT in lines of CHUNK characters (joined without separators, it is the JSON);
    the lines to print: where it is and, when short enough, the JSON itself."""
    text = json.dumps(analysis)
    lines = [text[i : i + CHUNK] for i in range(0, len(text), CHUNK)]
    Path(out).write_text("".join(line + "\n" for line in lines))
    printed = [f"ANALYSIS-FILE {out} {len(lines)} lines of {CHUNK} characters, {len(text)} in all"]
    if len(text) <= INLINE:
        printed.append("ANALYSIS " + text)
    return printed


def main(argv=None):
    import argparse

    parser = argparse.ArgumentParser(prog="python -m agent.heuristic.analyze", description=__doc__.split("\n\n")[0])
    parser.add_argument("problem", help="a KernelBench problem file (Model, get_inputs, get_init_inputs)")
    args = parser.parse_args(argv)
    if not Path(args.problem).is_file():
        parser.error(f"{args.problem} does not exist")
    print("\n".join(write(analyze(args.problem))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
