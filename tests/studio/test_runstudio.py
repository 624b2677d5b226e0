"""manage.py runstudio: a fresh database, an admin login, daphne and the workers, stopped together."""

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest
from django.conf import settings

from studio import testing
from studio.testing import http_get, http_status, kill_tree
from studio.vendor import static_path

pytestmark = pytest.mark.slow


def launch(env, port, *options):
    """A runstudio process with ENV and OPTIONS answering /healthz on PORT; killed with its children afterwards.
    DEBUG and the secret key are runstudio's defaults, whatever this environment says."""
    inherited = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECRET_KEY", "SECRET_KEY_FILE")}
    process = subprocess.Popen(
        [sys.executable, "manage.py", "runstudio", *options],
        cwd=settings.BASE_DIR,
        env={**inherited, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    process.url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while http_status(f"{process.url}/healthz") != 200:
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"runstudio did not answer /healthz within 90 s:\n{process.communicate()[0]}")
        time.sleep(0.5)
    yield process
    # The children hold runstudio's stdout open: kill them too, or communicate() would wait forever.
    kill_tree(process)


@pytest.fixture
def running_studio(scratch_database, free_port, tmp_path):
    """A runstudio process on its own database, port and cache folder, answering /healthz."""
    _, database_url = scratch_database
    yield from launch(
        {"DATABASE_URL": database_url, "KS_PORT": str(free_port), "KS_CACHE_DIR": str(tmp_path)}, free_port
    )


@pytest.fixture
def debug_studio(scratch_database, free_port, tmp_path):
    """runstudio --debug, otherwise as running_studio."""
    _, database_url = scratch_database
    yield from launch(
        {"DATABASE_URL": database_url, "KS_PORT": str(free_port), "KS_CACHE_DIR": str(tmp_path)}, free_port, "--debug"
    )


@pytest.fixture
def embedded_studio(free_port):
    """runstudio with DATABASE_URL and REDIS_URL on local ports nothing serves: it must start both itself."""
    # The embedded PostgreSQL runs unprivileged when we are root: its folder lies under world-searchable parents.
    with tempfile.TemporaryDirectory(prefix="ks-embedded-", dir="/tmp") as cache:
        Path(cache).chmod(0o755)
        pg, rd = testing.free_port(), testing.free_port()  # nothing serves these
        env = {
            "DATABASE_URL": f"postgres://postgres@127.0.0.1:{pg}/kernel_studio",
            "REDIS_URL": f"redis://127.0.0.1:{rd}/0",
            "KS_PORT": str(free_port),
            "KS_CACHE_DIR": cache,
        }
        for process in launch(env, free_port):
            process.ports = pg, rd
            yield process


def test_runstudio_serves_until_sigterm_and_takes_its_children_along(running_studio, free_port, tmp_path):
    assert http_status(f"{running_studio.url}/static/{static_path('htmx.org')}") == 200
    children = psutil.Process(running_studio.pid).children()
    assert sorted(" ".join(child.cmdline()[1:]) for child in children) == [
        f"-m daphne -b 127.0.0.1 -p {free_port} studio.asgi:application",
        "manage.py reconcile_runs --every 20",
        "manage.py rqworker cpu",
        "manage.py rqworker gpu",
        "manage.py rqworker staff-cpu",
        "manage.py rqworker staff-gpu",
        "manage.py rqworker train",
    ]
    running_studio.send_signal(signal.SIGTERM)
    output, _ = running_studio.communicate(timeout=60)
    assert running_studio.returncode == 0, output
    assert psutil.wait_procs(children, timeout=5)[1] == []
    username, password = (tmp_path / "studio-admin.txt").read_text().split()
    assert f"sign in as {username} with password {password}" in output
    assert (tmp_path / "secret-key").stat().st_mode & 0o777 == 0o600  # generated: none was configured


def registered_workers(queue):
    """{pid: name} of the RQ workers registered for QUEUE in the configured Redis."""
    import redis
    from rq import Worker

    connection = redis.Redis.from_url(settings.REDIS_URL)
    return {w.pid: w.name for w in Worker.all(connection=connection) if queue in w.queue_names()}


def test_a_killed_worker_is_restarted_while_the_web_keeps_serving(running_studio):
    def cpu_worker():
        for child in psutil.Process(running_studio.pid).children():
            try:
                if child.cmdline()[-2:] == ["rqworker", "cpu"]:
                    return child
            except psutil.Error:
                pass  # the killed one, dead and not yet reaped by runstudio
        return None

    killed = cpu_worker()
    others = {child.pid for child in psutil.Process(running_studio.pid).children()} - {killed.pid}
    deadline = time.monotonic() + 60
    while killed.pid not in registered_workers("cpu"):
        assert time.monotonic() < deadline, "the cpu worker never registered"
        time.sleep(0.2)
    killed.kill()
    answers = []
    deadline = time.monotonic() + 60
    while not ((new := cpu_worker()) and new.pid != killed.pid and new.pid in registered_workers("cpu")):
        answers.append(http_status(f"{running_studio.url}/healthz"))
        assert time.monotonic() < deadline, "no new cpu worker registered within 60 s"
        time.sleep(0.2)
    assert answers and set(answers) == {200}, answers  # the web answered every time, worker down or not
    assert {child.pid for child in psutil.Process(running_studio.pid).children()} >= others
    running_studio.send_signal(signal.SIGTERM)
    output, _ = running_studio.communicate(timeout=60)
    assert running_studio.returncode == 0, output
    assert f"rqworker cpu (pid {killed.pid}) stopped with signal SIGKILL" in output
    assert f"rqworker cpu started again (pid {new.pid})" in output


def test_unknown_urls_get_a_plain_404_without_the_route_list(running_studio):
    status, _, body = http_get(f"{running_studio.url}/no/such/page")
    assert status == 404
    assert b"Using the URLconf" not in body and b"admin/rq/" not in body and b"healthz" not in body


def test_runstudio_debug_serves_with_debug_on(debug_studio):
    status, _, body = http_get(f"{debug_studio.url}/no/such/page")
    assert status == 404 and b"Using the URLconf" in body and b"healthz" in body


def test_runstudio_starts_embedded_postgres_and_redis_where_none_answer(embedded_studio):
    pg, rd = embedded_studio.ports
    # /healthz queried both for real; the workers registered in the embedded Redis.
    import redis
    from rq import Worker

    deadline = time.monotonic() + 60  # workers register a moment after daphne answers
    while (queues := sorted(q for w in Worker.all(connection=redis.Redis(port=rd)) for q in w.queue_names())) != [
        "cpu",
        "gpu",
        "staff-cpu",
        "staff-gpu",
        "train",
    ] and time.monotonic() < deadline:
        time.sleep(0.5)
    assert queues == ["cpu", "gpu", "staff-cpu", "staff-gpu", "train"]
    children = psutil.Process(embedded_studio.pid).children()
    names = [child.name() for child in children]
    assert "postgres" in names and "redis-server" in names
    embedded_studio.send_signal(signal.SIGTERM)
    output, _ = embedded_studio.communicate(timeout=60)
    assert embedded_studio.returncode == 0, output
    assert "embedded postgres started" in output and "embedded redis started" in output
    assert "sign in as admin with password" in output
    assert psutil.wait_procs(children, timeout=10)[1] == []
    assert http_status(f"http://127.0.0.1:{pg}") == 0 and http_status(f"http://127.0.0.1:{rd}") == 0  # both stopped
