"""KernelBench problems from JSONL or a checkout; levels, ids, names, limit and shard filters; bad input."""

import json
from pathlib import Path

import pytest

from training.evaluation.problems import ProblemsError, parse_ids, parse_levels, parse_shard, read_problems, select

SHARED = Path(__file__).resolve().parents[3] / "shared" / "kernelbench" / "problems.jsonl"
CODE = "import torch\n"


def write_jsonl(path, rows):
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows))
    return path


def rows(*spec):
    return [{"level": lv, "problem_id": pid, "name": f"{pid}_P{lv}", "code": CODE} for lv, pid in spec]


@pytest.mark.skipif(not SHARED.exists(), reason="../shared/kernelbench is not beside this checkout")
def test_it_reads_the_shared_kernelbench_problems():
    problems = read_problems(SHARED)
    assert [sum(p.level == lv for p in problems) for lv in (1, 2, 3)] == [75, 75, 38]
    first = problems[0]
    assert (first.level, first.problem_id, first.key) == (1, 1, "level1/1_Square_matrix_multiplication_")
    assert "class Model" in first.code


def test_it_reads_a_kernelbench_checkout(tmp_path):
    for rel in ("KernelBench/level1/19_ReLU.py", "KernelBench/level1/2_Matmul.py", "KernelBench/level2/7_Gemm.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(f"# {rel}\n")
    (tmp_path / "KernelBench/level1/utils.py").write_text("# not a problem\n")
    problems = read_problems(tmp_path)
    assert [p.key for p in problems] == ["level1/2_Matmul", "level1/19_ReLU", "level2/7_Gemm"]
    assert problems[1].problem_id == 19 and problems[1].code == "# KernelBench/level1/19_ReLU.py\n"
    assert [p.key for p in read_problems(tmp_path / "KernelBench")] == [p.key for p in problems]


def test_filters_select_levels_ids_names_and_a_limit_per_level(tmp_path):
    problems = read_problems(write_jsonl(tmp_path / "p.jsonl", rows((2, 1), (1, 3), (1, 1), (1, 2), (2, 2), (3, 1))))
    keys = lambda ps: [(p.level, p.problem_id) for p in ps]  # noqa: E731
    assert keys(problems) == [(1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (3, 1)]
    assert keys(select(problems, levels=(1, 3))) == [(1, 1), (1, 2), (1, 3), (3, 1)]
    assert keys(select(problems, ids=parse_ids("2-3,3:1"))) == [(1, 2), (1, 3), (2, 2), (3, 1)]
    assert keys(select(problems, levels=(2,), ids=parse_ids("1"))) == [(2, 1)]
    assert keys(select(problems, names={"2_P2"})) == [(2, 2)]
    assert keys(select(problems, limit=1)) == [(1, 1), (2, 1), (3, 1)]
    with pytest.raises(ProblemsError, match="no problem named 9_Nope"):
        select(problems, names={"9_Nope"})


def test_shards_interleave_and_together_cover_every_problem_once(tmp_path):
    problems = read_problems(write_jsonl(tmp_path / "p.jsonl", rows(*[(lv, i) for lv in (1, 2) for i in range(1, 6)])))
    parts = [select(problems, shard=(k, 3)) for k in (1, 2, 3)]
    assert sorted(p.key for part in parts for p in part) == sorted(p.key for p in problems)
    assert [len(part) for part in parts] == [4, 3, 3]
    assert {p.level for p in parts[0]} == {1, 2}


@pytest.mark.parametrize(
    "line,message",
    [
        ("{not json", r"p.jsonl:2 is not JSON"),
        ('{"level": 1, "problem_id": 2, "name": "2_X"}', r"p.jsonl:2: missing code"),
        ('{"level": "1", "problem_id": 2, "name": "2_X", "code": ""}', r"p.jsonl:2: level must be int"),
        ('{"level": 1, "problem_id": 2, "name": "../../etc", "code": ""}', r"name '../../etc' must be"),
        ('{"level": 1, "problem_id": 1, "name": "1_Y", "code": ""}', r"share level 1"),
        ("[1, 2]", r"p.jsonl:2: expected a JSON object"),
    ],
)
def test_it_rejects_a_bad_line_and_says_which(tmp_path, line, message):
    path = write_jsonl(tmp_path / "p.jsonl", rows((1, 1)) + [line])
    with pytest.raises(ProblemsError, match=message):
        read_problems(path)


def test_it_rejects_missing_or_empty_sources(tmp_path):
    with pytest.raises(ProblemsError, match="does not exist"):
        read_problems(tmp_path / "nowhere.jsonl")
    with pytest.raises(ProblemsError, match="holds no problems"):
        read_problems(write_jsonl(tmp_path / "empty.jsonl", []))
    with pytest.raises(ProblemsError, match="no level1/"):
        read_problems(tmp_path)


@pytest.mark.parametrize(
    "parse,text",
    [
        (parse_levels, "1,x"),
        (parse_levels, "0"),
        (parse_levels, ""),
        (parse_ids, "1;2"),
        (parse_ids, "a-b"),
        (parse_shard, "0/2"),
        (parse_shard, "3/2"),
        (parse_shard, "1"),
    ],
)
def test_it_rejects_malformed_filters(parse, text):
    with pytest.raises(ProblemsError, match="takes"):
        parse(text)


def test_filters_parse():
    assert parse_levels("3, 1,1") == (1, 3)
    assert parse_ids("19,1:20-23") == [(None, 19, 19), (1, 20, 23)]
    assert parse_shard("2/4") == (2, 4)
