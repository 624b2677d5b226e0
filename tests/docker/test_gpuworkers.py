"""manage.py gpuworkers: one real RQ worker per GPU, each seeing only its own GPU, started again when it dies,
stopped together; and the container health check that counts them."""

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest
import redis
from django.conf import settings
from django.core.management import CommandError, call_command
from rq import Queue, Worker

from studio.testing import kill_tree

pytestmark = pytest.mark.slow


def healthcheck(redis_url, *args, database_url=None):
    env = {**os.environ, "REDIS_URL": redis_url, **({"DATABASE_URL": database_url} if database_url else {})}
    proc = subprocess.run(
        [sys.executable, "docker/healthcheck.py", *args],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return proc.returncode, proc.stdout + proc.stderr


@pytest.fixture
def gpu_workers(private_redis_url):
    """`manage.py gpuworkers gpu --gpus 0,1` on a Redis database of this test, once both workers are registered."""
    env = {**os.environ, "REDIS_URL": private_redis_url}
    process = subprocess.Popen(
        [sys.executable, "manage.py", "gpuworkers", "gpu", "--gpus", "0,1"],
        cwd=settings.BASE_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    process.connection = redis.Redis.from_url(private_redis_url)
    deadline = time.monotonic() + 90
    while len(Worker.all(connection=process.connection)) < 2:
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"gpuworkers did not register two workers within 90 s:\n{process.communicate()[0]}")
        time.sleep(0.3)
    yield process
    kill_tree(process)


def test_each_worker_sees_only_its_own_gpu_and_sigterm_stops_them_all(gpu_workers, private_redis_url):
    queue = Queue("gpu", connection=gpu_workers.connection)
    # Each job holds its worker for a second, so the two jobs land on the two workers.
    script = 'sleep 1; printf %s "$CUDA_VISIBLE_DEVICES"'
    jobs = [queue.enqueue("subprocess.check_output", ["sh", "-c", script]) for _ in range(2)]
    deadline = time.monotonic() + 60
    while not all(job.get_status(refresh=True) == "finished" for job in jobs):
        assert time.monotonic() < deadline, [job.get_status() for job in jobs]
        time.sleep(0.2)
    results = [job.latest_result() for job in jobs]
    seen = {result.worker_name: result.return_value.decode() for result in results}
    assert sorted(seen.values()) == ["0", "1"]
    for worker_name, gpu in seen.items():
        assert f"-gpu{gpu}-" in worker_name

    code, output = healthcheck(private_redis_url, "rq", "gpu", "--min", "2")
    assert code == 0, output
    code, output = healthcheck(private_redis_url, "rq", "gpu", "--min", "3")
    assert code == 1 and "2 worker(s)" in output
    code, output = healthcheck(private_redis_url, "rq", "cpu")
    assert code == 1 and "0 worker(s)" in output

    children = psutil.Process(gpu_workers.pid).children()
    assert len(children) == 2
    gpu_workers.send_signal(signal.SIGTERM)
    output, _ = gpu_workers.communicate(timeout=60)
    assert gpu_workers.returncode == 0, output
    assert psutil.wait_procs(children, timeout=10)[1] == []


def test_a_dead_worker_is_started_again_under_its_name_while_the_others_keep_running(gpu_workers):
    names = sorted(worker.name for worker in Worker.all(connection=gpu_workers.connection))
    dead, alive = psutil.Process(gpu_workers.pid).children()
    dead.kill()
    dead.wait(10)

    def registered():
        workers = Worker.all(connection=gpu_workers.connection)
        return sorted(w.name for w in workers if w.pid != dead.pid and psutil.pid_exists(w.pid))

    deadline = time.monotonic() + 90
    while registered() != names:  # its dead registration is taken over, not waited out
        assert gpu_workers.poll() is None and time.monotonic() < deadline, registered()
        time.sleep(0.3)
    children = psutil.Process(gpu_workers.pid).children()
    assert alive in children and dead not in children and len(children) == 2
    gpu_workers.send_signal(signal.SIGTERM)
    output, _ = gpu_workers.communicate(timeout=60)
    assert gpu_workers.returncode == 0, output
    assert psutil.wait_procs(children, timeout=10)[1] == []


def test_it_rejects_a_gpu_named_twice_an_unknown_queue_and_a_host_without_nvidia_smi(monkeypatch):
    with pytest.raises(CommandError, match="name each GPU once"):
        call_command("gpuworkers", "--gpus", "0,0")
    with pytest.raises(CommandError, match="no queue named gpus"):
        call_command("gpuworkers", "gpus", "--gpus", "0")
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable))  # no nvidia-smi on this PATH
    with pytest.raises(CommandError, match="nvidia-smi failed.*--gpus"):
        call_command("gpuworkers")


@pytest.mark.django_db
def test_the_services_check_says_which_service_is_unreachable(free_port, scratch_database):
    from django.db import connection

    db = connection.settings_dict  # this test run's own database: it exists
    database = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    code, output = healthcheck(settings.REDIS_URL, "services", database_url=database)
    assert code == 0, output
    code, output = healthcheck(f"redis://127.0.0.1:{free_port}/0", "services", database_url=database)
    assert code == 1 and "redis unreachable" in output and "database" not in output
    code, output = healthcheck(settings.REDIS_URL, "services", database_url=scratch_database[1])  # never created
    assert code == 1 and "database unreachable" in output and "redis" not in output
