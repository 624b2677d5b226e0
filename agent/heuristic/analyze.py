"""`python -m agent.heuristic.analyze problem.py`: the problem's graph as JSON, traced on meta tensors.

Run through the agent's bash tool, so the problem's code executes jailed like everything else; meta tensors
mean no memory is spent on KernelBench's large inputs.
"""
import json
import sys

import torch
import torch.fx
from torch.fx.passes.shape_prop import ShapeProp

from sandbox.problem import import_file

# Module attributes worth knowing for code generation (missing ones are skipped).
MODULE_ATTRS = ("in_features", "out_features", "negative_slope", "dim", "eps", "normalized_shape", "min_val",
                "max_val", "alpha", "beta", "threshold", "approximate", "p", "inplace", "lambd", "upper", "lower",
                "in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups",
                "output_padding", "padding_mode", "transposed", "num_groups", "num_channels", "num_features",
                "affine", "track_running_stats", "momentum", "ceil_mode", "return_indices", "count_include_pad",
                "divisor_override")


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
    module = import_file(path, "ks_problem")
    with torch.device("meta"):
        model = module.Model(*module.get_init_inputs())
        inputs = module.get_inputs()
    try:
        graph_module = torch.fx.symbolic_trace(model)
    except Exception as exc:  # noqa: BLE001 -- reported to the policy as the reason it cannot plan
        return {"ok": False, "reason": f"torch.fx cannot trace Model.forward: {type(exc).__name__}: {exc}"}
    ShapeProp(graph_module).propagate(*inputs)
    nodes = []
    for node in graph_module.graph.nodes:
        shape, dtype = _meta(node)
        entry = {"name": node.name, "op": node.op, "args": _arg(node.args), "kwargs": _arg(dict(node.kwargs)),
                 "shape": shape, "dtype": dtype}
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
            if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter) \
                    and value.numel() == 1 and not value.is_meta and node.target not in dict(model.named_buffers()):
                entry["value"] = float(value.item())
        nodes.append(entry)
    params = {name: list(p.shape) for name, p in model.named_parameters()}
    params.update({name: list(b.shape) for name, b in model.named_buffers()})
    return {"ok": True, "nodes": nodes, "params": params,
            "inputs": [{"shape": list(x.shape), "dtype": str(x.dtype).replace("torch.", "")} if isinstance(x, torch.Tensor)
                       else {"value": x} for x in inputs],
            "init_inputs": [_arg(v) for v in module.get_init_inputs()]}


if __name__ == "__main__":
    print("ANALYSIS " + json.dumps(analyze(sys.argv[1])))
