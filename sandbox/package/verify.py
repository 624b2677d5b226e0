"""Checking a built package the way a user meets it: installed into a fresh virtual environment, its tests run
from the sdist, with no network."""

import os
import re
import site
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from sandbox.errors import PackagingError

_TAIL = 20000
_FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.M)
_PASSED = re.compile(r"^\S+::(\S+) PASSED", re.M)


@dataclass
class CheckResult:
    ok: bool
    installed: str  # the sdist or wheel that was installed
    python: str  # the fresh environment's interpreter, left in place for further checks
    seconds: float
    log: str
    failed: list = field(default_factory=list)  # pytest's ids of the tests that failed or errored
    passed: list = field(default_factory=list)  # the names (with parameters) of the tests that passed


class PackageCheckFailed(PackagingError):
    """The built package's own tests failed in a fresh environment; the message names them, `log` has pytest's
    output and `result` the PackageResult of what was written."""

    def __init__(self, check, result):
        what = (
            f"its tests {', '.join(check.failed)} failed"
            if check.failed
            else "it did not install or its tests did not run"
        )
        super().__init__(
            f"the package {result.name} was built ({result.wheel or result.sdist}) but {what} in a "
            f"fresh virtual environment; the log says why (pass --no-check / check=False to skip)"
        )
        self.log, self.result, self.check = check.log, result, check


def fresh_venv(path):
    """A new virtual environment at PATH that sees this interpreter's packages (torch, setuptools, pytest) but
    not what is installed into it later; returns its python."""
    path = Path(path)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(path)], check=True)
    python = path / "bin" / "python"
    if sys.prefix != sys.base_prefix:
        # Run from a virtual environment, whose packages --system-site-packages does not reach: list them in a
        # .pth file (paths only: the .pth files inside them, editable installs among them, are not processed).
        purelib = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        Path(purelib, "_ks_parent.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return python


def _run(argv, cwd, log):
    # The tests must see only the package and the environment, not this process's Django settings or sources, nor
    # the options of a pytest session this runs under (PYTEST_ADDOPTS's -k would deselect the package's tests).
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "DJANGO_SETTINGS_MODULE") and not k.startswith("PYTEST_")
    }
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    log.append(f"$ {' '.join(map(str, argv))}\n{proc.stdout}{proc.stderr}")
    return proc.returncode == 0


def check_package(sdist, workdir, install=None):
    """Install INSTALL (default: the SDIST itself) into a fresh environment under WORKDIR and run the tests that
    ship in SDIST against it."""
    t0 = time.monotonic()
    workdir = Path(workdir).resolve()
    install = Path(install or sdist)
    python = fresh_venv(workdir / "venv")
    with tarfile.open(sdist) as tar:
        tar.extractall(workdir / "sdist", filter="data")
    (root,) = (workdir / "sdist").iterdir()
    log = []
    ok = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-build-isolation",
            "--no-deps",
            "--no-cache-dir",
            "--no-index",
            str(install.resolve()),
        ],
        workdir,
        log,
    )
    ok = ok and _run([str(python), "-m", "pytest", "-v", "-p", "no:cacheprovider", "tests"], root, log)
    text = "\n".join(log)
    failed, passed = list(dict.fromkeys(_FAILED.findall(text))), _PASSED.findall(text)
    return CheckResult(ok, str(install), str(python), round(time.monotonic() - t0, 3), text[-_TAIL:], failed, passed)
