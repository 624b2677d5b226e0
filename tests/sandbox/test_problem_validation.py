"""Problem validation: a problem that is not a usable KernelBench problem gets a clear InvalidProblem naming the
rule it breaks (and the CLI exits 2 with that reason); a valid one gets its input and output spec."""

import json
import os
import subprocess
import sys

import pytest

from sandbox.errors import InvalidProblem, MisuseError
from sandbox.validate import validate_problem

BASE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(64, 32)]


def get_init_inputs():
    return []
"""


def _invalid(files, source, *needles, timeout=None):
    path = files.problem(source)
    with pytest.raises(InvalidProblem) as caught:
        validate_problem(path, "cpu", timeout=timeout)
    message = str(caught.value)
    assert str(path) in message
    for needle in needles:
        assert needle in message, message
    return message


def test_a_valid_problem_gets_its_spec(files, sources):
    spec = validate_problem(files.problem(sources["LINEAR_RELU"]), "cpu")
    assert spec["inputs"] == [{"shape": [64, 256], "dtype": "float32"}]
    assert spec["outputs"] == {"shape": [64, 128], "dtype": "float32"}
    assert spec["output_bytes"] == 64 * 128 * 4 and spec["input_bytes"] == 64 * 256 * 4
    assert spec["aliases_input"] is False


def test_invalid_problem_is_a_misuse_error():
    assert issubclass(InvalidProblem, MisuseError)


@pytest.mark.parametrize("name", ["Model", "get_inputs", "get_init_inputs"])
def test_missing_definitions(files, name):
    source = (
        BASE.replace("class Model(", "class Other(")
        if name == "Model"
        else BASE.replace(f"def {name}(", "def other_" + name + "(")
    )
    assert _invalid(files, source, f"defines no {name}")


def test_model_that_is_not_a_module(files):
    assert _invalid(files, BASE.replace("class Model(nn.Module):", "class Model:"), "subclass of torch.nn.Module")


def test_syntax_error(files):
    assert _invalid(files, BASE.replace("return torch.relu(x)", "return torch.relu(x"), "syntax error", "line")


def test_not_utf8(files):
    assert _invalid(files, BASE.encode() + b"\n# caf\xe9\n", "not UTF-8")


def test_missing_file(tmp_path):
    with pytest.raises(InvalidProblem, match="does not exist"):
        validate_problem(tmp_path / "nowhere.py", "cpu")


def test_import_error(files):
    assert _invalid(
        files, "import nonexistent_module_ks\n" + BASE, "importing the problem failed", "nonexistent_module_ks"
    )


def test_constructor_failure(files):
    source = BASE.replace("def get_init_inputs():\n    return []", "def get_init_inputs():\n    return [1, 2, 3]")
    assert _invalid(files, source, "constructing Model(*get_init_inputs()) failed")


def test_get_inputs_raising(files):
    assert _invalid(
        files,
        BASE.replace("return [torch.randn(64, 32)]", "raise KeyError('no data here')"),
        "get_inputs() failed",
        "no data here",
    )


def test_forward_raising(files):
    assert _invalid(files, BASE.replace("return torch.relu(x)", "return x @ x"), "Model.forward failed")


@pytest.mark.parametrize("output", ["x.sum().item()", "None", "'text'", "[x.tolist()]"])
def test_non_tensor_output(files, output):
    assert _invalid(files, BASE.replace("return torch.relu(x)", f"return {output}"), "must return a tensor")


def test_non_deterministic_forward_dropout_in_training_mode(files):
    source = BASE.replace("super().__init__()", "super().__init__()\n        self.drop = nn.Dropout(0.5)").replace(
        "return torch.relu(x)", "return self.drop(torch.relu(x))"
    )
    assert _invalid(files, source, "not deterministic")


def test_non_deterministic_inputs(files):
    source = "import os\n" + BASE.replace(
        "return [torch.randn(64, 32)]", "return [torch.randn(64, 32) + int.from_bytes(os.urandom(2), 'little')]"
    )
    assert _invalid(files, source, "get_inputs() is not deterministic")


def test_a_problem_that_hangs_at_import(files):
    message = _invalid(files, "import time\ntime.sleep(3600)\n" + BASE, "took too long", timeout=5)
    assert len(message) < 4000


def test_a_problem_that_crashes(files):
    assert _invalid(files, "import ctypes\nctypes.string_at(0)\n" + BASE, "crashed")


def test_cli_validate_prints_the_spec(files):
    proc = subprocess.run(
        [sys.executable, "-m", "sandbox", "validate", str(files.problem(BASE)), "--device", "cpu"],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    spec = json.loads(proc.stdout)
    assert spec["inputs"] == [{"shape": [64, 32], "dtype": "float32"}]
    assert spec["outputs"] == {"shape": [64, 32], "dtype": "float32"}


@pytest.mark.parametrize("problem", ["missing get_inputs", "hangs"])
def test_cli_exits_2_with_the_reason_on_an_invalid_problem(files, problem):
    source = (
        BASE.replace("def get_inputs(", "def other_inputs(")
        if problem == "missing get_inputs"
        else "import time\ntime.sleep(3600)\n" + BASE
    )
    env = {**os.environ, "KS_SANDBOX_BASELINE_TIMEOUT": "5"}
    proc = subprocess.run(
        [sys.executable, "-m", "sandbox", "validate", str(files.problem(source)), "--device", "cpu"],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout == ""
    assert "invalid problem" in proc.stderr
    assert ("defines no get_inputs" if problem == "missing get_inputs" else "took too long") in proc.stderr
