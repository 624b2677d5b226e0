"""`manage.py reconcile_runs [--every S]`: close runs whose worker died (once, or every S seconds)."""

import time

from django.core.management.base import BaseCommand
from django.db import close_old_connections

from studio.reconcile import reconcile


class Command(BaseCommand):
    help = "Mark runs whose job or worker is gone as failed, with the reason."

    def add_arguments(self, parser):
        parser.add_argument("--every", type=float, default=0, help="repeat every this many seconds")

    def handle(self, *args, every=0, **options):
        while True:
            close_old_connections()
            closed = reconcile()
            if closed:
                self.stdout.write(f"closed {closed} run(s) whose worker or job is gone")
            if not every:
                return
            time.sleep(every)
