"""docker/web-entrypoint.sh, run as the web image runs it: DEBUG off, collected static files served by servestatic,
the database created and migrated before daphne answers; and example secrets refused before anything starts."""

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

import psycopg
import pytest
from django.conf import settings

from studio.vendor import static_path

pytestmark = pytest.mark.slow


def fetch(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def image_env(database_url, port, static_root, **overrides):
    """The environment the web image and compose give the entrypoint (python on PATH as in the image)."""
    return {
        **os.environ,
        "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
        "DEBUG": "False",
        "SECRET_KEY": f"test-{uuid.uuid4().hex}",
        "DATABASE_URL": database_url,
        "ALLOWED_HOSTS": "localhost,127.0.0.1",
        "KS_HOST": "127.0.0.1",
        "KS_PORT": str(port),
        "STATIC_ROOT": str(static_root),
        "KS_POLICY_API_KEY": "test-key",
        **overrides,
    }


def test_the_web_entrypoint_migrates_then_serves_pages_and_collected_static_files(
    scratch_database, free_port, tmp_path
):
    name, database_url = scratch_database
    env = image_env(database_url, free_port, tmp_path / "staticfiles")
    # What the image build does: collectstatic (DEBUG on) into STATIC_ROOT.
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput"],
        cwd=settings.BASE_DIR,
        check=True,
        env={**env, "DEBUG": "True"},
        capture_output=True,
        timeout=300,
    )
    process = subprocess.Popen(
        ["docker/web-entrypoint.sh"],
        cwd=settings.BASE_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{free_port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            # The compose health check, exactly.
            check = subprocess.run(
                [sys.executable, "docker/healthcheck.py", "http", f"{base}/healthz"],
                cwd=settings.BASE_DIR,
                capture_output=True,
                text=True,
                timeout=30,
            )
            if check.returncode == 0:
                break
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"the web entrypoint did not answer /healthz within 120 s:\n{process.communicate()[0]}")
            time.sleep(0.5)
        vendored = static_path("htmx.org")
        status, body = fetch(f"{base}/static/{vendored}")
        assert status == 200
        assert body == (settings.BASE_DIR / "static" / vendored).read_bytes()
        assert fetch(f"{base}/static/vendor/no-such-file.js")[0] == 404
        status, body = fetch(f"{base}/accounts/login/")
        assert status == 200 and b"csrfmiddlewaretoken" in body
        assert fetch(f"{base}/")[0] == 200  # the login redirect, followed
        with psycopg.connect(database_url) as conn:
            applied = {row[0] for row in conn.execute("SELECT app FROM django_migrations")}
        assert {"studio", "auth", "sessions"} <= applied
    finally:
        process.terminate()
        process.communicate(timeout=30)


def test_the_web_entrypoint_refuses_the_example_secrets_before_touching_the_database(
    scratch_database, free_port, tmp_path
):
    name, database_url = scratch_database
    env = image_env(database_url, free_port, tmp_path, SECRET_KEY="change-me-secret-key")
    proc = subprocess.run(
        ["docker/web-entrypoint.sh"], cwd=settings.BASE_DIR, env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1
    assert "SECRET_KEY still holds the example value" in proc.stderr
    db = settings.DATABASES["default"]
    with psycopg.connect(host=db["HOST"], port=db["PORT"], user=db["USER"], dbname="postgres") as conn:
        assert conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is None
