"""manage.py ensuredb: creates the configured database once, then leaves it alone."""

import os
import subprocess
import sys

from django.conf import settings

from studio.lib.db import maintenance_connection


def ensuredb(database_url: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", "ensuredb"],
        cwd=settings.BASE_DIR,
        env={**os.environ, "DATABASE_URL": database_url},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return result.stdout


def test_ensuredb_creates_a_missing_database(scratch_database):
    name, url = scratch_database
    assert ensuredb(url).strip() == f"created database {name}"
    with maintenance_connection(settings.DATABASES["default"]) as conn:
        assert conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
    assert ensuredb(url).strip() == f"database {name} exists"
