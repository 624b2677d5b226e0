"""Every jailed worker starts through sandbox.worker_start (issue 21): the reference and candidate workers and the
synthesis probe parse their descriptors alike, and a problem is opened with one wording for every failure, so the
reference worker's refusal reads exactly as open_problem's."""

import os
import subprocess
import sys

import pytest

from sandbox.errors import InvalidProblem
from sandbox.validate import validate_problem
from sandbox.worker_start import ProblemRejected, open_problem

VALID = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(8, 4)]


def get_init_inputs():
    return []
"""


@pytest.mark.parametrize("module", ["sandbox.workers.reference", "sandbox.workers.candidate"])
def test_a_worker_prints_its_help_as_a_jailed_worker(module):
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    proc = subprocess.run(
        [sys.executable, "-m", module, "--help"], check=False, capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"python -m {module}" in proc.stdout
    assert "read_fd" in proc.stdout and "the sandbox's Worker starts it in the jail" in proc.stdout


def _start(path, **extra):
    return {"device": "cpu", "problem": str(path), "init_seed": 1, "validation_seed": 2, **extra}


def test_open_problem_gives_the_module_model_spec_and_variants_where_asked(files):
    path = files.problem(VALID)
    opened = open_problem(_start(path))
    assert opened.spec["inputs"] == [{"shape": [8, 4], "dtype": "float32"}] and opened.variants == []
    variants = open_problem(_start(path, shape_check=True)).variants
    assert variants and all(v["kind"] == "batch" for v in variants)


@pytest.mark.parametrize(
    "source, wording",
    [
        ("import nonexistent_module_ks\n" + VALID, "importing the problem failed: ModuleNotFoundError"),
        (VALID.replace("return torch.relu(x)", "return x @ x"), "Model.forward failed on get_inputs()"),
        (VALID.replace("class Model(nn.Module):", "class Model:"), "Model must be a subclass of torch.nn.Module"),
    ],
    ids=["fails to import", "forward fails", "not a module"],
)
def test_the_reference_worker_refuses_a_problem_in_open_problems_words(files, source, wording):
    path = files.problem(source)
    with pytest.raises(ProblemRejected) as rejected:
        open_problem(_start(path))
    assert rejected.value.reason.startswith(wording) and "Traceback" in rejected.value.log
    with pytest.raises(InvalidProblem) as invalid:
        validate_problem(path, "cpu")
    assert str(invalid.value) == f"invalid problem {path}: {rejected.value.reason}"
