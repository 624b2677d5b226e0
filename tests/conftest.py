"""Fixtures shared by every test package."""
import os

import pytest


@pytest.fixture(scope="session")
def django_db_modify_db_settings():
    """A test database of this run's own: two runs on one PostgreSQL server (CI and a developer) never collide."""
    from django.conf import settings
    settings.DATABASES["default"].setdefault("TEST", {})["NAME"] = f"test_kernel_studio_{os.getpid()}"
