"""Fixtures of the deployment tests: the docker/ files parsed, a private Redis database."""

import ast
import re
import uuid
from pathlib import Path

import pytest
import redis
import yaml
from django.conf import settings

ROOT = Path(settings.BASE_DIR)
DOCKER = ROOT / "docker"


@pytest.fixture
def private_redis_url():
    """A Redis database number nobody uses (empty), for queues of this test alone; its keys are removed after."""
    base, claim, token = settings.REDIS_URL.rsplit("/", 1)[0], "kernel-studio:test-claim", uuid.uuid4().hex
    for number in range(15, 0, -1):
        client = redis.Redis.from_url(f"{base}/{number}")
        # Claimed atomically: two test runs at once never share a database.
        if client.set(claim, token, nx=True, ex=900):
            if client.dbsize() == 1:
                break
            client.delete(claim)
    else:
        pytest.fail("every Redis database 1-15 holds keys: no private one for this test")
    yield f"{base}/{number}"
    keys = list(client.scan_iter("rq:*"))
    client.delete(claim, *keys)


def dockerfile_instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile: comments dropped, continuation lines joined."""
    instructions, current = [], ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if line.startswith("#") or (not line and not current):
            continue  # Docker drops comment lines, also between continuation lines
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        word, _, rest = current.partition(" ")
        instructions.append((word.upper(), rest.strip()))
        current = ""
    assert not current, f"{path.name} ends inside a continued line"
    return instructions


_REFERENCE = re.compile(r"\$\$|\$\{(\w+)(?:(:?)([-?])([^}]*))?\}|\$(\w+)")


def interpolate(value, env: dict[str, str]):
    """Compose's variable interpolation (${X}, ${X:-default}, ${X:?error}, $$) over a parsed YAML tree."""
    if isinstance(value, dict):
        return {key: interpolate(item, env) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolate(item, env) for item in value]
    if not isinstance(value, str):
        return value

    def substitute(match):
        if match.group(0) == "$$":
            return "$"
        name = match.group(1) or match.group(5)
        colon, kind, word = match.group(2), match.group(3), match.group(4)
        present = name in env and (env[name] != "" or not colon)
        if kind == "?" and not present:
            raise KeyError(f"{name}: {word}")
        return env[name] if present else (word if kind == "-" else "")

    return _REFERENCE.sub(substitute, value)


def referenced_variables(text: str) -> set[str]:
    return {m.group(1) or m.group(5) for m in _REFERENCE.finditer(text) if m.group(0) != "$$"}


def read_env_file(path: Path) -> dict[str, str]:
    env = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, sep, value = line.partition("=")
            assert sep, f"{path.name}: {line!r} is not NAME=value"
            env[name.strip()] = value.strip()
    return env


_ENV_READERS = {"env_str", "env_bool", "env_int", "env_secret", "_bool", "_int", "_float", "getenv"}


def _project_env_names() -> set[str]:
    """Every environment variable the project's code reads by a literal name (settings helpers, os.environ)."""
    names = set()
    files = [ROOT / "manage.py"] + [
        p for pkg in ("studio", "sandbox", "agent", "training") for p in (ROOT / pkg).rglob("*.py")
    ]
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
                environ = isinstance(func, ast.Attribute) and ast.unparse(func.value) in ("os.environ", "environ")
                if name in _ENV_READERS or (environ and name in ("get", "setdefault", "pop")):
                    names.add(node.args[0].value)
            elif isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ":
                if isinstance(node.slice, ast.Constant):
                    names.add(node.slice.value)
    return {name for name in names if isinstance(name, str)}


@pytest.fixture(scope="session")
def env_example() -> dict[str, str]:
    return read_env_file(DOCKER / "env.example")


@pytest.fixture(scope="session")
def compose_raw() -> dict:
    return yaml.safe_load((DOCKER / "compose.yml").read_text())


@pytest.fixture(scope="session")
def compose(compose_raw, env_example) -> dict:
    """docker/compose.yml as compose would run it with docker/env.example as docker/.env."""
    return interpolate(compose_raw, env_example)


@pytest.fixture(scope="session")
def project_env_names() -> set[str]:
    return _project_env_names()


@pytest.fixture(scope="session")
def dockerfiles() -> dict[str, list[tuple[str, str]]]:
    """{"web" | "worker" | "trainer": the instructions of docker/NAME.Dockerfile}."""
    return {
        path.name.removesuffix(".Dockerfile"): dockerfile_instructions(path) for path in DOCKER.glob("*.Dockerfile")
    }


@pytest.fixture(scope="session")
def compose_with(compose_raw):
    """docker/compose.yml interpolated with the given variables (raises KeyError for a missing required one)."""
    return lambda env: interpolate(compose_raw, env)


@pytest.fixture(scope="session")
def compose_variables() -> set[str]:
    """Every variable docker/compose.yml interpolates."""
    return referenced_variables((DOCKER / "compose.yml").read_text())
