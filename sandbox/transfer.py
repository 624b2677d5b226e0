"""Tensors between jailed workers as safetensors files: a standard format, fast, and loading runs no code (no
pickle). Tensors keep their order (keys "0", "1", ...) and their dtype and shape; views are written as copies."""

from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

_FORMAT = "kernel-studio tensors"


def save_tensors(tensors, path):
    """TENSORS (a sequence) into the safetensors file PATH, in order."""
    # safetensors refuses tensors that share storage or are not contiguous: each is written as its own copy.
    named = {str(i): t.detach().cpu().contiguous().clone() for i, t in enumerate(tensors)}
    try:
        save_file(named, str(path), metadata={"format": _FORMAT, "count": str(len(named))})
    except (SafetensorError, ValueError, TypeError) as exc:
        dtypes = ", ".join(sorted({str(t.dtype) for t in tensors}))
        raise ValueError(f"tensors of dtypes {dtypes} cannot be passed between the sandbox's workers: {exc}") from exc


def load_tensors(path):
    """The tensors save_tensors wrote to PATH, in order; a clear error for anything else."""
    try:
        named = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as exc:
        raise ValueError(f"{path} is not a tensor file written by the harness ({exc})") from exc
    if set(named) != {str(i) for i in range(len(named))}:
        raise ValueError(f"{path} is not a tensor file written by the harness (keys {sorted(named)[:5]})")
    return [named[str(i)] for i in range(len(named))]
