"""Container health checks: `python docker/healthcheck.py http URL | rq QUEUE... [--min N] | services`; exit 0 when healthy.

http: the URL answers 200 (the web's /healthz itself queries PostgreSQL and Redis). rq: at least N RQ workers
of this container (same hostname, live pid) serve one of the queues. services: PostgreSQL and Redis answer,
for processes with no port of their own (the reconciler).
"""

import argparse
import os
import socket
import sys
import urllib.error
import urllib.request


def check_http(url, timeout=5.0):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status == 200, f"{url}: HTTP {response.status}"
    except urllib.error.HTTPError as e:
        return False, f"{url}: HTTP {e.code} {e.read()[:200].decode(errors='replace')}"
    except OSError as e:
        return False, f"{url}: {e}"


def _django():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    import django

    django.setup()


def check_rq(queues, minimum):
    _django()
    import django_rq
    import redis
    from rq import Worker

    from training.evaluation.queues import process_alive

    here = socket.gethostname()
    try:
        workers = Worker.all(connection=django_rq.get_connection(queues[0]))
    except redis.RedisError as e:
        return False, f"redis unreachable: {e}"
    mine = [
        w.name
        for w in workers
        if w.hostname == here and w.pid and process_alive(w.pid) and set(w.queue_names()) & set(queues)
    ]
    return len(mine) >= minimum, f"{len(mine)} worker(s) of {here} on {', '.join(queues)} (need {minimum}): {mine}"


def check_services():
    _django()
    import redis
    from django.conf import settings
    from django.db import DatabaseError, connection

    problems = []
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as e:
        problems.append(f"database unreachable: {e}")
    try:
        with redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=3, socket_timeout=3) as client:
            client.ping()
    except redis.RedisError as e:
        problems.append(f"redis unreachable: {e}")
    return not problems, "; ".join(problems) or "database and redis answer"


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python docker/healthcheck.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="check", required=True)
    sub.add_parser("http", help="the URL answers 200").add_argument("url")
    rq = sub.add_parser("rq", help="this container's RQ workers are registered and alive")
    rq.add_argument("queues", nargs="+")
    rq.add_argument("--min", type=int, default=1, dest="minimum", help="how many workers must be alive")
    sub.add_parser("services", help="PostgreSQL and Redis answer")
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.check == "http":
        healthy, detail = check_http(args.url)
    elif args.check == "rq":
        healthy, detail = check_rq(args.queues, args.minimum)
    else:
        healthy, detail = check_services()
    print(("healthy: " if healthy else "unhealthy: ") + detail)
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.exit(main())
