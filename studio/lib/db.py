"""Connections to the PostgreSQL server itself rather than to the studio's database."""

import psycopg

# Keys of DATABASES[...]["OPTIONS"] that Django's backend consumes instead of passing to libpq.
DJANGO_ONLY_OPTIONS = {"isolation_level", "server_side_binding", "pool", "assume_role"}


def maintenance_connection(db: dict) -> psycopg.Connection:
    """Autocommit connection to the `postgres` database of the server a DATABASES entry points at."""
    params = {key.lower(): db.get(key) for key in ("HOST", "PORT", "USER", "PASSWORD")}
    params.update((k, v) for k, v in db.get("OPTIONS", {}).items() if k not in DJANGO_ONLY_OPTIONS)
    # CREATE/DROP DATABASE cannot run inside a transaction block.
    return psycopg.connect(dbname="postgres", autocommit=True, **{k: v for k, v in params.items() if v})
