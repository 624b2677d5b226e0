"""Capture a module's forward as an ATen graph with shapes: torch.export, then export through dynamo (strict).

The graph is decomposed to core ATen plus the decompositions of the norms and softmaxes (so the planner sees
reductions and elementwise ops it fuses), keeping scaled_dot_product_attention whole for the attention family and
the recurrent layers (aten.lstm, gru, rnn_tanh, rnn_relu) whole for the RNN family: unrolled, every step of every
layer would land in the graph (and while capturing, nn.LSTM / GRU / RNN run as dag/rnn.py's capture ops, whose shape
functions spare the steps that the aten ops' own meta path runs).
Run on meta tensors inside the jailed analysis (analyze.py); the result is plain JSON.
"""

import contextlib
import functools

import torch
import torch.export.exported_program as _exported_program

from agent.heuristic.dag import rnn
from agent.heuristic.errors import Unsupported

aten = torch.ops.aten

# Whole ops the planner has a family for: never decomposed.
KEPT = (
    aten.scaled_dot_product_attention.default,
    *(
        getattr(getattr(aten, op), overload)
        for op in ("lstm", "gru", "rnn_tanh", "rnn_relu")
        for overload in ("input", "data")
    ),
)
# Decomposed further than core ATen: the planner fuses their reductions and elementwise parts itself.
EXTRA = (
    aten._softmax.default,
    aten._log_softmax.default,
    aten.native_layer_norm.default,
    aten.native_group_norm.default,
    aten._native_batch_norm_legit_functional.default,
    aten._native_batch_norm_legit_no_training.default,
    aten._native_batch_norm_legit.default,
    aten._native_batch_norm_legit.no_stats,
    aten.native_batch_norm.default,
    aten.logsumexp.default,
    aten.upsample_nearest2d.vec,
    aten.upsample_bilinear2d.vec,
    aten.hardswish.default,
    aten.hardsigmoid.default,
    aten.gelu.default,
    aten.mish.default,
    aten.silu.default,
    aten.softplus.default,
    aten.elu.default,
    aten.leaky_relu.default,
    aten.hardtanh.default,
    aten.frobenius_norm.dim,
    aten.addcmul.default,
    aten.addcdiv.default,
    aten.lerp.Scalar,
    aten.lerp.Tensor,
    aten.norm.ScalarOpt_dim,
    aten.huber_loss.default,
    aten.smooth_l1_loss.default,
    aten.mse_loss.default,
    aten.l1_loss.default,
    aten.binary_cross_entropy.default,
    aten.nll_loss_forward.default,
    aten.soft_margin_loss.default,
    aten.hinge_embedding_loss.default,
    aten.margin_ranking_loss.default,
    aten.cosine_similarity.default,
    aten.kl_div.default,
    aten.triplet_margin_loss.default,
    aten.cosine_embedding_loss.default,
    aten.pairwise_distance.default,
    aten.glu.default,
    aten.narrow.default,
    aten.unbind.int,
    aten.split.Tensor,
    aten.split_with_sizes.default,
    aten.chunk.default,
    aten.tensor_split.sections,
    aten.diag_embed.default,
    aten.log_sigmoid_forward.default,
    aten.threshold.default,
    aten.rrelu_with_noise.default,
    aten.celu.default,
    aten.selu.default,
    aten.native_dropout.default,
    aten.masked_fill.Scalar,
    aten.masked_fill.Tensor,
    aten.roll.default,
    aten.tril.default,
    aten.triu.default,
    aten.repeat.default,
    aten.unsqueeze_copy.default,
    aten.expand_copy.default,
    aten.view_copy.default,
    aten.permute_copy.default,
    aten.t_copy.default,
    aten.transpose_copy.int,
    aten.im2col.default,
    aten.embedding_bag.padding_idx,
    aten._embedding_bag.default,
    aten.baddbmm.default,
    aten.addbmm.default,
    aten.addmv.default,
    aten.mv.default,
    aten.dot.default,
    aten.outer.default,
    aten.einsum.default,
)


def _decompositions():
    """The decomposition table export runs (a copy: run_decompositions may change what it is given)."""
    return _decomposition_table().copy()


@functools.cache
def _decomposition_table():
    """A plain dict: torch's own table (a CustomDecompTable) lists every CompositeImplicitAutograd op of every
    namespace again each time run_decompositions reads it (a third of a small graph's analysis)."""
    table = dict(torch.export.default_decompositions().materialize())
    for op in KEPT:
        table.pop(op, None)
    from torch._decomp import decomposition_table

    for op in EXTRA:
        if op in decomposition_table and op not in KEPT:
            table[op] = decomposition_table[op]
    table[aten.prelu.default] = _prelu
    table[aten._embedding_bag.default] = _embedding_bag
    table[aten._embedding_bag_forward_only.default] = _embedding_bag
    return table


def _prelu(x, weight):
    """PReLU with its weight (one value, or one per channel: dim 1) viewed against X: torch's own decomposition
    broadcasts it with prims.broadcast_in_dim, an aliasing prim that export cannot functionalize."""
    shape = [1] * x.dim()
    if x.dim() >= 2:
        shape[1] = weight.numel()
    return torch.where(x > 0, x, x * weight.reshape(shape))


def _embedding_bag(
    weight,
    indices,
    offsets,
    scale_grad_by_freq=False,
    mode=0,
    sparse=False,
    per_sample_weights=None,
    include_last_offset=False,
    padding_idx=-1,
):
    """nn.EmbeddingBag (and F.embedding_bag) as a gather of rows and a segment reduction by index_add or
    scatter_reduce, which torch does not decompose. Index i belongs to the bag of the last offset at or before it: a
    count of the offsets at each position (empty bags share one), summed along the indices. Returns the op's four
    values; the last three (bag of each index, bag sizes, argmax of each max) only so that the op's readers find them.
    With include_last_offset, the indices from the last offset on fall in one more bag, dropped at the end."""
    n, dim = indices.shape[0], weight.shape[1]
    bags = offsets.shape[0]
    starts = offsets[1:]
    marks = torch.zeros(n + 1, dtype=indices.dtype, device=indices.device)
    marks = marks.index_add(0, starts, torch.ones_like(starts))
    bag = marks[:n].cumsum(0)
    rows = weight[indices]
    kept = indices != padding_idx if padding_idx >= 0 else None
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.unsqueeze(1).to(rows.dtype)
    if kept is not None:
        rows = torch.where(kept.unsqueeze(1), rows, torch.zeros((), dtype=rows.dtype, device=rows.device))
    ones = torch.ones(n, dtype=indices.dtype, device=indices.device) if kept is None else kept.to(indices.dtype)
    size = torch.zeros(bags, dtype=indices.dtype, device=indices.device).index_add(0, bag, ones)
    out = weight.new_zeros(bags, dim)
    if mode == 2:  # max: an empty bag (or one of padding only) is zeros, as torch's
        filled = rows if kept is None else torch.where(kept.unsqueeze(1), rows, float("-inf"))
        out = out.scatter_reduce(0, bag.unsqueeze(1).expand(n, dim), filled, "amax", include_self=False)
        out = torch.where(size.unsqueeze(1) > 0, out, torch.zeros((), dtype=out.dtype, device=out.device))
    else:
        out = out.index_add(0, bag, rows)
    if mode == 1:
        out = out / size.clamp(min=1).unsqueeze(1).to(out.dtype)
    bags -= include_last_offset
    return out[:bags], bag, size[:bags], indices.new_zeros((bags, dim) if mode == 2 else (0,))


def _arg(value):
    if isinstance(value, torch.fx.Node):
        return {"node": value.name}
    if isinstance(value, (list, tuple)):
        return [_arg(v) for v in value]
    if isinstance(value, dict):
        return {k: _arg(v) for k, v in value.items()}
    if isinstance(value, bool) or value is None or isinstance(value, (int, float, str)):
        return value
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).replace("torch.", "")}
    return {"repr": repr(value)[:80]}


def _meta(value):
    """[shape, dtype] of a traced value, a list of them for a tuple, None for anything else."""
    if isinstance(value, torch.Tensor):
        return [[int(d) for d in value.shape], str(value.dtype).replace("torch.", "")]
    if isinstance(value, (list, tuple)):
        return [_meta(v) for v in value]
    return None


def _graph_json(program, inputs):
    signature = program.graph_signature
    kinds = {}
    user = 0
    for spec in signature.input_specs:
        name = getattr(spec.arg, "name", None)
        kind = spec.kind.name.lower()
        if kind == "user_input":
            kinds[name] = {"kind": "input", "ref": user}
            user += 1
        elif kind in ("parameter", "buffer"):
            kinds[name] = {"kind": "param" if kind == "parameter" else kind, "ref": spec.target}
        elif kind == "constant_tensor":
            value = program.constants[spec.target]
            if value.is_meta or value.numel() > 4096:
                raise Unsupported(f"a tensor constant {spec.target} made in forward of shape {list(value.shape)}")
            kinds[name] = {"kind": "constant", "ref": spec.target, "values": value.flatten().tolist()}
        else:
            raise Unsupported(f"an input of kind {kind} ({spec.target})")
    outputs = []
    for spec in signature.output_specs:
        kind = spec.kind.name.lower()
        if kind not in ("user_output", "buffer_mutation"):
            raise Unsupported(f"forward changes its input in place ({kind} of {spec.target})")
        outputs.append({"node": spec.arg.name, "kind": kind, "target": spec.target})
    nodes = []
    for node in program.graph.nodes:
        value = node.meta.get("val")
        entry = {"name": node.name, "op": node.op, "args": _arg(node.args), "kwargs": _arg(dict(node.kwargs))}
        if node.op == "call_function":
            entry["target"] = rnn.aten_target(
                str(node.target)
                if isinstance(node.target, torch._ops.OpOverload)
                else getattr(node.target, "__name__", str(node.target))
            )
        if isinstance(value, torch.Tensor):
            entry["shape"], entry["dtype"] = _meta(value)
        elif isinstance(value, (list, tuple)):
            entry["outs"] = [_meta(v) for v in value]
        elif isinstance(value, (int, float, bool)):
            entry["value"] = value
        if node.op == "placeholder":
            entry.update(kinds.get(node.name, {"kind": "input", "ref": None}))
        nodes.append(entry)
    scalars = {i: x for i, x in enumerate(inputs) if not isinstance(x, torch.Tensor)}
    return {"nodes": nodes, "outputs": outputs, "scalars": scalars}


def capture(model, inputs, build_fake=None):
    """{"ok": True, "how": ..., "nodes": ..., "outputs": ...} or {"ok": False, "reason": the construct that stopped
    every capture}. BUILD_FAKE(mode), when given, builds (model, inputs) again under a FakeTensorMode: CPU tensors that
    hold no memory, so constants made in forward keep their values and meet the model on its own device."""
    with rnn.capturing(), cia_ops_listed_once():
        return _capture(model, inputs, build_fake)


@contextlib.contextmanager
def cia_ops_listed_once():
    """run_decompositions lists the dispatcher's CompositeImplicitAutograd ops on every call (its
    _collect_all_valid_cia_ops: a walk over every op namespace, about a fifth of a capture); within one capture (or
    one analysis: analyze.py) the list does not change, so it is listed once. Where torch has no such function, nothing is changed."""
    collect = getattr(_exported_program, "_collect_all_valid_cia_ops", None)
    if collect is None:
        yield
        return
    listed = frozenset(collect())
    _exported_program._collect_all_valid_cia_ops = lambda: set(listed)
    try:
        yield
    finally:
        _exported_program._collect_all_valid_cia_ops = collect


def _capture(model, inputs, build_fake):
    reasons = []
    attempts = [
        ("torch.export", False, "fake"),
        ("torch.export (meta)", False, "meta"),
        ("torch.export (dynamo, strict)", True, "meta"),
    ]
    for how, strict, where in attempts:
        try:
            if where == "fake":
                if build_fake is None:
                    continue
                from torch._subclasses.fake_tensor import FakeTensorMode

                fake_model, fake_inputs = build_fake(FakeTensorMode(allow_non_fake_inputs=True))
                program = torch.export.export(fake_model, tuple(fake_inputs), strict=strict)
            else:
                # Tensors made in forward (torch.ones(t, t), a mask) land on meta like the model's own.
                with torch.device("meta"):
                    program = torch.export.export(model, tuple(inputs), strict=strict)
            with torch.device("meta"):
                program = program.run_decompositions(_decompositions())
            graph = _graph_json(program, inputs)
        except Unsupported as exc:
            reasons.append(f"{how}: {exc}")
            continue
        except Exception as exc:  # noqa: BLE001 -- every failure is reported as the construct that stopped capture
            reasons.append(f"{how}: {type(exc).__name__}: {_first_line(exc)}")
            continue
        return {"ok": True, "how": how, **graph}
    return {"ok": False, "reason": "; ".join(reasons)}


def _first_line(exc):
    text = str(exc).strip().splitlines()
    return (text[0] if text else "")[:300]
