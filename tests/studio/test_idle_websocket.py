"""An idle run page's WebSocket, through the real ASGI app and the Redis channel layer: open, quiet, then live."""

import logging

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.test import Client

from studio import actions
from studio.models import Problem, Run

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# Four times the 5 s the layer's BZPOPMIN blocks for: the drops this pins down came every 5-10 s.
IDLE_S = 20
# Where a dropped connection would leave a trace: the server, the layer, the Redis client, the event loop.
WATCHED_LOGGERS = ("daphne", "channels", "channels_redis", "redis", "asyncio", "django")


def test_an_idle_websocket_stays_open_across_many_layer_waits_and_still_gets_the_next_event(caplog):
    from studio.asgi import application

    owner = get_user_model().objects.create_user("ada", password="pw")
    problem = Problem.objects.create(owner=owner, name="relu", source="# relu", sha256="0" * 64)
    run = Run.objects.create(owner=owner, problem=problem)
    browser = Client()
    browser.force_login(owner)
    cookie = f"sessionid={browser.cookies['sessionid'].value}".encode()

    async def scenario():
        comm = WebsocketCommunicator(
            application, f"/ws/runs/{run.pk}/", headers=[(b"origin", b"http://localhost"), (b"cookie", cookie)]
        )
        connected, _ = await comm.connect()
        assert connected
        # The layer blocks in BZPOPMIN a few seconds at a time: IDLE_S spans several of its waits.
        assert await comm.receive_nothing(timeout=IDLE_S, interval=0.5)
        assert not comm.future.done(), "the consumer ended while idle"
        await database_sync_to_async(actions.append_event)(run.pk, "turn", {"index": 0})
        message = await comm.receive_json_from(timeout=10)
        await comm.disconnect()
        return message

    with caplog.at_level(logging.WARNING):
        message = async_to_sync(scenario)()
    assert message == {"seq": 1, "kind": "turn", "payload": {"index": 0}}
    noise = [r for r in caplog.records if r.levelno >= logging.WARNING and r.name.split(".")[0] in WATCHED_LOGGERS]
    assert noise == [], [r.getMessage() for r in noise]
