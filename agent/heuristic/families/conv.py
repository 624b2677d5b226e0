"""The convolution family, planning rule and kernels: Conv and ConvTranspose of 1 to 3 spatial dims by cuDNN or
im2col and OpenBLAS, with the operators after it fused into one epilogue (templates/conv.cu, .cpp; the C++ kernel's
ks_conv.h)."""

import math

from agent.heuristic.emit import CPP_PRELUDE, PARALLEL_FLOPS, offset, op_function, row_epilogue
from agent.heuristic.errors import Unsupported
from agent.heuristic.families.common import cuda_prelude, pointers
from agent.heuristic.families.fuse import Builder, Operand, Plan, finish, fuse_after, per_dim, result_node
from agent.heuristic.families.template import render, snippet

# The headers beside agent/heuristic/emit.py that the C++ kernel includes, copied into the workspace's kernels/.
HEADERS = ("ks_blas.h", "ks_conv.h")
TRIVIAL = ["const float result = acc;"]  # an epilogue that leaves the convolution as it is

# cuDNN opened by the kernel at run time crashes inside cuDNN unless its parts are already in the process, loaded
# globally from the folder of the cuDNN torch uses, before the extension: the solution loads them first. (Python
# text of model_new.py, kept here rather than in a .py file that the linter would read as the project's code.)
CUDNN_PRELOAD = """
def _load_cudnn_parts():
    import ctypes, glob, os
    torch.backends.cudnn.version()  # torch's own cuDNN, loaded first
    try:
        import nvidia.cudnn
        folders = [os.path.join(path, "lib") for path in nvidia.cudnn.__path__]
    except ImportError:
        return
    for folder in folders:
        for part in ("graph", "engines_runtime_compiled", "engines_precompiled", "heuristic", "ops", "cnn", "adv", ""):
            for library in sorted(glob.glob(os.path.join(folder, f"libcudnn{'_' + part if part else ''}.so.*"))):
                ctypes.CDLL(library, mode=ctypes.RTLD_GLOBAL)


_load_cudnn_parts()
"""


def plan_stage(analysis, nodes, prefix="t"):
    """(plan, index of the next stage's operator or None) of the convolution module NODES[0] (Conv or ConvTranspose,
    1 to 3 spatial dims), its bias and the operators fused after it."""
    b = Builder(analysis, prefix)
    first = nodes[0]
    attrs = first.get("attrs") or {}
    x_node = b.nodes[first["args"][0]["node"]]
    if x_node["op"] != "placeholder":
        raise Unsupported("the convolution must read a model input")
    if attrs.get("padding_mode", "zeros") != "zeros":
        raise Unsupported(f"{first['target']} with padding_mode={attrs['padding_mode']!r}")
    if isinstance(attrs.get("padding"), str):
        raise Unsupported(f"{first['target']} with padding={attrs['padding']!r}")
    transposed = first["target"].startswith("ConvTranspose")
    dims = len(x_node["shape"]) - 2
    wname = f"{first['module']}.weight"
    bias = f"{first['module']}.bias" if "bias" in (first.get("params") or {}) else None
    x = Operand("x" if prefix == "t" else f"{prefix}x", "input", b.inputs.index(x_node), x_node["shape"])
    weight = Operand("w" if prefix == "t" else f"{prefix}w", "param", wname, analysis["params"][wname])
    out_shape = first["shape"]
    value = "acc"
    if bias is not None:
        # The bias is per output channel: shaped [C, 1, ...] so that it broadcasts along dim 1 of [N, C, ...].
        value = f"(acc + LOAD_{b.operand('param', bias, [out_shape[1]] + [1] * dims).name})"
    b.values[first["name"]] = value
    stop = fuse_after(b, nodes, 1, first["target"])
    out, fused = result_node(analysis, nodes, stop), (len(nodes) if stop is None else stop) - 1
    conv = {
        "transposed": transposed,
        "dims": dims,
        "in_shape": list(x_node["shape"]),
        "w_shape": list(weight.shape),
        "conv_shape": list(out_shape),
        "stride": per_dim(attrs.get("stride", 1), dims),
        "padding": per_dim(attrs.get("padding", 0), dims),
        "dilation": per_dim(attrs.get("dilation", 1), dims),
        "output_padding": per_dim(attrs.get("output_padding", 0), dims),
        "groups": int(attrs.get("groups", 1)),
    }
    plan = Plan(
        "conv",
        b.nodes[out]["shape"],
        main=x,
        weight=weight,
        conv=conv,
        describe=f"{first['target']} ({'x'.join(map(str, x_node['shape']))} -> "
        f"{'x'.join(map(str, out_shape))}) with {fused + (bias is not None)} operator(s) "
        "fused after it",
    )
    finish(b, plan, out)
    if list(plan.out_shape) != list(out_shape):
        raise Unsupported(f"an epilogue that changes the shape {out_shape} of the convolution's output")
    return plan, stop


def _geometry(plan):
    """cuDNN wants at least two spatial dims: a 1-D convolution becomes a 2-D one of height 1."""
    c = plan.conv
    pad = 1 if c["dims"] == 1 else 0
    ins = c["in_shape"][:2] + [1] * pad + c["in_shape"][2:]
    ws = c["w_shape"][:2] + [1] * pad + c["w_shape"][2:]
    outs = c["conv_shape"][:2] + [1] * pad + c["conv_shape"][2:]
    stride, dilation = ([1] * pad + c[k] for k in ("stride", "dilation"))
    return ins, ws, outs, stride, [0] * pad + c["padding"], dilation


def _c_array(values):
    return "{" + ", ".join(f"(int){v}LL" for v in values) + "}"


def _strides(shape):
    out, acc = [], 1
    for size in reversed(shape):
        out.append(acc)
        acc *= size
    return list(reversed(out))


def cuda(plan, block):
    """cuDNN's convolution (or, for ConvTranspose, its data gradient, which is the same arithmetic) with the algorithm
    its heuristics rank first, chosen once per process, then one epilogue kernel for the bias and what follows."""
    names = [o.name for o in plan.operands]
    ins, ws, outs, stride, padding, dilation = _geometry(plan)
    transposed = plan.conv["transposed"]
    total = math.prod(plan.out_shape)
    epilogue = ""
    if plan.body != TRIVIAL:
        epilogue = render("conv.cu", "launch_epilogue", total=total, args="".join(f"{name}, " for name in names))
    return (
        cuda_prelude(block)
        + render("conv.cu", "includes")
        + op_function(
            "epi_op", ["acc"] + [f"LOAD_{n}" for n in names], plan.body, qualifier="__device__ __forceinline__ "
        )
        + render(
            "conv.cu",
            "launch",
            pointers=pointers(names),
            loads="".join(f", {o.name}[{offset(o.shape, plan.out_shape)}]" for o in plan.operands),
            # For ConvTranspose the input plays the forward convolution's output and the output its input.
            x_desc="dy" if transposed else "x",
            y_desc="dx" if transposed else "y",
            algo_t="cudnnConvolutionBwdDataAlgo_t" if transposed else "cudnnConvolutionFwdAlgo_t",
            batch=ins[0],
            in_dims=_c_array(ins[1:])[1:-1],
            in_strides=_c_array(_strides(ins)),
            out_dims=_c_array(outs[1:])[1:-1],
            out_strides=_c_array(_strides(outs)),
            in_sample=math.prod(ins[1:]),
            out_sample=math.prod(outs[1:]),
            w_dims=_c_array(ws),
            pad=_c_array(padding),
            stride=_c_array(stride),
            dilation=_c_array(dilation),
            nd=len(ins),
            spatial=len(ins) - 2,
            groups=plan.conv["groups"],
            find=snippet("conv.cu", "find_backward_data" if transposed else "find_forward"),
            run=snippet("conv.cu", "run_backward_data" if transposed else "run_forward"),
            epilogue=epilogue,
        )
    )


def _padded(values, pad, fill):
    return "{" + ", ".join(str(v) for v in [fill] * pad + list(values)) + "}"


def cpp(plan):
    c = plan.conv
    pad = 3 - c["dims"]
    n, cin = c["in_shape"][:2]
    cout = c["conv_shape"][1]
    names = [o.name for o in plan.operands]
    spatial_in, spatial_out = c["in_shape"][2:], c["conv_shape"][2:]
    geometry = ", ".join(
        [
            str(n),
            str(cin),
            str(cout),
            str(c["groups"]),
            _padded(spatial_in, pad, 1),
            _padded(spatial_out, pad, 1),
            _padded(c["w_shape"][2:], pad, 1),
            _padded(c["stride"], pad, 1),
            _padded(c["padding"], pad, 0),
            _padded(c["dilation"], pad, 1),
        ]
    )
    # Multiply-adds: each output position (input position, when transposed) of each sample meets
    # cin/groups x cout x kernel weights. A C expression: the batch may be the run-time one.
    positions = math.prod(spatial_in if c["transposed"] else spatial_out)
    per_sample = positions * cin * cout // c["groups"] * math.prod(c["w_shape"][2:])
    return (
        CPP_PRELUDE
        + render("conv.cpp", "include")
        + op_function("epi_op", ["acc"] + [f"LOAD_{name}" for name in names], plan.body, qualifier="static inline ")
        + render(
            "conv.cpp",
            "run",
            pointers=pointers(names),
            geometry=geometry,
            run="ks_conv_transposed" if c["transposed"] else "ks_conv",
            parallel=f"{n}LL * {per_sample}LL >= {PARALLEL_FLOPS}LL",
            epilogue=row_epilogue(plan.operands, plan.out_shape, math.prod(spatial_out), plan.body),
        )
    )
