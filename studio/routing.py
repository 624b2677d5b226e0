"""WebSocket routes of the studio."""

from django.urls import path

from studio.consumers import RunConsumer

websocket_urlpatterns = [
    path("ws/runs/<int:run_id>/", RunConsumer.as_asgi()),
]
