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
        proc = subprocess.run(
            [sys.executable, "manage.py", "rqworker", queue, "--burst"],
            cwd=settings.BASE_DIR,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc.stdout + proc.stderr

    return drain


@pytest.fixture
def start_worker(tmp_path):
    """Start a real RQ worker (not burst) on queues, against this test's database, its job scratch folders and jails'
    private folders in start.scratch and start.sandbox: start(*queues, **env) -> Popen with .log (its output file).
    Every worker is killed afterwards with whatever it started, and its database sessions are waited out."""
    import os
    import shutil
    import subprocess
    import sys
    import tempfile
    import time
    from pathlib import Path

    from django.db import connection

    from studio.testing import kill_family

    started = []
    # Short paths (pytest's tmp_path is long): a job's TMPDIR lies under the scratch root, and sockets made there
    # (multiprocessing's managers) must fit AF_UNIX's 108 bytes.
    short = Path(tempfile.mkdtemp(prefix="ks-test-"))

    def start(*queues, **env):
        db = connection.settings_dict
        env = {
            **os.environ,
            "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
            "KS_CACHE_DIR": str(tmp_path / "cache"),
            "KS_JOB_SCRATCH_DIR": str(start.scratch),
            "KS_SANDBOX_WORK": str(start.sandbox),
            **env,
        }
        log = tmp_path / f"worker-{len(started)}.log"
        with log.open("w") as out:
            proc = subprocess.Popen(
                [sys.executable, "manage.py", "rqworker", *queues],
                cwd=settings.BASE_DIR,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        proc.log = log
        started.append(proc)
        return proc

    start.scratch, start.sandbox = short / "jobs", short / "sandbox"
    yield start
    for proc in started:
        kill_family(proc.pid)
        proc.wait(timeout=30)
    deadline = time.monotonic() + 30
    while True:  # the test database is dropped only once the workers' sessions have ended
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            if cursor.fetchone()[0] == 0 or time.monotonic() > deadline:
                break
        time.sleep(0.2)
    shutil.rmtree(short, ignore_errors=True)
