"""studio.asgi: HTTP to Django, WebSockets through the origin check and the session auth."""

import pytest
from asgiref.sync import async_to_sync
from channels.auth import AuthMiddleware
from channels.routing import URLRouter
from channels.security.websocket import OriginValidator
from channels.sessions import CookieMiddleware
from channels.testing import WebsocketCommunicator
from django.core.handlers.asgi import ASGIHandler


def test_asgi_application_imports():
    from studio.asgi import application

    assert isinstance(application.application_mapping["http"], ASGIHandler)
    websocket = application.application_mapping["websocket"]
    assert isinstance(websocket, OriginValidator)
    assert isinstance(websocket.application, CookieMiddleware)
    assert isinstance(websocket.application.inner.inner, AuthMiddleware)
    assert isinstance(websocket.application.inner.inner.inner, URLRouter)


# Channels closes stale database connections before a consumer runs, even the one that refuses.
@pytest.mark.django_db(transaction=True)
def test_websocket_from_a_foreign_origin_is_refused():
    from studio.asgi import application

    async def connect():
        communicator = WebsocketCommunicator(application, "/ws/", headers=[(b"origin", b"https://evil.example")])
        connected, _ = await communicator.connect()
        await communicator.disconnect()
        return connected

    assert async_to_sync(connect)() is False
