"""`manage.py runstudio`: start embedded PostgreSQL and Redis where none answer, prepare the database, then run
daphne, the RQ workers and the reconciler, each started again when it dies, until Ctrl-C or SIGTERM."""

import os
import secrets
import signal
import sys

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from studio import services
from studio.supervisor import EssentialProcessDied, Supervisor

# A gpu worker runs even without a visible CUDA device: there it evaluates on the CPU target.
QUEUES = ("gpu", "cpu", "staff-gpu", "staff-cpu", "train")  # users, staff, learners: studio/queues.py


class Command(BaseCommand):
    help = (
        "Start embedded PostgreSQL and Redis where the configured ones do not answer, create and migrate the "
        "database, then run the web server, one RQ worker per queue and the reconciler, restarting any that "
        "dies."
    )
    # The database may not be up before handle() has started it.
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument(
            "--debug",
            action="store_true",
            help="serve with DEBUG on (error pages with tracebacks and the list of routes)",
        )

    def handle(self, *args, **options):
        # Until supervise() takes over, a SIGTERM unwinds through the finally below (embedded servers stop too).
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
        try:
            embedded = services.ensure(
                settings.DATABASES["default"], settings.REDIS_URL, settings.KS_CACHE_DIR / "services"
            )
        except services.ServiceError as exc:
            raise CommandError(str(exc)) from None
        for server in embedded:
            self.stdout.write(f"embedded {server.name} started ({server.binary}), data and log in {server.folder}")
        try:
            self.check()
            call_command("ensuredb")
            call_command("migrate", interactive=False, verbosity=options["verbosity"])
            username, password = self.admin_login()
            self.stdout.write(f"Kernel Studio: http://{settings.KS_HOST}:{settings.KS_PORT}/")
            if password:
                self.stdout.write(f"sign in as {username} with password {password} (kept in {self.login_file})")
            else:
                self.stdout.write("sign in with your superuser account")
            if options["debug"]:
                self.stdout.write("DEBUG is on: error pages show tracebacks, settings and every route")
            self.stdout.flush()
            self.supervise(embedded, debug=options["debug"])
        finally:
            # Last, once web and workers are gone: a worker finishing its job still needs both.
            for server in reversed(embedded):
                server.stop()

    @property
    def login_file(self):
        return settings.KS_CACHE_DIR / "studio-admin.txt"

    def admin_login(self) -> tuple[str, str | None]:
        """The generated admin's login, created on the first run and shown again while it still works."""
        users = get_user_model().objects
        if not users.filter(is_superuser=True).exists():
            password = secrets.token_urlsafe(12)
            users.create_superuser("admin", "", password)
            self.login_file.parent.mkdir(parents=True, exist_ok=True)
            self.login_file.touch(mode=0o600)
            self.login_file.write_text(f"admin\n{password}\n")
        if self.login_file.exists():
            username, password = self.login_file.read_text().split()
            user = users.filter(username=username, is_superuser=True).first()
            # The file may outlive its database (a dropped dev database): only show a login that works.
            if user and user.check_password(password):
                return username, password
        return "", None

    def supervise(self, embedded, debug=False) -> None:
        commands = {
            "daphne": [
                sys.executable,
                "-m",
                "daphne",
                "-b",
                settings.KS_HOST,
                "-p",
                str(settings.KS_PORT),
                "studio.asgi:application",
            ],
            **{f"rqworker {queue}": [sys.executable, "manage.py", "rqworker", queue] for queue in QUEUES},
            # Runs whose worker died are closed within half a minute (RQ alone would show them started).
            "reconcile_runs": [sys.executable, "manage.py", "reconcile_runs", "--every", "20"],
        }
        # An embedded server that dies is not started again: every child needs it, so all stop, saying why.
        supervisor = Supervisor(
            commands,
            cwd=settings.BASE_DIR,
            env={**os.environ, "DEBUG": "True"} if debug else None,
            essential={f"embedded {server.name}": server.process for server in embedded},
        )
        signal.signal(signal.SIGINT, lambda signum, frame: supervisor.stop(signum))
        signal.signal(signal.SIGTERM, lambda signum, frame: supervisor.stop(signum))
        try:
            supervisor.run()
        except EssentialProcessDied as exc:
            raise CommandError(str(exc)) from None
