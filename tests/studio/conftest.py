"""Fixtures of the studio tests: free ports and throwaway databases on the real PostgreSQL server."""

import socket
import uuid

import pytest
from django.conf import settings
from psycopg import sql

from studio.lib.db import maintenance_connection


@pytest.fixture
def free_port() -> int:
    """A TCP port nothing listens on (bound by the OS, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def scratch_database():
    """A database name unique to the test on the configured server, dropped afterwards: (name, DATABASE_URL)."""
    db = settings.DATABASES["default"]
    name = f"ks_scratch_{uuid.uuid4().hex[:12]}"
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    yield name, f"postgres://{auth}@{db['HOST']}:{db['PORT']}/{name}"
    with maintenance_connection(db) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def drain_queue(tmp_path):
    """Run a real RQ worker in burst mode on a queue, against this test's database; returns its output."""
    import os
    import subprocess
    import sys

    from django.db import connection

    def drain(queue="cpu", **env):
        db = connection.settings_dict
        url = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
        env = {**os.environ, "DATABASE_URL": url, "KS_CACHE_DIR": str(tmp_path / "cache"), **env}
        proc = subprocess.run([sys.executable, "manage.py", "rqworker", queue, "--burst"], cwd=settings.BASE_DIR,
                              env=env, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc.stdout + proc.stderr
    return drain
