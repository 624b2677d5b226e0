"""manage.py runstudio: a fresh database, an admin login, daphne and the workers, stopped together."""

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import psutil
import pytest
from django.conf import settings

from studio.vendor import static_path

pytestmark = pytest.mark.slow


def get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return 0


@pytest.fixture
def running_studio(scratch_database, free_port, tmp_path):
    """A runstudio process on its own database, port and cache folder, answering /healthz."""
    _, database_url = scratch_database
    env = {**os.environ, "DATABASE_URL": database_url, "KS_PORT": str(free_port), "KS_CACHE_DIR": str(tmp_path)}
    process = subprocess.Popen(
        [sys.executable, "manage.py", "runstudio"], cwd=settings.BASE_DIR, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    process.url = f"http://127.0.0.1:{free_port}"
    deadline = time.monotonic() + 60
    while get(f"{process.url}/healthz") != 200:
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"runstudio did not answer /healthz within 60 s:\n{process.communicate()[0]}")
        time.sleep(0.5)
    yield process
    # The children hold runstudio's stdout open: kill them too, or communicate() would wait forever.
    survivors = [process] if process.poll() is None else []
    try:
        survivors += psutil.Process(process.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        pass
    for proc in survivors:
        proc.kill()
    process.communicate(timeout=30)


def test_runstudio_serves_until_sigterm_and_takes_its_children_along(running_studio, free_port, tmp_path):
    assert get(f"{running_studio.url}/static/{static_path('htmx.org')}") == 200
    children = psutil.Process(running_studio.pid).children()
    assert sorted(" ".join(child.cmdline()[1:]) for child in children) == [
        f"-m daphne -b 127.0.0.1 -p {free_port} studio.asgi:application",
        "manage.py reconcile_runs --every 20",
        "manage.py rqworker cpu",
        "manage.py rqworker gpu",
        "manage.py rqworker train",
    ]
    running_studio.send_signal(signal.SIGTERM)
    output, _ = running_studio.communicate(timeout=60)
    assert running_studio.returncode == 0, output
    assert psutil.wait_procs(children, timeout=5)[1] == []
    username, password = (tmp_path / "studio-admin.txt").read_text().split()
    assert f"sign in as {username} with password {password}" in output


def test_runstudio_stops_everything_when_a_child_dies(running_studio):
    children = psutil.Process(running_studio.pid).children()
    cpu_worker = next(child for child in children if child.cmdline()[-2:] == ["rqworker", "cpu"])
    cpu_worker.kill()
    output, _ = running_studio.communicate(timeout=60)
    assert running_studio.returncode == 1
    assert "rqworker cpu (exit code -9) stopped; stopping the others" in output
    assert psutil.wait_procs(children, timeout=5)[1] == []
