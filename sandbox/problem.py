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
