"""Building a rendered package: the sdist through setuptools' PEP 517 hook, the wheel from that sdist with pip
against the installed torch (--no-build-isolation)."""

import os
import subprocess
import sys
from pathlib import Path

from sandbox import settings
from sandbox.errors import BuildError
from sandbox.native.build import summarize_errors

_SDIST = "import sys; from setuptools import build_meta; print(build_meta.build_sdist(sys.argv[1]))"


def _run(argv, cwd, what):
    env = {**os.environ, "MAX_JOBS": str(settings.MAX_JOBS)}
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    output = proc.stdout + proc.stderr
    if proc.returncode:
        raise BuildError(f"{what} failed: {summarize_errors(output) or 'see the log'}", output)
    return proc.stdout


def build_sdist(tree, out_dir):
    """DIR/<name>-<version>.tar.gz from the package TREE."""
    name = _run([sys.executable, "-c", _SDIST, str(Path(out_dir).resolve())], tree, "making the sdist")
    return Path(out_dir).resolve() / name.strip().splitlines()[-1]


def build_wheel(sdist, out_dir):
    """Compile SDIST into a wheel in OUT_DIR, against this interpreter's torch; returns the wheel's path."""
    out_dir = Path(out_dir).resolve()
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-build-isolation",
            "--no-deps",
            "--no-index",
            "--no-cache-dir",
            "-q",
            "-w",
            str(out_dir),
            str(Path(sdist).resolve()),
        ],
        out_dir,
        "building the wheel",
    )
    stem = Path(sdist).name.removesuffix(".tar.gz")
    made = sorted(out_dir.glob(f"{stem}-*.whl"), key=lambda p: p.stat().st_mtime)
    if not made:
        raise BuildError(f"pip reported success but wrote no {stem}-*.whl into {out_dir}")
    return made[-1]


def wheel_buildable(device):
    """(True, "") where this machine can compile the package; else (False, why)."""
    if device == "cpu":
        return True, ""
    import torch
    from torch.utils.cpp_extension import CUDA_HOME

    if torch.version.cuda is None:
        return False, "this torch has no CUDA, so CUDA kernels cannot be compiled here (a GPU worker builds the wheel)"
    if CUDA_HOME is None:
        return False, "no CUDA toolkit found (set CUDA_HOME), so CUDA kernels cannot be compiled here"
    return True, ""
