"""Solutions: a KernelBench-style Python file, or a native workspace folder (model_new.py, binding.cpp, kernels/)."""

import hashlib
from dataclasses import dataclass
from pathlib import Path

from sandbox.errors import InvalidSolution

MAX_BYTES = 4 << 20


@dataclass
class Solution:
    path: Path
    kind: str  # "inline" or "workspace"
    files: dict

    @property
    def sha256(self):
        h = hashlib.sha256()
        for name in sorted(self.files):
            h.update(name.encode() + b"\0" + self.files[name] + b"\0")
        return h.hexdigest()

    @property
    def entry(self):
        """The Python file that defines ModelNew, relative to what is copied into the jail."""
        return "model_new.py" if self.kind == "workspace" else "solution.py"

    @classmethod
    def read(cls, path):
        path = Path(path)
        if path.is_dir():
            if not (path / "model_new.py").is_file():
                raise InvalidSolution(
                    f"{path} is a folder without model_new.py: a native workspace holds "
                    f"model_new.py, binding.cpp and kernels/"
                )
            files = {
                str(p.relative_to(path)): p.read_bytes()
                for p in sorted(path.rglob("*"))
                if p.is_file() and "__pycache__" not in p.parts and ".ks-build" not in p.parts
            }
            kind = "workspace"
        elif path.is_file():
            files = {"solution.py": path.read_bytes()}
            kind = "inline"
        else:
            raise InvalidSolution(f"solution {path} does not exist")
        if sum(map(len, files.values())) > MAX_BYTES:
            raise InvalidSolution(f"solution {path} is larger than {MAX_BYTES >> 20} MB")
        return cls(path, kind, files)
