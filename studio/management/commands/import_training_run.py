"""`manage.py import_training_run FOLDER --user NAME [--name N]`: list a run trained outside the studio."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from studio.run_imports import RunImportError, import_run


class Command(BaseCommand):
    help = (
        "Copy a training run folder (python -m training train, bench.rl_pipeline) into the studio and list it "
        "on the staff training pages."
    )

    def add_arguments(self, parser):
        parser.add_argument("folder", help="the run folder: config.yaml, metrics.jsonl, train.log, plots/ ...")
        parser.add_argument("--user", required=True, help="the staff user the run is listed under")
        parser.add_argument("--name", default="", help="the run's name (default: the folder's)")

    def handle(self, *args, folder, user, name, **options):
        try:
            owner = get_user_model().objects.get(**{get_user_model().USERNAME_FIELD: user})
        except get_user_model().DoesNotExist:
            raise CommandError(f"no user {user!r}: create one with `manage.py createsuperuser`") from None
        try:
            run = import_run(folder, owner, name)
        except RunImportError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"imported {folder} as training run {run.pk} ({run.status}): /staff/training/{run.pk}")
