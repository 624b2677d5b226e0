"""Parallel test workers each talk to a Redis database of their own, on the same server."""

import os

import pytest

from studio.xdist import worker_url


def test_each_worker_gets_the_next_database_on_the_same_server():
    assert worker_url("redis://127.0.0.1:6379/0", "gw0") == "redis://127.0.0.1:6379/1"
    assert worker_url("redis://:secret@cache:6380/4", "gw2") == "redis://:secret@cache:6380/3"


def test_more_workers_than_databases_is_an_error_that_says_what_to_do():
    with pytest.raises(RuntimeError, match="run with fewer workers"):
        worker_url("redis://127.0.0.1:6379/0", "gw15")


def test_this_worker_runs_on_its_own_database():
    from django.conf import settings

    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:
        pytest.skip("not under pytest-xdist")
    assert settings.REDIS_URL.endswith(f"/{int(worker.removeprefix('gw')) + 1}")
    assert settings.RQ_QUEUES["cpu"]["URL"] == settings.REDIS_URL
