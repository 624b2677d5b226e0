"""What the GPU benchmarks share: the GPU check, KernelBench problems and solutions, a private sandbox cache, tables."""

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

from sandbox import problems_file

REPO = Path(__file__).resolve().parents[1]
SOLUTIONS = REPO / "tests" / "gpu" / "solutions"
PROBLEM_SOURCES = problems_file.SOURCES  # bench.heuristic_kernelbench and bench.rl_pipeline look here too


def gpu_missing(name):
    """None where CUDA is usable, else the line to print: GPU benchmarks skip themselves on CPU machines."""
    import torch

    if torch.cuda.is_available():
        return None
    return f"bench.{name}: needs a CUDA GPU (torch.cuda.is_available() is False here); skipped"


def kernelbench_problem(level, name, folder):
    """Write KernelBench's problem LEVEL/NAME into FOLDER; returns its path (SystemExit if the data is missing)."""
    source = problems_file.locate()
    if source is None:
        raise SystemExit(problems_file.missing_message())
    try:
        problem = problems_file.find(problems_file.read_problems(source), level, name)
    except problems_file.ProblemsError as exc:
        raise SystemExit(f"{exc} ({source})") from None
    path = Path(folder) / f"level{level}_{name}.py"
    path.write_text(problem.code)
    return path


@contextmanager
def private_cache(prefix):
    """A fresh, world-readable KS_CACHE_DIR (jailed workers read it as other uids), removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    os.chmod(folder, 0o755)
    previous = os.environ.get("KS_CACHE_DIR")
    os.environ["KS_CACHE_DIR"] = str(folder)
    try:
        yield folder
    finally:
        if previous is None:
            os.environ.pop("KS_CACHE_DIR", None)
        else:
            os.environ["KS_CACHE_DIR"] = previous
        shutil.rmtree(folder, ignore_errors=True)


def table(headers, rows):
    """A plain text table, columns as wide as their widest cell."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))) for row in cells
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
