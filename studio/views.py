"""Pages of the studio and the health check."""

import logging

import redis
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.db import DatabaseError, connection
from django.http import JsonResponse
from django.shortcuts import render

log = logging.getLogger(__name__)


@login_required
def home(request):
    return render(request, "studio/home.html")


def healthz(request):
    """Really query PostgreSQL and Redis: a load balancer or compose healthcheck trusts this answer."""
    status = {"database": "ok", "redis": "ok"}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as e:
        log.warning("healthz: database unreachable: %s", e)
        status["database"] = "unreachable"
    try:
        with redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2, socket_timeout=2) as client:
            client.ping()
    except redis.RedisError as e:
        log.warning("healthz: redis unreachable: %s", e)
        status["redis"] = "unreachable"
    healthy = all(value == "ok" for value in status.values())
    return JsonResponse(status, status=200 if healthy else 503)
