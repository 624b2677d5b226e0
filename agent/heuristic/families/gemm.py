"""The GEMM family, planning rule and kernels: a matrix product (a linear layer, matmul, a batch of them) by cuBLAS
or OpenBLAS, with the operators after it fused into one epilogue (templates/gemm.cu, .cpp; the C++ kernel's
ks_gemm.h)."""

import dataclasses
import math

from agent.heuristic.emit import CPP_PRELUDE, PARALLEL_FLOPS, op_function, row_epilogue
from agent.heuristic.errors import Unsupported
from agent.heuristic.families.common import cuda_prelude, pointers
from agent.heuristic.families.fuse import Builder, Operand, Plan, finish, fuse_after, result_node
from agent.heuristic.families.ops import canonical
from agent.heuristic.families.template import render, snippet

# The headers beside agent/heuristic/emit.py that the C++ kernel includes, copied into the workspace's kernels/.
HEADERS = ("ks_blas.h", "ks_gemm.h")
# Row operations that add thousands of the GEMM's outputs up (see cuda).
SUMMING = ("sum", "mean", "logsumexp")
TRIVIAL = ["const float result = acc;"]  # an epilogue that leaves the product as it is


def input_transposes(analysis, nodes):
    """{node name: input or parameter node} for the leading `B.T` of 2-D model inputs and parameters: a GEMM reads
    them transposed in place."""
    by_name = {n["name"]: n for n in analysis["nodes"]}
    out = {}
    for node in nodes:
        args = node["args"]
        if (
            node.get("target") != "getattr"
            or len(args) != 2
            or args[1] not in ("T", "mT")
            or not isinstance(args[0], dict)
        ):
            break
        source = by_name[args[0]["node"]]
        if source["op"] not in ("placeholder", "get_attr") or len(source["shape"] or []) != 2:
            break
        out[node["name"]] = source
    return out


def plan_stage(analysis, nodes, transposes=None, prefix="t"):
    """(plan, index of the next stage's operator or None) of the matrix product NODES[0] (a linear layer, or matmul
    by a parameter or an input, the `B.T` of TRANSPOSES read in place) and the operators fused after it."""
    transposes = transposes or {}
    b = Builder(analysis, prefix)
    w_name = "w" if prefix == "t" else f"{prefix}w"  # a later stage's weight is an argument beside the first's
    first = nodes[0]
    op = canonical(first)
    x_arg = first["args"][0]
    x_node = b.nodes[x_arg["node"]]
    if x_node["op"] != "placeholder":
        raise Unsupported("the matrix product must read a model input")
    x = b.operand("input", b.inputs.index(x_node), x_node["shape"])
    if op == "linear":
        if first["op"] == "call_module":
            wname = f"{first['module']}.weight"
            bias = f"{first['module']}.bias" if "bias" in (first.get("params") or {}) else None
        else:
            w_arg = first["args"][1]
            wname = b.nodes[w_arg["node"]]["target"]
            bias_arg = first["args"][2] if len(first["args"]) > 2 else first.get("kwargs", {}).get("bias")
            bias = b.nodes[bias_arg["node"]]["target"] if isinstance(bias_arg, dict) else None
        wshape = analysis["params"][wname]
        weight = Operand(w_name, "param", wname, wshape)
        n, k = wshape
        transposed = True
    else:
        name = first["args"][1]["node"]
        other = transposes.get(name) or b.nodes[name]
        if other["op"] == "get_attr" and other["target"] in analysis["params"]:  # x @ W or x @ W.T of a parameter
            weight = Operand(w_name, "param", other["target"], analysis["params"][other["target"]])
        elif other["op"] != "placeholder":
            raise Unsupported("matmul with a right operand that is neither an input nor a parameter")
        else:
            weight = Operand(w_name, "input", b.inputs.index(other), other["shape"])
        if len(weight.shape) < 2:
            raise Unsupported(f"matmul with a right operand of shape {weight.shape}")
        if name in transposes:  # B.T of a stored [N, K]: the same layout as a linear layer's weight
            n, k = other["shape"]
            transposed = True
        else:
            k, n = other["shape"][-2:]
            transposed = False
        bias = None
    if len(x_node["shape"]) < 2 or x_node["shape"][-1] != k:
        raise Unsupported(f"matrix shapes {x_node['shape']} and {weight.shape} do not multiply as planned")
    batch = math.prod(x_node["shape"][:-2]) if op == "matmul" and len(x_node["shape"]) > 2 else 1
    if batch > 1 and len(weight.shape) == 2:
        batch = 1  # [..., M, K] @ [K, N]: one GEMM over all the leading rows
    elif batch > 1 and len(weight.shape) != len(x_node["shape"]):
        raise Unsupported("broadcast batched matmul")
    m = math.prod(x_node["shape"][:-1]) // batch
    b.values[first["name"]] = (
        "acc" if bias is None else "(acc + LOAD_" + b.operand("param", bias, analysis["params"][bias]).name + ")"
    )
    b.operands.pop(("input", x.ref), None)
    stop = fuse_after(b, nodes, 1, "the matrix product")
    out, fused = result_node(analysis, nodes, stop), (len(nodes) if stop is None else stop) - 1
    plan = Plan(
        "gemm",
        b.nodes[out]["shape"],
        main=x,
        weight=weight,
        transposed_b=transposed,
        m=m,
        n=n,
        k=k,
        batch=batch,
        describe=f"GEMM ({m}x{k} by {k}x{n}) with {fused} operator(s) fused after it",
    )
    finish(b, plan, out)
    for o in plan.operands:
        if math.prod(o.shape) not in (1, n) or (o.shape and o.shape[-1] != n and math.prod(o.shape) != 1):
            raise Unsupported(f"an epilogue tensor of shape {o.shape} that is not per-column")
    return plan, stop


def cuda(plan, block):
    names = [o.name for o in plan.operands]
    m, n, k = plan.m, plan.n, plan.k
    # TF32 keeps a GEMM's own outputs within 1e-2 of PyTorch's FP32, but a later sum over thousands of them adds
    # their errors up: with a summing stage after it (sum, mean, logsumexp), the GEMM computes in full FP32.
    compute = (
        "CUBLAS_COMPUTE_32F"
        if any(t.kind == "rowwise" and t.row_op in SUMMING for t in plan.tails)
        else "CUBLAS_COMPUTE_32F_FAST_TF32"
    )
    shape = {"m": m, "n": n, "k": k, "compute": compute}
    if plan.transposed_b:
        gemm = snippet("gemm.cu", "gemm_transposed_b", **shape)
    elif plan.batch > 1:
        strides = {"w_stride": k * n, "x_stride": m * k, "out_stride": m * n}
        gemm = snippet("gemm.cu", "gemm_batched", **shape, **strides, batch=plan.batch)
    else:
        gemm = snippet("gemm.cu", "gemm", **shape)
    epilogue = ""
    if plan.body != TRIVIAL:
        total = plan.batch * m * n
        epilogue = render("gemm.cu", "launch_epilogue", total=total, args="".join(f"{name}, " for name in names))
    loads = "".join(f", {o.name}[{'0' if math.prod(o.shape) == 1 else 'i % N'}]" for o in plan.operands)
    return (
        cuda_prelude(block)
        + render("gemm.cu", "includes")
        + op_function(
            "epi_op", ["acc"] + [f"LOAD_{name}" for name in names], plan.body, qualifier="__device__ __forceinline__ "
        )
        + render("gemm.cu", "launch", pointers=pointers(names), n=n, loads=loads, gemm=gemm, epilogue=epilogue)
    )


def cpp(plan):
    names = [o.name for o in plan.operands]
    m, n, k, batch = plan.m, plan.n, plan.k, plan.batch
    # Epilogue operands are per column or scalars (the planner's rule), whatever their rank: seen as [n] or [1].
    operands = [dataclasses.replace(o, shape=[math.prod(o.shape)]) for o in plan.operands]
    what = f"{f'{batch} x ' if batch > 1 else ''}{m}x{k} by {k}x{n}{', w stored [n, k]' if plan.transposed_b else ''}"
    return (
        CPP_PRELUDE
        + render("gemm.cpp", "include")
        + op_function("epi_op", ["acc"] + [f"LOAD_{name}" for name in names], plan.body, qualifier="static inline ")
        + render(
            "gemm.cpp",
            "run",
            pointers=pointers(names),
            what=what,
            batch=batch,
            m=m,
            n=n,
            k=k,
            transposed_b=str(plan.transposed_b).lower(),
            w_stride=k * n if batch > 1 else 0,
            parallel=f"{batch}LL * {m}LL * {n}LL * {k}LL >= {PARALLEL_FLOPS}LL",  # C: m may be the run-time batch's
            epilogue=row_epilogue(operands, [batch * m, n], n, plan.body),
        )
    )
