"""The seed catalogue: operators crawled from torch, torch.nn.functional, torch.nn and transformers, each probed
on small tensors offline (no weights) for the layouts, input domain and dtypes it accepts.

A seed is data: a template of __init__ and forward lines over `x` (the running tensor) with `$` variables
that training.synthesis.compose fills from the input's shape. The crawl's result is cached per torch and
transformers version, so composing in a worker process costs a JSON read.
"""

import hashlib
import inspect
import json
import logging
import os
import re
import warnings

from sandbox import settings
from training.synthesis.blocks import transformers_seeds
from training.synthesis.compose import instantiate, probe_step
from training.synthesis.seed import DOMAINS, DTYPES, PROBE_SHAPES, Seed

log = logging.getLogger(__name__)
CATALOGUE_VERSION = 1

# Names whose single-tensor call is a view, a copy, a constant, a random draw or a side effect: not operators
# a kernel would compute.
_SKIP_NAME = re.compile(
    r"^(_|set_|get_|is_|use_|save|load|manual_seed|seed|initial_seed|empty|zeros|ones|full|rand|arange|range|"
    r"linspace|logspace|eye|tensor|as_|from_|clone|detach|alias|view|unbind|split|chunk|tensor_split|hsplit|"
    r"vsplit|dsplit|select|narrow|squeeze|unsqueeze|flip|fliplr|flipud|roll|rot90|movedim|moveaxis|swap|"
    r"transpose|t$|adjoint|permute|reshape|flatten|ravel|expand|broadcast|resolve|conj|real$|imag$|positive|"
    r"numel|nonzero|argwhere|unique|diag|tril|triu|block_diag|atleast_|stack|cat|concat|hstack|vstack|dstack|"
    r"column_stack|row_stack|meshgrid|cartesian|combinations|index|gather|scatter|take|masked|where|"
    r"dropout|feature_dropout|alpha_dropout|feature_alpha_dropout|bernoulli|poisson|normal|multinomial|"
    r"native_|fake_|quantize|q_|dequantize|sparse|to_|cudnn|miopen|mkldnn|fbgemm|batch_norm|instance_norm|"
    r"layer_norm|group_norm|embedding|one_hot|histc|bincount|searchsorted|bucketize|cov|corrcoef|"
    r"pdist|trace|det|logdet|slogdet|matrix|pinverse|inverse|cholesky|lu|qr|svd|eig|symeig|lstsq|triangular|"
    r"kron|tile|repeat|nan_to_num|clamp_max|clamp_min|fix$|trunc$|frac$|sgn$|sign$|signbit|heaviside|"
    r"nextafter|isclose|allclose|equal|ge$|gt$|le$|lt$|eq$|ne$|greater|less|not_equal|logical_|bitwise_|"
    r"histogram|count_nonzero|cummin$|cummax$|mode$|kthvalue|argsort|msort|topk|vander|sym|"
    r"threshold$|rrelu|celu_|selu_|relu_|elu_|hardtanh_|leaky_relu_|native|frexp|frobenius_norm|nuclear_norm|"
    r"istft|stft|fft|ifft|hann|hamming|bartlett|blackman|kaiser|polar|complex|view_as|dist$|cdist|"
    r"result_type|can_cast|promote_types|softmax$|log_softmax$|lobpcg|lowrank|pca_|solve|orgqr|ormqr|geqrf|matrix_exp)"
)


class CatalogueError(Exception):
    """The seed catalogue could not be built; the message says what is missing."""


# -- probing -------------------------------------------------------------------------------------------------


def range_of(t):
    """The narrowest domain a tensor's values lie in."""
    if t.numel() and bool((t > 0).all()) and bool((t < 1).all()):
        return "prob"
    if t.numel() and bool((t > 0).all()):
        return "positive"
    return "real"


def _run_template(seed, shape, domain, dtype="float32", forward_seed=None):
    """Build SEED for SHAPE with the composer's own machinery and run it on the CPU: (output, model, inputs)."""
    import random

    step = instantiate(seed, shape, random.Random(0), "tiny", prefix="s0", operand_name="y1")
    return probe_step(step, shape, domain, dtype, 0, forward_seed)


def _probe(seed):
    """Fill SEED's layouts, domain, range, dtypes and stochasticity by running it; None if it never works."""
    import torch

    works = {}
    for layout, shape in PROBE_SHAPES.items():
        if layout not in seed.layouts:
            continue
        for domain in DOMAINS:
            try:
                out, again = (_run_template(seed, shape, domain, forward_seed=s)[0] for s in (1, 2))
            except Exception:  # noqa: BLE001 -- any failure means "not for this layout/domain"
                continue
            if not isinstance(out, torch.Tensor) or not out.is_floating_point() or out.dtype != torch.float32:
                continue
            if not bool(torch.isfinite(out).all()):
                continue
            works[layout] = (domain, out, again)
            break
    if not works:
        return None
    domain = max((d for d, _, _ in works.values()), key=DOMAINS.index)
    outs = [o for _, o, _ in works.values()]
    seed.layouts = tuple(works)
    seed.domain = domain
    seed.out_range = min((range_of(o) for o in outs), key=DOMAINS.index)
    seed.stochastic = any(not torch.equal(o, a) for _, o, a in works.values())
    if any(o.dim() == 0 for o in outs):
        seed.terminal = True
    layout, shape = next(iter(works)), PROBE_SHAPES[next(iter(works))]
    dtypes = ["float32"]
    for dtype in DTYPES[1:]:
        try:
            out = _run_template(seed, shape, domain, dtype)[0]
            if out.dtype == getattr(torch, dtype):
                dtypes.append(dtype)
        except Exception:  # noqa: BLE001 -- this dtype is not supported by the operator
            pass
    seed.dtypes = tuple(dtypes)
    return seed


def _probe_operator(seed):
    """The probed seed, unless it never runs or computes nothing (an identity or a constant)."""
    probed = _probe(seed)
    return probed if probed is not None and not _is_identity(probed) else None


def _is_identity(seed):
    import torch

    try:
        out, _, inputs = _run_template(seed, PROBE_SHAPES[seed.layouts[0]], seed.domain)
    except Exception:  # noqa: BLE001
        return True
    x = inputs[0]
    same = out.shape == x.shape and torch.allclose(out, x)
    return same or (out.numel() > 1 and bool((out == out.flatten()[0]).all()))


# -- the crawl -----------------------------------------------------------------------------------------------

ACTIVATION_WORDS = (
    "relu",
    "elu",
    "gelu",
    "silu",
    "sigmoid",
    "tanh",
    "softplus",
    "mish",
    "swish",
    "shrink",
    "softsign",
    "hardswish",
    "logsigmoid",
    "glu",
    "threshold",
    "celu",
    "selu",
    "prelu",
)


def _classify_unary(name):
    return "activation" if any(w in name.lower() for w in ACTIVATION_WORDS) else "elementwise"


def _required(fn, overrides):
    lam = overrides.get(fn)
    if lam is None:
        return None
    try:
        params = list(inspect.signature(lam).parameters.values())
    except (TypeError, ValueError):
        return None
    return params


def _function_seeds():
    """torch.* and torch.nn.functional.* through PyTorch's own registry of overridable functions."""
    import torch
    import torch.nn.functional as F

    overrides = torch.overrides.get_testing_overrides()
    seeds, seen = [], set()
    for origin, module, prefix in (("torch", torch, "torch"), ("torch.nn.functional", F, "F")):
        for name in sorted(dir(module)):
            if _SKIP_NAME.match(name) or name.endswith("_"):
                continue
            fn = getattr(module, name, None)
            params = _required(fn, overrides) if callable(fn) else None
            if params is None or id(fn) in seen:
                continue
            required = [
                p.name
                for p in params
                if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            ]
            # Some registry entries spell their dimension argument `names` (the named-tensor overload).
            dims = {p.name for p in params} & {"dim", "names"}
            call = f"{prefix}.{name}"
            if len(required) == 1 and not dims:
                candidates = [Seed(call, _classify_unary(name), origin, f"x = {call}(x)")]
            elif len(required) == 2 and not dims:
                candidates = [
                    Seed(call, "binary", origin, f"x = {call}(x, $y)", operand="broadcast"),
                    Seed(call, "loss", origin, f"x = {call}(x, $y)", operand="full"),
                ]
            elif dims and len(required) <= 2 and set(required[1:]) <= dims:
                candidates = [
                    Seed(call, "scan", origin, f"x = {call}(x, dim=-1)"),
                    Seed(call, "reduction", origin, f"x = {call}(x, dim=-1)"),
                    Seed(call, "reduction", origin, f"x = {call}(x, dim=-1)[0]"),
                ]
            else:
                continue
            for seed in candidates:
                found = _accept(seed)
                if found:
                    seen.add(id(fn))
                    seeds.append(found)
                    break
    return seeds


def _accept(seed):
    """The probed seed if it is a real operator of its kind, else None."""
    probed = _probe_operator(seed)
    if probed is None:
        return None
    out, _, inputs = _run_template(probed, PROBE_SHAPES[probed.layouts[0]], probed.domain)
    x = inputs[0]
    if probed.op_class in ("elementwise", "activation", "binary", "scan"):
        if out.shape != x.shape:
            return None
        if probed.op_class == "scan" and re.search(r"softm|normalize", probed.name):
            probed.op_class = "softmax" if "softm" in probed.name else "normalization"
    elif probed.op_class == "reduction":
        if out.shape != x.shape[:-1]:
            return None
    elif probed.op_class == "loss":
        if out.dim() != 0:
            return None
        probed.terminal = True
    return probed


# nn.Module constructor parameters -> template variables. Pool and pad sizes stay small so shapes survive.
_MODULE_ARGS = {
    "in_features": "$D",
    "out_features": "$N",
    "in1_features": "$D",
    "in2_features": "$D",
    "in_channels": "$C",
    "out_channels": "$NC",
    "num_features": "$C",
    "num_channels": "$C",
    "num_groups": "$G",
    "normalized_shape": "$D",
    "embed_dim": "$D",
    "num_heads": "$NH",
    "d_model": "$D",
    "nhead": "$NH",
    "input_size": "$D",
    "hidden_size": "$N",
    "upscale_factor": "2",
    "downscale_factor": "2",
    "groups": "$G",
    "norm_type": "2",
    "padding": "1",
    "value": "0.5",
    "size": "3",
    "threshold": "0.1",
}
_MODULE_EXTRA = {
    "RNN": {"input_size": "$D", "hidden_size": "$N", "batch_first": "True"},
    "LSTM": {"input_size": "$D", "hidden_size": "$N", "batch_first": "True"},
    "GRU": {"input_size": "$D", "hidden_size": "$N", "batch_first": "True"},
    "TransformerEncoderLayer": {"dim_feedforward": "$N", "dropout": "0.0", "batch_first": "True"},
    "TransformerDecoderLayer": {"dim_feedforward": "$N", "dropout": "0.0", "batch_first": "True"},
    "MultiheadAttention": {"batch_first": "True"},
    "Upsample": {"scale_factor": "2", "mode": "'nearest'"},
    "UpsamplingNearest2d": {"scale_factor": "2"},
    "UpsamplingBilinear2d": {"scale_factor": "2"},
}
_MODULE_CALL = {
    "MultiheadAttention": "x = self.$p(x, x, x, need_weights=False)[0]",
    "TransformerDecoderLayer": "x = self.$p(x, x)",
    "Bilinear": "x = self.$p(x, x)",
    "RNN": "x = self.$p(x)[0]",
    "LSTM": "x = self.$p(x)[0]",
    "GRU": "x = self.$p(x)[0]",
}
_MODULE_SKIP = re.compile(
    r"^(Lazy|Module|Sequential|Parameter|Container|Identity|Embedding|Fold|Unfold|"
    r"MaxUnpool|Transformer$|TransformerEncoder$|TransformerDecoder$|RNNBase|.*Cell$|"
    r"AdaptiveLogSoftmax|LinearCrossEntropy|Unflatten|SyncBatchNorm|CrossMapLRN2d|"
    r"Fractional|.*Loss$|Softmax$|LogSoftmax$|Softmin$)"
)


def _module_class(name):
    lowered = name.lower()
    for words, cls in (
        (("conv",), "convolution"),
        (("pool",), "pooling"),
        (("norm",), "normalization"),
        (("pad",), "padding"),
        (("upsampl", "pixelshuffle", "pixelunshuffle"), "upsampling"),
        (("linear", "bilinear"), "linear"),
        (("rnn", "lstm", "gru"), "recurrent"),
        (("attention", "transformer"), "attention"),
        (("softmax", "softmin"), "softmax"),
        (("flatten", "channelshuffle"), "layout"),
    ):
        if any(w in lowered for w in words):
            return cls
    return "activation"


def _module_seeds():
    import torch.nn as nn

    seeds = []
    for name in sorted(nn.modules.__all__):
        cls = getattr(nn, name, None)
        if not isinstance(cls, type) or not issubclass(cls, nn.Module) or _MODULE_SKIP.match(name):
            continue
        try:
            params = list(inspect.signature(cls.__init__).parameters.values())[1:]
        except (TypeError, ValueError):
            continue
        args = {}
        for p in params:
            if p.default is not inspect.Parameter.empty or p.kind not in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY):
                continue
            if p.name == "kernel_size":
                args[p.name] = "2" if "Pool" in name else "3"
            elif p.name == "output_size":
                args[p.name] = "2"
            elif p.name in _MODULE_ARGS:
                args[p.name] = _MODULE_ARGS[p.name]
            else:
                args = None
                break
        if args is None:
            continue
        args.update(_MODULE_EXTRA.get(name, {}))
        ctor = ", ".join(f"{k}={v}" for k, v in args.items())
        seed = Seed(
            f"nn.{name}",
            _module_class(name),
            "torch.nn",
            _MODULE_CALL.get(name, "x = self.$p(x)"),
            init=f"self.$p = nn.{name}({ctor})",
        )
        found = _probe_operator(seed)
        if found is not None:
            seeds.append(found)
    return seeds


def _layout_seeds():
    """Shape changers the torch crawl skips as views: each moves the running tensor to another layout."""
    return [
        s
        for s in (
            _probe(seed)
            for seed in (
                Seed(
                    "torch.transpose",
                    "layout",
                    "torch",
                    "x = torch.transpose(x, -1, -2).contiguous()",
                    layouts=("sequence", "image", "volume"),
                ),
                Seed(
                    "torch.flatten",
                    "layout",
                    "torch",
                    "x = torch.flatten(x, 1)",
                    layouts=("sequence", "image", "volume"),
                ),
                Seed("torch.permute", "layout", "torch", "x = x.permute(0, 2, 3, 1).contiguous()", layouts=("image",)),
                Seed(
                    "F.interpolate",
                    "upsampling",
                    "torch.nn.functional",
                    "x = F.interpolate(x, scale_factor=2.0, mode='nearest')",
                    layouts=("sequence", "image", "volume"),
                ),
                Seed("F.pad", "padding", "torch.nn.functional", "x = F.pad(x, (1, 1))"),
                Seed("torch.clamp", "elementwise", "torch", "x = torch.clamp(x, min=-0.5, max=0.5)"),
                Seed(
                    "torch.matmul",
                    "linear",
                    "torch",
                    "x = torch.matmul(x, x.transpose(-1, -2))",
                    layouts=("sequence", "image"),
                ),
                Seed("torch.bmm", "linear", "torch", "x = torch.bmm(x, x.transpose(1, 2))", layouts=("sequence",)),
                Seed("torch.softmax", "softmax", "torch", "x = torch.softmax(x, dim=-1)"),
                Seed("torch.log_softmax", "softmax", "torch", "x = torch.log_softmax(x, dim=-1)"),
                Seed(
                    "nn.Softmax",
                    "softmax",
                    "torch.nn",
                    "x = self.$p(x)",
                    init="self.$p = nn.Softmax(dim=1)",
                    layouts=("features", "sequence", "image", "volume"),
                ),
                Seed("nn.LogSoftmax", "softmax", "torch.nn", "x = self.$p(x)", init="self.$p = nn.LogSoftmax(dim=1)"),
                Seed("nn.Softmin", "softmax", "torch.nn", "x = self.$p(x)", init="self.$p = nn.Softmin(dim=1)"),
                Seed(
                    "F.linear",
                    "linear",
                    "torch.nn.functional",
                    "x = F.linear(x, self.$p_w, self.$p_b)",
                    init="self.$p_w = nn.Parameter(torch.randn($N, $D) / math.sqrt($D))\n"
                    "self.$p_b = nn.Parameter(torch.zeros($N))",
                    layouts=("features", "sequence"),
                ),
                Seed(
                    "torch.addmm",
                    "linear",
                    "torch",
                    "x = torch.addmm(self.$p_b, x, self.$p_w)",
                    init="self.$p_w = nn.Parameter(torch.randn($D, $N) / math.sqrt($D))\n"
                    "self.$p_b = nn.Parameter(torch.zeros($N))",
                    layouts=("features",),
                ),
                Seed(
                    "torch.einsum",
                    "linear",
                    "torch",
                    "x = torch.einsum('bld,de->ble', x, self.$p_w)",
                    init="self.$p_w = nn.Parameter(torch.randn($D, $N) / math.sqrt($D))",
                    layouts=("sequence",),
                ),
            )
        )
        if s is not None
    ]


def crawl():
    """Every seed the crawl finds here (slow: seconds to a minute); use catalogue() for the cached result."""
    import torch

    torch.set_num_threads(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        seeds = _function_seeds() + _module_seeds() + _layout_seeds() + transformers_seeds(_probe_operator)
    unique = {}
    for seed in seeds:
        unique.setdefault(seed.name + ("" if seed.op_class != "loss" else "#loss"), seed)
    return sorted(unique.values(), key=lambda s: (s.op_class, s.name))


def _cache_path():
    import torch

    try:
        import transformers

        tf_version = transformers.__version__
    except ImportError:
        tf_version = "none"
    here = hashlib.sha256(
        b"".join(
            open(os.path.join(os.path.dirname(__file__), name), "rb").read()
            for name in ("seed.py", "seeds.py", "blocks.py", "compose.py")
        )
    ).hexdigest()[:12]
    key = f"v{CATALOGUE_VERSION}-torch{torch.__version__}-tf{tf_version}-{here}"
    return settings.cache_dir() / "synthesis" / f"seeds-{key}.json"


_MEMO = {}


def catalogue(refresh=False):
    """The crawled seeds, from the cache when this torch/transformers/code version crawled them before."""
    path = _cache_path()
    if not refresh and path in _MEMO:
        return _MEMO[path]
    if not refresh and path.is_file():
        try:
            seeds = [Seed.from_json(row) for row in json.loads(path.read_text())]
            _MEMO[path] = seeds
            return seeds
        except (ValueError, TypeError, KeyError):
            log.warning("seed cache %s is unreadable; crawling again", path)
    seeds = crawl()
    if not seeds:
        raise CatalogueError("the crawl found no seeds: is torch importable and working on the CPU?")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps([s.to_json() for s in seeds]))
    os.replace(tmp, path)
    _MEMO[path] = seeds
    return seeds
