"""What the GPU benchmarks share: the GPU check, KernelBench problems and solutions, a private sandbox cache, tables."""
import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOLUTIONS = REPO / "tests" / "gpu" / "solutions"
PROBLEM_SOURCES = (REPO / "tests" / "gpu" / "data" / "problems.jsonl",
                   REPO.parent / "shared" / "kernelbench" / "problems.jsonl")


def gpu_missing(name):
    """None where CUDA is usable, else the line to print: GPU benchmarks skip themselves on CPU machines."""
    import torch
    if torch.cuda.is_available():
        return None
    return f"bench.{name}: needs a CUDA GPU (torch.cuda.is_available() is False here); skipped"


def kernelbench_problem(level, name, folder):
    """Write KernelBench's problem LEVEL/NAME into FOLDER; returns its path (SystemExit if the data is missing)."""
    source = next((p for p in PROBLEM_SOURCES if p.is_file()), None)
    if source is None:
        raise SystemExit(f"KernelBench problems not found: copy ../shared/kernelbench/problems.jsonl to "
                         f"{PROBLEM_SOURCES[0].relative_to(REPO)}")
    for line in source.read_text().splitlines():
        row = json.loads(line) if line.strip() else None
        if row and row["level"] == level and row["name"] == name:
            path = Path(folder) / f"level{level}_{name}.py"
            path.write_text(row["code"])
            return path
    raise SystemExit(f"no level {level} problem named {name} in {source}")


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
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
             for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
