"""WebSocket routes of the studio; the live run stream joins them with the studio issue."""

websocket_urlpatterns: list = []
