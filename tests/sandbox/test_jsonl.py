"""The one JSONL helper: readers leave a line still being written alone, the writer repairs a crash's cut line,
appends from many processes stay whole lines, and a whole-file write is atomic."""

import json
import multiprocessing

import pytest

from sandbox.jsonl import JsonlError, append_jsonl, read_jsonl, repair_jsonl, write_jsonl


def test_a_reader_leaves_out_a_cut_last_line_without_touching_the_file(tmp_path):
    path = tmp_path / "a.jsonl"
    append_jsonl(path, {"i": 0})
    with open(path, "a") as fh:
        fh.write('{"i": 1, "cut')
    assert read_jsonl(path) == [{"i": 0}]
    assert path.read_text() == '{"i": 0}\n{"i": 1, "cut'  # only the writer repairs


def test_a_whole_last_line_without_its_newline_is_read(tmp_path):
    path = tmp_path / "hand-written.jsonl"
    path.write_text('{"i": 0}\n\n{"i": 1}')
    assert read_jsonl(path) == [{"i": 0}, {"i": 1}]


def test_the_writer_repairs_a_cut_line_and_completes_a_whole_one(tmp_path):
    path = tmp_path / "a.jsonl"
    append_jsonl(path, {"i": 0})
    with open(path, "a") as fh:
        fh.write('{"i": 1, "cut')
    repair_jsonl(path)
    assert path.read_text() == '{"i": 0}\n'
    with open(path, "a") as fh:
        fh.write('{"i": 2}')
    repair_jsonl(path)
    append_jsonl(path, {"i": 3})
    assert read_jsonl(path) == [{"i": 0}, {"i": 2}, {"i": 3}]
    only = tmp_path / "only.jsonl"
    only.write_text('{"cut')
    repair_jsonl(only)
    assert only.read_text() == ""


def test_a_bad_line_in_the_middle_is_an_error_that_names_it_or_skipped_when_asked(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"i": 0}\nnot json\n{"i": 2}\n')
    with pytest.raises(JsonlError, match=r"a.jsonl:2 is not JSON"):
        read_jsonl(path)
    assert read_jsonl(path, skip_bad=True) == [{"i": 0}, {"i": 2}]
    assert read_jsonl(tmp_path / "missing.jsonl") == []


def _append_many(path, who):
    for i in range(200):
        append_jsonl(path, {"who": who, "i": i, "pad": "x" * 2000})


def test_appends_from_several_processes_stay_whole_lines(tmp_path):
    path = tmp_path / "shared.jsonl"
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_append_many, args=(path, who)) for who in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    lines = path.read_text().splitlines()
    assert len(lines) == 600 and all(json.loads(line)["pad"] == "x" * 2000 for line in lines)


def test_a_whole_file_write_replaces_it_atomically_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "out" / "rows.jsonl"
    write_jsonl(path, [{"i": 0}, {"i": 1}])
    write_jsonl(path, [{"i": 2}])
    assert read_jsonl(path) == [{"i": 2}]
    assert [p.name for p in path.parent.iterdir()] == ["rows.jsonl"]
