"""KernelBench's problems file (problems.jsonl rows of level, problem_id, name, code) or a KernelBench checkout: the
one reader every package calls, the BenchProblem record, and where the file is found when none is named."""

import hashlib
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from sandbox.jsonl import JsonlError, iter_jsonl

REPO = Path(__file__).resolve().parents[1]
# Where KernelBench's problems are looked for when none is named, first found first: the copy GPU machines carry
# (only the repository travels there), then the shared checkout beside the repository.
SOURCES = (
    REPO / "tests" / "gpu" / "data" / "problems.jsonl",
    REPO.parent / "shared" / "kernelbench" / "problems.jsonl",
)
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
FIELDS = {"level": int, "problem_id": int, "name": str, "code": str}


class ProblemsError(ValueError):
    """The problems file is missing or a row is malformed; the message names the file, line and field to fix."""


@dataclass(frozen=True)
class BenchProblem:
    level: int
    problem_id: int
    name: str  # KernelBench's file stem, e.g. 19_ReLU
    code: str

    @property
    def key(self):
        """The problem's identity inside an evaluation (also its folder under episodes/)."""
        return f"level{self.level}/{self.name}"

    @property
    def sha256(self):
        return hashlib.sha256(self.code.encode()).hexdigest()

    def write(self, folder):
        """Write the problem file into FOLDER; returns its path."""
        path = Path(folder) / f"{self.name}.py"
        path.write_text(self.code, encoding="utf-8")
        return path

    def to_json(self):
        return asdict(self)

    @classmethod
    def from_json(cls, data):
        return cls(**{k: data[k] for k in FIELDS})


def checked(data, where):
    """The BenchProblem of one row DATA, or a ProblemsError naming WHERE and what is wrong with it."""
    if not isinstance(data, dict):
        raise ProblemsError(f"{where}: expected a JSON object with {', '.join(FIELDS)}")
    missing = [k for k in FIELDS if k not in data]
    if missing:
        raise ProblemsError(f"{where}: missing {', '.join(missing)} (each line needs {', '.join(FIELDS)})")
    for key, kind in FIELDS.items():
        if not isinstance(data[key], kind) or (kind is int and isinstance(data[key], bool)):
            raise ProblemsError(f"{where}: {key} must be {kind.__name__}, not {data[key]!r:.60}")
    if not NAME.fullmatch(data["name"]):
        raise ProblemsError(
            f"{where}: name {data['name']!r} must be letters, digits, '_', '.' or '-' (it names files and jobs)"
        )
    if data["level"] < 1:
        raise ProblemsError(f"{where}: level must be 1 or more, not {data['level']}")
    return BenchProblem.from_json(data)


def _from_jsonl(path):
    try:
        return [checked(data, f"{path}:{number}") for number, data in iter_jsonl(path, appending=False)]
    except JsonlError as exc:
        raise ProblemsError(str(exc)) from None


def _from_checkout(root):
    """A KernelBench checkout (its KernelBench/level1/19_ReLU.py, ...) or that KernelBench/ folder itself."""
    base = root / "KernelBench" if (root / "KernelBench").is_dir() else root
    folders = sorted(p for p in base.glob("level*") if p.is_dir() and p.name[5:].isdigit())
    if not folders:
        raise ProblemsError(
            f"{root} holds no level1/, level2/, ... folders: give a KernelBench checkout or a problems.jsonl file"
        )
    problems = []
    for folder in folders:
        for file in sorted(folder.glob("*.py")):
            match = re.match(r"(\d+)_", file.name)
            if not match:
                continue  # helpers beside the problems, not problems
            problems.append(
                checked(
                    {
                        "level": int(folder.name[5:]),
                        "problem_id": int(match.group(1)),
                        "name": file.stem,
                        "code": file.read_text(encoding="utf-8"),
                    },
                    str(file),
                )
            )
    return problems


def read_problems(path):
    """Every problem of PATH (a problems.jsonl file or a KernelBench checkout), sorted by level and id."""
    path = Path(path)
    if path.is_dir():
        problems = _from_checkout(path)
    elif path.is_file():
        problems = _from_jsonl(path)
    else:
        raise ProblemsError(f"{path} does not exist: give a KernelBench checkout or a problems.jsonl file")
    seen = {}
    for p in problems:
        for key in ((p.level, p.problem_id), p.key):
            if key in seen:
                raise ProblemsError(f"{path}: {p.key} and {seen[key].key} share level {p.level} and id or name")
            seen[key] = p
    if not problems:
        raise ProblemsError(f"{path} holds no problems")
    return sorted(problems, key=lambda p: (p.level, p.problem_id))


def locate():
    """The problems file to use when none is named: KS_KERNELBENCH_PROBLEMS where set, else the first of SOURCES
    that exists; None when there is none."""
    named = os.environ.get("KS_KERNELBENCH_PROBLEMS")
    if named:
        return Path(named)
    return next((p for p in SOURCES if p.is_file()), None)


def missing_message():
    """What to do when locate() found nothing."""
    return (
        f"KernelBench problems not found: copy ../shared/kernelbench/problems.jsonl to "
        f"{SOURCES[0].relative_to(REPO)}, or set KS_KERNELBENCH_PROBLEMS to a problems.jsonl or a checkout"
    )


def find(problems, level, name):
    """The problem of LEVEL named NAME among PROBLEMS, or a ProblemsError."""
    for problem in problems:
        if problem.level == level and problem.name == name:
            return problem
    raise ProblemsError(f"no level {level} problem named {name}")
