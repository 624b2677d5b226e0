"""`make lint` (run by `make test`, so by CI): ruff's rules, ruff's format and hadolint each fail on a finding."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _tool(name):
    path = BIN / name
    if not path.exists():
        path = shutil.which(name)
    assert path, f"{name} is not installed: `make setup` installs it (pyproject's test extra)"
    return str(path)


def test_the_lint_target_runs_ruff_check_ruff_format_and_hadolint():
    out = subprocess.run(["make", "-n", "lint"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "ruff check ." in out
    assert "ruff format --check ." in out
    assert "hadolint docker/*.Dockerfile" in out
    test = subprocess.run(["make", "-n", "test"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert test.index("ruff check") < test.index("pytest tests"), "make test lints before it tests"


@pytest.mark.parametrize(
    "source, code",
    [
        ("try:\n    pass\nexcept Exception:\n    pass\n", "BLE001"),
        ("import os\n", "F401"),
        ("exec('1')\n", "S102"),
    ],
)
def test_ruff_check_fails_on_a_rule_of_the_project(tmp_path, source, code):
    (tmp_path / "bad.py").write_text(source)
    done = subprocess.run(
        [_tool("ruff"), "check", "--config", str(ROOT / "pyproject.toml"), "--no-cache", "bad.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1 and code in done.stdout, done.stdout + done.stderr


def test_ruff_format_check_fails_on_unformatted_code(tmp_path):
    (tmp_path / "ugly.py").write_text("x = {  'a':1 }\n")
    done = subprocess.run(
        [_tool("ruff"), "format", "--check", "--config", str(ROOT / "pyproject.toml"), "--no-cache", "ugly.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1 and "ugly.py" in done.stdout + done.stderr
    (tmp_path / "ugly.py").write_text('x = {"a": 1}\n')
    again = subprocess.run(
        [_tool("ruff"), "format", "--check", "--config", str(ROOT / "pyproject.toml"), "--no-cache", "ugly.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert again.returncode == 0, again.stdout + again.stderr


def test_hadolint_fails_on_a_dockerfile_finding_and_passes_the_project_images(tmp_path):
    (tmp_path / "bad.Dockerfile").write_text("FROM debian:bookworm\nRUN cd /tmp && make\n")
    config = ["--config", str(ROOT / ".hadolint.yaml")]
    done = subprocess.run([_tool("hadolint"), *config, "bad.Dockerfile"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 1 and "DL3003" in done.stdout, done.stdout + done.stderr
    images = sorted(str(p) for p in (ROOT / "docker").glob("*.Dockerfile"))
    assert images
    ok = subprocess.run([_tool("hadolint"), *config, *images], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
