"""`manage.py ensuredb`: create the configured PostgreSQL database when it does not exist yet."""

import psycopg
from django.conf import settings
from django.core.management.base import BaseCommand
from psycopg import sql

from studio.lib.db import maintenance_connection


class Command(BaseCommand):
    help = "Create the configured database on its PostgreSQL server if it is missing (migrate needs it)."

    def add_arguments(self, parser):
        parser.add_argument("--database", default="default", help="alias in DATABASES (default: %(default)s)")

    def handle(self, *args, database, **options):
        db = settings.DATABASES[database]
        name = db["NAME"]
        with maintenance_connection(db) as conn:
            if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
                self.stdout.write(f"database {name} exists")
                return
            try:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            except psycopg.errors.DuplicateDatabase:
                self.stdout.write(f"database {name} exists (another process got there first)")
                return
        self.stdout.write(self.style.SUCCESS(f"created database {name}"))
