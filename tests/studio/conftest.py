"""Fixtures of the studio tests: real RQ workers draining a queue against the test's database."""

import pytest
from django.conf import settings


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
