"""`manage.py gpuworkers [QUEUE ...] [--gpus 0,1]`: one RQ worker per GPU, each seeing only its own, each started
again when it dies (studio.supervisor), all stopped together.

Every worker serves the QUEUEs in the order given (RQ takes the first that holds a job): `gpuworkers gpu` for users'
GPU jobs (the default), `gpuworkers staff-gpu gpu` for staff GPU workers that help users while no staff job waits
(studio/queues.py says why users' workers never take staff jobs)."""

import secrets
import signal
import socket
import subprocess
import sys

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from studio.supervisor import Supervisor


def visible_gpus() -> list[tuple[str, str]]:
    """(index, UUID) of every GPU this host or container sees, from nvidia-smi: the parent never touches CUDA."""
    try:
        proc = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CommandError(
            f"nvidia-smi failed ({e}): give this container GPUs (compose: "
            f"deploy.resources.reservations.devices) or name them with --gpus"
        ) from None
    if proc.returncode:
        raise CommandError(f"nvidia-smi failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return [tuple(field.strip() for field in line.split(",", 1)) for line in proc.stdout.splitlines() if "," in line]


def parse_gpus(text: str) -> list[tuple[str, str]]:
    """--gpus "0,1" or "GPU-<uuid>,...": (label, what CUDA_VISIBLE_DEVICES gets) for each."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items or len(set(items)) != len(items):
        raise CommandError(f"--gpus {text!r}: name each GPU once, by index or UUID, separated by commas")
    return [(item if item.isdigit() else str(position), item) for position, item in enumerate(items)]


class Command(BaseCommand):
    help = (
        "Run one RQ worker per GPU, CUDA_VISIBLE_DEVICES set to that GPU alone; a worker that dies is started "
        "again while the others keep running, until SIGTERM or Ctrl-C."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "queues",
            nargs="*",
            help="queues every worker serves, first first (default: gpu; staff GPU workers: staff-gpu gpu)",
        )
        parser.add_argument("--gpus", help="comma-separated GPU indices or UUIDs (default: every GPU nvidia-smi lists)")

    def handle(self, *args, queues=(), gpus=None, **options):
        queues = list(queues) or ["gpu"]
        unknown = [queue for queue in queues if queue not in settings.RQ_QUEUES]
        if unknown:
            raise CommandError(f"no queue named {', '.join(unknown)}: choose from {', '.join(settings.RQ_QUEUES)}")
        devices = parse_gpus(gpus) if gpus else visible_gpus()
        if not devices:
            raise CommandError("nvidia-smi lists no GPU: give this container GPUs or name them with --gpus")
        supervisor = Supervisor(self.commands(devices, queues), cwd=settings.BASE_DIR)
        signal.signal(signal.SIGINT, lambda signum, frame: supervisor.stop(signum))
        signal.signal(signal.SIGTERM, lambda signum, frame: supervisor.stop(signum))
        supervisor.run()

    def commands(self, devices, queues) -> dict[str, list[str]]:
        host = socket.gethostname()
        commands = {}
        for label, device in devices:
            # A UUID names the GPU whatever the CUDA enumeration order; the suffix keeps a new gpuworkers from being
            # refused while the registrations of the workers it replaces have not expired (a worker started again
            # takes over its own dead registration: studio.workers).
            name = f"{host}-gpu{label}-{secrets.token_hex(3)}"
            # `env` gives the worker its GPU and becomes it: the supervisor starts every child in one environment.
            commands[name] = [
                "env",
                f"CUDA_VISIBLE_DEVICES={device}",
                sys.executable,
                "manage.py",
                "rqworker",
                *queues,
                "--name",
                name,
            ]
            self.stdout.write(f"{name}: rqworker {' '.join(queues)} on GPU {device}")
        self.stdout.flush()
        return commands
