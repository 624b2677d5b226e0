"""studio.lib.files: what the editor may send for evaluation."""

import pytest

from studio.lib.files import BadFiles, check_files


def test_it_accepts_a_native_workspace_and_sorts_it():
    files = {"kernels/k.cu": "__global__ void k() {}", "model_new.py": "x = 1", "binding.cpp": "//"}
    assert list(check_files(files, 1000)) == ["binding.cpp", "kernels/k.cu", "model_new.py"]


@pytest.mark.parametrize(
    "files, reason",
    [
        ({}, "at least model_new.py"),
        ({"model_new.py": "", "kernels/../x.cpp": ""}, "not a plain relative path"),
        ({"model_new.py": "", "/abs/k.cpp": ""}, "not a plain relative path"),
        ({"model_new.py": "", "kernels/k.py": ""}, "not a solution file"),
        ({"model_new.py": 3}, "a path and a text"),
        ({"model_new.py": "\ud800"}, "lone surrogate"),
    ],
)
def test_it_rejects_what_the_sandbox_would_not_build(files, reason):
    with pytest.raises(BadFiles, match=reason):
        check_files(files, 1000)


def test_it_counts_bytes_not_characters_against_the_limit():
    with pytest.raises(BadFiles, match="the limit is 10 bytes"):
        check_files({"model_new.py": "é" * 6}, 10)
