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
