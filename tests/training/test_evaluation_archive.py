"""An evaluation's solutions packed as data: pack, list and unpack round trips, and --retime reading the archive."""

import gzip
import json
import shutil
from pathlib import Path

import pytest

from training.evaluation import archive
from training.evaluation.folder import EvalFolder
from training.evaluation.retime import exported_files, stale

STORED = Path(__file__).resolve().parents[2] / "bench" / "results" / "kernelbench-h100"


def test_pack_then_unpack_gives_back_every_solution_byte_for_byte_and_removes_the_files(tmp_path):
    sources = {"strict/level1/19_ReLU": "print('relu')\n", "strict/level2/9_Gemm": "x = 'é'\n"}
    for key, text in sources.items():
        (tmp_path / "episodes" / key).mkdir(parents=True)
        (tmp_path / "episodes" / key / "solution.py").write_text(text)
        (tmp_path / "episodes" / key / "verdict.json").write_text("{}")
    packed = archive.pack(tmp_path)
    assert not list((tmp_path / "episodes").rglob("solution.py"))
    assert (tmp_path / "episodes" / "strict/level1/19_ReLU" / "verdict.json").exists()  # only solutions move
    assert [r["key"] for r in archive.read(packed)] == sorted(sources)
    first = packed.read_bytes()
    archive.unpack(packed, tmp_path / "out")
    for key, text in sources.items():
        assert (tmp_path / "out" / "episodes" / key / "solution.py").read_text() == text
    archive.pack(tmp_path / "out")  # the same solutions pack to the same bytes (no timestamp in the gzip header)
    assert (tmp_path / "out" / archive.ARCHIVE).read_bytes() == first


def test_unpack_of_a_name_not_in_the_archive_and_a_broken_archive_are_errors_that_say_what_to_do(tmp_path):
    (tmp_path / "episodes" / "a" / "level1" / "x").mkdir(parents=True)
    (tmp_path / "episodes" / "a" / "level1" / "x" / "solution.py").write_text("pass\n")
    packed = archive.pack(tmp_path)
    with pytest.raises(archive.ArchiveError, match="none of nope is in .* list ARCHIVE"):
        archive.unpack(packed, tmp_path, names={"nope"})
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(b"not gzip")
    with pytest.raises(archive.ArchiveError, match="is not a gzipped JSONL"):
        archive.read(broken)
    with pytest.raises(archive.ArchiveError, match="pack takes a sweep's output folder"):
        archive.pack(tmp_path / "missing")
    assert archive.main(["unpack", str(tmp_path / "none.gz")]) == 2


def test_the_stored_h100_sweep_keeps_one_solution_per_correct_result_and_retime_reads_them_from_the_archive(tmp_path):
    folder_path = tmp_path / "kb"
    shutil.copytree(STORED, folder_path)
    with gzip.open(folder_path / archive.ARCHIVE, "rt") as lines:
        keys = {json.loads(line)["key"] for line in lines}
    folder = EvalFolder(folder_path)
    correct = {f"{arm}/{key}" for (arm, key), r in folder.finished().items() if r.correct}
    assert keys == correct and len(keys) == 124
    todo = stale(folder)
    assert todo, "the stored sweep has results measured under an older protocol"
    for result, solution in todo:
        assert solution.is_file() and f"{result.arm}/{result.key}" in keys
        assert exported_files(solution) is not None  # each one is an exported workspace --retime can rebuild
