"""A real studio in a subprocess (runstudio: daphne, RQ workers, reconciler) on a throwaway database, and Debian's
Chromium under Playwright: what the browser tests and the studio benchmarks drive."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

from django.conf import settings
from psycopg import sql

from studio.lib.db import maintenance_connection

CHROMIUM = os.environ.get("KS_CHROMIUM", "/usr/bin/chromium")
# What works on these machines (no network but loopback, root, no GPU): see PITFALLS.md.
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def free_port():
    """A TCP port nothing listens on (bound by the OS, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scratch_database(prefix="ks_scratch"):
    """(name, DATABASE_URL) of a database name unique to the caller on the configured server, not created."""
    db = settings.DATABASES["default"]
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return name, f"postgres://{auth}@{db['HOST']}:{db['PORT']}/{name}"


def drop_database(name):
    with maintenance_connection(settings.DATABASES["default"]) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def kill_family(pid):
    """SIGKILL process PID and everything it started (an RQ worker's work horse, the sandbox's processes)."""
    import psutil

    try:
        parent = psutil.Process(pid)
        family = parent.children(recursive=True) + [parent]
    except psutil.NoSuchProcess:
        family = []
    for member in family:
        try:
            member.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass


def kill_tree(process):
    """Kill a subprocess and every process under it, then reap it (its children may hold its pipes open)."""
    kill_family(process.pid)
    process.communicate(timeout=30)


def chromium_missing():
    """Why no browser test can run here, or '' when Chromium and Playwright are both present."""
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        return f"no Chromium at {CHROMIUM} (make setup installs Debian's chromium package as root)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is missing (pip install -e '.[test]')"
    return ""


def launch_chromium(playwright, user_data_dir, **options):
    """A persistent Chromium context on a fresh profile folder, with the flags that work here."""
    return playwright.chromium.launch_persistent_context(
        str(user_data_dir), executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS, **options
    )


def in_studio(studio, code):
    """Run CODE in `manage.py shell` against STUDIO's database; its output."""
    env = {**os.environ, "DATABASE_URL": studio.database_url, "KS_CACHE_DIR": str(studio.folder / "cache")}
    proc = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def log_in(page, studio):
    """Sign a Playwright page in to a LiveStudio as its admin; the page ends on the studio's front page."""
    page.goto(studio.url + "/accounts/login/")
    page.fill("#id_username", studio.username)
    page.fill("#id_password", studio.password)
    page.click("main button[type=submit]")
    page.wait_for_url(studio.url + "/")


def http_get(url, timeout=2):
    """(status, headers, body) of a GET, redirects followed; (0, {}, b"") when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()
    except OSError:
        return 0, {}, b""


def http_status(url):
    """The HTTP status of a GET, or 0 when nothing answers."""
    return http_get(url)[0]


class LiveStudio:
    """`with LiveStudio() as studio:` runstudio on a free port and a fresh database of the configured server;
    studio.url, studio.username/password (the admin it created), studio.database_url, studio.log."""

    def __init__(self, timeout=120, **env):
        self.timeout = timeout
        self.env = env
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.database, self.database_url = scratch_database("ks_live")

    def __enter__(self):
        self.folder = Path(tempfile.mkdtemp(prefix="ks-live-"))
        env = {
            **os.environ,
            "DATABASE_URL": self.database_url,
            "KS_PORT": str(self.port),
            "KS_CACHE_DIR": str(self.folder / "cache"),
            "KS_PACKAGES_DIR": str(self.folder / "packages"),
            "KS_LOG_LEVEL": "WARNING",
            **self.env,
        }
        self.log = self.folder / "runstudio.log"
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, "manage.py", "runstudio"],
                cwd=settings.BASE_DIR,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + self.timeout
        while http_status(f"{self.url}/healthz") != 200:
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.__exit__()
                raise RuntimeError(f"runstudio did not answer /healthz in {self.timeout} s:\n{self.output()[-4000:]}")
            time.sleep(0.5)
        self.username, self.password = (self.folder / "cache" / "studio-admin.txt").read_text().split()
        return self

    def output(self):
        return self.log.read_text(errors="replace")

    def __exit__(self, *exc):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        drop_database(self.database)
        shutil.rmtree(self.folder, ignore_errors=True)
