"""The images' Dockerfiles against the project: what they copy exists and is sent, what they run exists and imports,
the variables they set are read by the code, the ports agree with the settings (no Docker engine is needed)."""

import ast
import importlib
import importlib.util
import json
import os
import re
import shlex
import tomllib

from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import get_commands

ROOT = Path(settings.BASE_DIR)
DOCKER = ROOT / "docker"
IMAGES = ("web", "worker", "trainer")
# Variables that configure Python, pip, apt or the virtual environment rather than the project.
STANDARD_ENV = {
    "PATH",
    "VIRTUAL_ENV",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
    "PIP_DISABLE_PIP_VERSION_CHECK",
    "DEBIAN_FRONTEND",
}


def env_of(instructions) -> dict[str, str]:
    env = {}
    for word, args in instructions:
        if word == "ENV":
            env.update(item.split("=", 1) for item in shlex.split(args))
    return env


def shell_commands(instructions):
    """Every command of the RUN and CMD lines, as argument lists (shell lines split at &&)."""
    commands = []
    for word, args in instructions:
        if word == "CMD":
            commands.append(json.loads(args))
        elif word == "RUN":
            tokens = [t for t in shlex.split(args) if not t.startswith("--mount=")]
            command = []
            for token in tokens + ["&&"]:
                if token in ("&&", ";", "||"):
                    # Leading NAME=value words set the environment of that one command.
                    while command and re.fullmatch(r"\w+=\S*", command[0]):
                        command.pop(0)
                    commands.append(command)
                    command = []
                else:
                    command.append(token)
    return [c for c in commands if c]


def dockerignore_patterns():
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def ignored(rel_path: str) -> bool:
    """Whether .dockerignore keeps REL_PATH out of the build context (a matching folder hides its contents)."""
    parts = rel_path.strip("/").split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    for pattern in dockerignore_patterns():
        regex = re.escape(pattern.strip("/")).replace(r"\*\*/", "(.*/)?").replace(r"\*", "[^/]*").replace(r"\?", "[^/]")
        if any(re.fullmatch(regex, prefix) for prefix in prefixes):
            return True
    return False


@pytest.mark.parametrize("image", IMAGES)
def test_every_copied_path_exists_and_is_sent_in_the_build_context(dockerfiles, image):
    stages = []
    copied = []
    for word, args in dockerfiles[image]:
        if word == "FROM":
            stages.append(args.split(" AS ")[-1] if " AS " in args else None)
        elif word == "COPY":
            words = args.split()
            sources = [w for w in words[:-1] if not w.startswith("--")]
            source_stage = next((w.split("=", 1)[1] for w in words if w.startswith("--from=")), None)
            if source_stage:
                assert source_stage in stages[:-1], f"{image}: COPY --from={source_stage} names no earlier stage"
                continue
            for source in sources:
                assert (ROOT / source).exists(), f"{image}.Dockerfile copies {source}, which does not exist"
                assert source == "." or not ignored(source), (
                    f"{image}.Dockerfile copies {source}, .dockerignore drops it"
                )
                copied.append(source)
    assert copied, f"{image}.Dockerfile copies nothing from the repository"


def test_the_build_context_holds_the_runtime_files_and_never_secrets_or_local_state():
    for needed in (
        "docker/web-entrypoint.sh",
        "docker/healthcheck.py",
        "manage.py",
        "package-lock.json",
        "sandbox/native/ks_torch.h",
        "templates",
        "static/js",
        "agent/SKILL.md",
    ):
        assert (ROOT / needed).exists() and not ignored(needed), needed
    for secret_or_state in (
        "docker/.env",
        ".env",
        ".git/config",
        ".venv/bin/python",
        "node_modules/htmx.org",
        "static/vendor/htmx-2.0.11",
        "staticfiles/admin",
        "studio/__pycache__/x.pyc",
    ):
        assert ignored(secret_or_state), f".dockerignore sends {secret_or_state} to the image builder"
    assert os.access(DOCKER / "web-entrypoint.sh", os.X_OK), "web-entrypoint.sh must be executable (COPY keeps modes)"


@pytest.mark.parametrize("image", IMAGES)
def test_commands_name_real_modules_management_commands_and_extras(dockerfiles, image):
    commands = get_commands()
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    checked = 0
    for command in shell_commands(dockerfiles[image]):
        program, args = os.path.basename(command[0]), command[1:]
        if program in ("python", "python3") and args[:1] == ["-m"]:
            assert importlib.util.find_spec(args[1]) is not None, f"{image}: no module {args[1]}"
            checked += 1
        elif program in ("python", "python3") and args[:1] == ["manage.py"]:
            assert args[1] in commands, f"{image}: manage.py has no command {args[1]}"
            checked += 1
        elif program in ("python", "python3") and args[:1] == ["-c"]:
            tree = ast.parse(args[1])
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom):
                    module = importlib.import_module(node.module)
                    for alias in node.names:
                        assert hasattr(module, alias.name), f"{image}: {node.module} has no {alias.name}"
                elif isinstance(node, ast.Import):
                    for alias in node.names:
                        importlib.import_module(alias.name)
            checked += 1
        elif program == "pip" and "-e" in args:
            target = args[args.index("-e") + 1]
            for extra in re.findall(r"\[([\w,]+)\]", target)[0].split(",") if "[" in target else []:
                assert extra in extras, f"{image}: pyproject.toml has no extra {extra}"
            checked += 1
        elif command[0].startswith("docker/"):
            assert os.access(ROOT / command[0], os.X_OK), f"{image}: {command[0]} is missing or not executable"
            checked += 1
    assert checked >= 2, f"{image}.Dockerfile runs nothing of the project's"


def test_the_web_image_vendors_collects_and_serves_on_the_settings_port(dockerfiles):
    runs = [" ".join(c) for c in shell_commands(dockerfiles["web"])]
    order = [
        next(i for i, run in enumerate(runs) if step in run)
        for step in ("npm ci", "pip install -e .", "python -m studio.vendor", "python manage.py collectstatic")
    ]
    assert order == sorted(order), f"npm ci, install, vendor and collectstatic must run in that order: {runs}"
    env = env_of(dockerfiles["web"])
    exposed = [args for word, args in dockerfiles["web"] if word == "EXPOSE"]
    assert exposed == [env["KS_PORT"]]
    assert {"KS_HOST", "KS_PORT", "DEBUG", "STATIC_ROOT"} <= set(env)
    assert env["DEBUG"] == "False" and settings.KS_PORT == int(env["KS_PORT"])
    entrypoint = (DOCKER / "web-entrypoint.sh").read_text()
    assert '-b "$KS_HOST" -p "$KS_PORT" studio.asgi:application' in entrypoint
    assert importlib.import_module("studio.asgi").application is not None
    for command in re.findall(r"^(?:exec )?python manage.py (\w+)", entrypoint, re.M):
        assert command in get_commands()
    user = [args for word, args in dockerfiles["web"] if word == "USER"]
    assert user and user[-1] not in ("root", "0"), "the web process runs as an unprivileged user"


def test_the_worker_image_pins_nvcc_to_the_torch_build_and_prebuilds_the_header(dockerfiles):
    args = {a.split("=", 1)[0]: a.split("=", 1)[1] for word, a in dockerfiles["worker"] if word == "ARG"}
    cuda = re.search(r"cuda:(\d+)\.(\d+)\.\d+-devel", args["CUDA_IMAGE"])
    assert cuda, "the worker needs a CUDA *devel* image: nvcc compiles the kernels"
    assert args["TORCH_INDEX"].endswith(f"/cu{cuda.group(1)}{cuda.group(2)}"), "nvcc and torch's CUDA must match"
    assert args["TORCH_SPEC"] == "torch==2.11.0"
    runs = " ".join(" ".join(c) for c in shell_commands(dockerfiles["worker"]))
    assert "assert nvcc == torch.version.cuda" in runs, "the build checks nvcc against torch.version.cuda"
    assert "ensure_pch('cuda')" in runs and "ensure_pch('cpu')" in runs
    assert "prepare_headers(b'', 'image', 'cuda')" in runs and "prepare_headers(b'', 'image', 'cpu')" in runs
    env = env_of(dockerfiles["worker"])
    assert env["KS_SANDBOX_REQUIRE_ISOLATION"] == "True" and env["KS_CACHE_DIR"].startswith("/var/cache/")
    # The jail switches each evaluation to its own uid: only a root worker can.
    assert not [a for word, a in dockerfiles["worker"] if word == "USER"]
    for package in ("bubblewrap", "libseccomp2", "python3-dev", "g++"):
        assert package in runs


@pytest.mark.parametrize("image", IMAGES)
def test_every_variable_an_image_sets_is_read_by_the_project(dockerfiles, project_env_names, image):
    unread = set(env_of(dockerfiles[image])) - project_env_names - STANDARD_ENV
    assert not unread, f"{image}.Dockerfile sets {sorted(unread)}, which no settings module reads"


def test_the_trainer_image_installs_the_train_extra_with_accelerate(dockerfiles):
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(dep.startswith("accelerate") for dep in extras["train"])
    runs = [" ".join(c) for c in shell_commands(dockerfiles["trainer"])]
    assert any("pip install -e .[train]" in run for run in runs)
    assert any(run.startswith("accelerate launch") for run in runs)
    assert importlib.import_module("training.cli").COMMANDS["train"]
