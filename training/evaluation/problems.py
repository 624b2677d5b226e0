"""KernelBench problems for an evaluation: read from a problems.jsonl or a checkout (sandbox.problems_file), then
selected by level, id, name, limit and shard."""

import re

from sandbox.problems_file import BenchProblem, ProblemsError, read_problems

# The file's reader is the sandbox's (every package reads problems.jsonl through it); selection is an evaluation's.
__all__ = ["BenchProblem", "ProblemsError", "read_problems", "parse_levels", "parse_ids", "parse_shard", "select"]


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
            raise ProblemsError(f"--problem-ids takes ids, ranges and level:id such as 19,20-23,2:5 (not {token!r})")
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
        chosen = [
            p for p in chosen if any((lv is None or lv == p.level) and lo <= p.problem_id <= hi for lv, lo, hi in ids)
        ]
    if names:
        unknown = set(names) - {p.name for p in problems}
        if unknown:
            raise ProblemsError(f"no problem named {', '.join(sorted(unknown))}")
        chosen = [p for p in chosen if p.name in names]
    if limit is not None:
        chosen = [
            p for level in sorted({p.level for p in chosen}) for p in [q for q in chosen if q.level == level][:limit]
        ]
    if shard is not None:
        k, n = shard
        chosen = chosen[k - 1 :: n]
    return chosen
