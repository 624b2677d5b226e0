"""Problems in KernelBench format: reading, hashing, importing, seeding inputs and models, describing tensors."""

import hashlib
import importlib.util
import random
import sys
from dataclasses import dataclass
from pathlib import Path

from sandbox.errors import InvalidProblem

MAX_SOURCE_BYTES = 1 << 20


@dataclass
class Problem:
    """A problem file as read by the harness: its text is what gets hashed, copied and imported."""

    path: Path
    source: str
    name: str

    @property
    def sha256(self):
        return hashlib.sha256(self.source.encode()).hexdigest()

    @classmethod
    def read(cls, path):
        path = Path(path)
        if not path.is_file():
            raise InvalidProblem(f"problem file {path} does not exist")
        raw = path.read_bytes()
        if len(raw) > MAX_SOURCE_BYTES:
            raise InvalidProblem(f"problem file {path} is {len(raw)} bytes; the limit is {MAX_SOURCE_BYTES}")
        try:
            source = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidProblem(f"problem file {path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        try:
            compile(source, str(path), "exec")
        except SyntaxError as exc:
            raise InvalidProblem(f"problem file {path} has a syntax error at line {exc.lineno}: {exc.msg}") from None
        return cls(path, source, path.stem)


def import_file(path, module_name):
    """Import a Python file under MODULE_NAME (so pickling and tracebacks name it)."""
    spec = importlib.util.spec_from_file_location(module_name, str(path))
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def seed_everything(seed):
    import torch

    random.seed(seed)
    torch.manual_seed(seed)  # seeds every CUDA device too
    try:
        import numpy

        numpy.random.seed(seed % (1 << 32))
    except ImportError:
        pass


def to_device(value, device):
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(to_device(v, device) for v in value)
    return value


def make_inputs(module, seed, device):
    """get_inputs() under SEED. Factories default to DEVICE, so large inputs are drawn on the GPU in
    milliseconds; every process that draws under the same seed on the same device gets the same values."""
    import torch

    seed_everything(seed)
    with torch.device(device):
        return list(to_device(list(module.get_inputs()), device))


def make_model(cls, module, seed, device):
    seed_everything(seed)
    return cls(*module.get_init_inputs()).to(device)


def tensors_of(value):
    """The output as a flat list of tensors; None if anything in it is not a tensor."""
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, torch.Tensor) for v in value):
        return list(value)
    return None


def spec_of(value):
    """JSON description of a value: shapes and dtypes of tensors, the repr of anything else."""
    import torch

    if isinstance(value, torch.Tensor):
        return {"shape": list(value.shape), "dtype": str(value.dtype).replace("torch.", "")}
    if isinstance(value, (list, tuple)):
        return [spec_of(v) for v in value]
    return {"value": repr(value)[:80]}


# -- shape variants (issue 22): other sizes of the dimensions that may vary -----------------------------------------
# A variant is a JSON record both workers turn into the same inputs under the same seed:
#   {"kind": "declared", "index": I}          the problem's get_input_variants()[I]
#   {"kind": "batch", "scale": S, "inputs": [i, ...]}   get_inputs() with dim 0 of those inputs scaled by S
# Halving keeps the first half of the batch; doubling appends a second draw (seed + 1) of the same inputs.
BATCH_SCALES = (0.5, 2)


def declared_variants(module):
    """How many input variants the problem declares with get_input_variants() (0 where it declares none)."""
    declare = getattr(module, "get_input_variants", None)
    if declare is None:
        return 0
    variants = declare()
    if not isinstance(variants, (list, tuple)):
        raise TypeError(
            f"get_input_variants() returned {type(variants).__name__}; it must return a list whose "
            f"items are input lists like get_inputs() returns (or functions returning one)"
        )
    return len(variants)


def batch_candidates(inputs):
    """The variants that scale the batch (dim 0 of the first tensor input), most inclusive first: every tensor
    input sharing that dim 0, then the first tensor input alone. Empty where no input has a dimension."""
    import torch

    tensors = [i for i, t in enumerate(inputs) if isinstance(t, torch.Tensor) and t.dim() >= 1]
    if not tensors:
        return []
    batch = inputs[tensors[0]].shape[0]
    groups = [[i for i in tensors if inputs[i].shape[0] == batch]]
    if groups[0] != tensors[:1]:
        groups.append(tensors[:1])
    return [
        {"kind": "batch", "scale": scale, "inputs": group}
        for scale in BATCH_SCALES
        if batch * scale >= 1
        for group in groups
    ]


def variant_inputs(module, variant, seed, device):
    """The inputs of VARIANT under SEED on DEVICE: the same values in every process that asks."""
    import torch

    if variant["kind"] == "declared":
        seed_everything(seed)
        with torch.device(device):
            chosen = module.get_input_variants()[variant["index"]]
            return list(to_device(list(chosen() if callable(chosen) else chosen), device))
    inputs = make_inputs(module, seed, device)
    scale = variant["scale"]
    extra = make_inputs(module, seed + 1, device) if scale > 1 else None
    for i in variant["inputs"]:
        t = inputs[i]
        if scale < 1:
            inputs[i] = t[: max(1, int(t.shape[0] * scale))].clone()
        else:
            inputs[i] = torch.cat([t] + [extra[i]] * (int(scale) - 1))
    return inputs


def describe_shapes(spec):
    """Inputs' shapes as people write them, from their spec_of(): '(64, 512), (64, 512)'; other inputs by value."""
    return ", ".join(str(tuple(s["shape"])) if "shape" in s else str(s.get("value", s))[:40] for s in spec)
