#!/bin/sh
# The web container: refuse example secrets, create the database if missing, migrate, then serve with daphne.
# KS_HOST and KS_PORT come from the image (0.0.0.0, 8000); studio/settings.py reads the same names.
set -eu
for name in SECRET_KEY DATABASE_URL REDIS_URL KS_POLICY_API_KEY; do
    eval "value=\${$name:-}"
    case "$value" in
        *change-me*) echo "$name still holds the example value from docker/env.example: replace every change-me in docker/.env" >&2
                     exit 1 ;;
    esac
done
python manage.py ensuredb
python manage.py migrate --noinput
exec python -m daphne -b "$KS_HOST" -p "$KS_PORT" studio.asgi:application
