"""Tensors between jailed workers: a JSON header and raw bytes; fast, and loading runs no code (no pickle)."""
import json
import struct

import numpy
import torch

_MAGIC = b"KSTENSOR"


def save_tensors(tensors, path):
    header = [{"dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape)} for t in tensors]
    blob = json.dumps(header).encode()
    with open(path, "wb") as fh:
        fh.write(_MAGIC + struct.pack("<Q", len(blob)) + blob)
        for t in tensors:
            t.detach().contiguous().cpu().reshape(-1).view(torch.uint8).numpy().tofile(fh)


def load_tensors(path):
    with open(path, "rb") as fh:
        if fh.read(len(_MAGIC)) != _MAGIC:
            raise ValueError(f"{path} is not a tensor file written by the harness")
        (size,) = struct.unpack("<Q", fh.read(8))
        header = json.loads(fh.read(size))
        out = []
        for entry in header:
            dtype = getattr(torch, entry["dtype"])
            count = int(numpy.prod(entry["shape"], dtype=numpy.int64))
            nbytes = count * torch.empty((), dtype=dtype).element_size()
            raw = numpy.fromfile(fh, dtype=numpy.uint8, count=nbytes)
            if raw.size != nbytes:
                raise ValueError(f"{path} is truncated")
            out.append(torch.from_numpy(raw).view(dtype).reshape(entry["shape"]))
        return out
