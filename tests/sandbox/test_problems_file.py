"""The one problems.jsonl reader: a static file's every line counts (a broken last line is an error, not a cut
write), rows are checked field by field, and the file is found where none is named."""

import json

import pytest

from sandbox import problems_file
from sandbox.problems_file import ProblemsError, find, locate, read_problems

ROW = {"level": 1, "problem_id": 19, "name": "19_ReLU", "code": "import torch\n"}


def test_a_broken_last_line_is_an_error_that_names_it(tmp_path):
    path = tmp_path / "problems.jsonl"
    path.write_text(json.dumps(ROW) + "\n" + '{"level": 1, "problem_id": 20')
    with pytest.raises(ProblemsError, match=r"problems.jsonl:2 is not JSON"):
        read_problems(path)


def test_rows_are_checked_and_found_by_level_and_name(tmp_path):
    path = tmp_path / "problems.jsonl"
    path.write_text(json.dumps(ROW) + "\n" + json.dumps({**ROW, "problem_id": 20, "name": "20 LeakyReLU"}) + "\n")
    with pytest.raises(ProblemsError, match=r"problems.jsonl:2: name '20 LeakyReLU' must be letters"):
        read_problems(path)
    path.write_text(json.dumps(ROW))  # a hand-written file may end without its newline
    assert find(read_problems(path), 1, "19_ReLU").key == "level1/19_ReLU"
    with pytest.raises(ProblemsError, match="no level 2 problem named 19_ReLU"):
        find(read_problems(path), 2, "19_ReLU")


def test_the_file_is_the_named_one_else_the_first_default_that_exists(tmp_path, monkeypatch):
    monkeypatch.setenv("KS_KERNELBENCH_PROBLEMS", str(tmp_path / "mine.jsonl"))
    assert locate() == tmp_path / "mine.jsonl"
    monkeypatch.delenv("KS_KERNELBENCH_PROBLEMS")
    second = tmp_path / "shared.jsonl"
    monkeypatch.setattr(problems_file, "SOURCES", (tmp_path / "absent.jsonl", second))
    assert locate() is None
    second.write_text(json.dumps(ROW) + "\n")
    assert locate() == second
