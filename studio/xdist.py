"""A pytest plugin (`-p studio.xdist`): under pytest-xdist, each test worker gets a Redis database of its own, so
the queues, channel groups and claims of tests running side by side never meet. Set before Django reads settings."""

import os
from urllib.parse import urlsplit, urlunsplit

DEFAULT = "redis://127.0.0.1:6379/0"
DATABASES = 16  # Redis's default `databases`


def worker_url(url, worker):
    """URL with its database replaced by one for xdist worker WORKER ("gw0" -> 1, "gw1" -> 2, ...)."""
    index = int(worker.removeprefix("gw")) + 1
    if index >= DATABASES:
        raise RuntimeError(f"pytest-xdist worker {worker}: Redis has {DATABASES} databases; run with fewer workers")
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{index}"))


_worker = os.environ.get("PYTEST_XDIST_WORKER")
if _worker:
    for _name in ("REDIS_URL", "KS_TEST_REDIS_URL"):
        os.environ[_name] = worker_url(os.environ.get(_name) or DEFAULT, _worker)
