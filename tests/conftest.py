"""Fixtures shared by every test package."""

import os

import pytest


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
