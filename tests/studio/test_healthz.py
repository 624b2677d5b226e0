"""/healthz: really queries PostgreSQL and Redis and says which one fails."""

import pytest
from django.test import override_settings

pytestmark = pytest.mark.django_db


def test_healthz_reports_database_and_redis(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"database": "ok", "redis": "ok"}


def test_healthz_reports_503_when_redis_is_unreachable(client, free_port):
    with override_settings(REDIS_URL=f"redis://127.0.0.1:{free_port}/0"):
        response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json() == {"database": "ok", "redis": "unreachable"}
