"""KernelBench problems from a JSONL file or a KernelBench checkout, filtered by level, id, limit and shard."""
import hashlib
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

LEVELS = (1, 2, 3)
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
FIELDS = {"level": int, "problem_id": int, "name": str, "code": str}


class ProblemsError(ValueError):
    """The problem source or a filter is unusable; the message says what to fix."""


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


def _checked(data, where):
    if not isinstance(data, dict):
        raise ProblemsError(f"{where}: expected a JSON object with {', '.join(FIELDS)}")
    missing = [k for k in FIELDS if k not in data]
    if missing:
        raise ProblemsError(f"{where}: missing {', '.join(missing)} (each line needs {', '.join(FIELDS)})")
    for key, kind in FIELDS.items():
        if not isinstance(data[key], kind) or (kind is int and isinstance(data[key], bool)):
            raise ProblemsError(f"{where}: {key} must be {kind.__name__}, not {data[key]!r:.60}")
    if not NAME.fullmatch(data["name"]):
        raise ProblemsError(f"{where}: name {data['name']!r} must be letters, digits, '_', '.' or '-' "
                            f"(it names files and jobs)")
    if data["level"] < 1:
        raise ProblemsError(f"{where}: level must be 1 or more, not {data['level']}")
    return BenchProblem.from_json(data)


def _from_jsonl(path):
    problems = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ProblemsError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
        problems.append(_checked(data, f"{path}:{number}"))
    return problems


def _from_checkout(root):
    """A KernelBench checkout (its KernelBench/level1/19_ReLU.py, ...) or that KernelBench/ folder itself."""
    base = root / "KernelBench" if (root / "KernelBench").is_dir() else root
    folders = sorted(p for p in base.glob("level*") if p.is_dir() and p.name[5:].isdigit())
    if not folders:
        raise ProblemsError(f"{root} holds no level1/, level2/, ... folders: give a KernelBench checkout or a "
                            f"problems.jsonl file")
    problems = []
    for folder in folders:
        for file in sorted(folder.glob("*.py")):
            match = re.match(r"(\d+)_", file.name)
            if not match:
                continue  # helpers beside the problems, not problems
            problems.append(_checked({"level": int(folder.name[5:]), "problem_id": int(match.group(1)),
                                      "name": file.stem, "code": file.read_text(encoding="utf-8")}, str(file)))
    return problems


def read_problems(path):
    """Every problem of PATH (a .jsonl file or a KernelBench checkout), sorted by level and id."""
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


def parse_levels(text):
    """'1,2,3' -> (1, 2, 3)."""
    try:
        levels = tuple(sorted({int(x) for x in text.split(",") if x.strip()}))
    except ValueError:
        raise ProblemsError(f"--levels takes comma-separated level numbers such as 1,2,3, not {text!r}") from None
    if not levels or min(levels) < 1:
        raise ProblemsError(f"--levels takes level numbers from 1, such as 1,2,3, not {text!r}")
    return levels


def parse_ids(text):
    """'19,1:20-23' -> [(None, 19, 19), (1, 20, 23)]: ids in any selected level, or in the level before ':'."""
    spans = []
    for token in filter(None, (t.strip() for t in text.split(","))):
        match = re.fullmatch(r"(?:(\d+):)?(\d+)(?:-(\d+))?", token)
        if not match:
            raise ProblemsError(f"--problem-ids takes ids, ranges and level:id such as 19,20-23,2:5 "
                                f"(not {token!r})")
        level, low, high = match.groups()
        spans.append((int(level) if level else None, int(low), int(high or low)))
    return spans


def parse_shard(text):
    """'2/4' -> (2, 4): the second of four interleaved parts."""
    match = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise ProblemsError(f"--shard takes K/N with 1 <= K <= N, such as 1/4, not {text!r}")
    return int(match.group(1)), int(match.group(2))


def select(problems, levels=None, ids=None, names=None, limit=None, shard=None):
    """The problems of LEVELS, matching IDS spans or NAMES, at most LIMIT per level, then part K of N (SHARD).

    Shards interleave (problem i goes to part i mod N) so that each part holds a fair mix of levels."""
    chosen = [p for p in problems if levels is None or p.level in levels]
    if ids:
        chosen = [p for p in chosen if any((lv is None or lv == p.level) and lo <= p.problem_id <= hi
                                           for lv, lo, hi in ids)]
    if names:
        unknown = set(names) - {p.name for p in problems}
        if unknown:
            raise ProblemsError(f"no problem named {', '.join(sorted(unknown))}")
        chosen = [p for p in chosen if p.name in names]
    if limit is not None:
        chosen = [p for level in sorted({p.level for p in chosen}) for p in [q for q in chosen if q.level == level][:limit]]
    if shard is not None:
        k, n = shard
        chosen = chosen[k - 1::n]
    return chosen
