"""Fixtures shared by every test package."""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

# The sandbox cache of this test run (KS_CACHE_DIR): builds, precompiled headers and baselines made once and shared
# by every test package and every parallel worker (pytest-xdist workers inherit it from the controller). Beside the
# default cache (~/.cache/kernel-studio), not under /tmp: the jail gives solutions a private /tmp only when no folder
# it must keep lies under it, and the sandbox tests check that it does.
RUN_CACHE_ENV = "KS_TEST_RUN_CACHE"
# load_inline builds against torch's full header alone: the light headers (sandbox/native/light.py) compile each unit
# twice and precompile four headers, a loss on the suite's two cores (tests/sandbox/test_inline_build.py 148 s with
# them, 111 s without). tests/sandbox/test_inline_light.py turns them on where it tests them; KS_INLINE_LIGHT_HEADERS
# set by the caller wins.
os.environ.setdefault("KS_INLINE_LIGHT_HEADERS", "False")
_OWNED = pytest.StashKey[Path]()  # the run cache, in the process that made it (and removes it)


def pytest_configure(config):
    if os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get(RUN_CACHE_ENV):
        return  # the controller's
    parent = Path.home() / ".cache"
    parent.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="kernel-studio-test-", dir=parent))
    os.chmod(folder, 0o755)  # jailed workers read it as other uids
    os.environ[RUN_CACHE_ENV] = os.environ["KS_CACHE_DIR"] = str(folder)
    config.stash[_OWNED] = folder


def pytest_unconfigure(config):
    folder = config.stash.get(_OWNED, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def run_cache() -> Path:
    """This test run's shared KS_CACHE_DIR."""
    return Path(os.environ[RUN_CACHE_ENV])


@pytest.fixture(autouse=True)
def ks_cache_dir(monkeypatch):
    """Every test evaluates against the run's cache, whatever an earlier test of another package set."""
    monkeypatch.setenv("KS_CACHE_DIR", str(run_cache()))
    return run_cache()


@pytest.fixture(scope="session")
def django_db_modify_db_settings():
    """A test database of this run's own: two runs on one PostgreSQL server (CI and a developer) never collide."""
    from django.conf import settings

    settings.DATABASES["default"].setdefault("TEST", {})["NAME"] = f"test_kernel_studio_{os.getpid()}"


@pytest.fixture
def free_port() -> int:
    """A TCP port nothing listens on (bound by the OS, then released)."""
    from studio.testing import free_port

    return free_port()


@pytest.fixture
def scratch_database():
    """A database name unique to the test on the configured server (not created), dropped afterwards:
    (name, DATABASE_URL)."""
    from studio.testing import drop_database, scratch_database

    name, url = scratch_database()
    yield name, url
    drop_database(name)
