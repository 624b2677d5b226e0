"""Live run updates over a WebSocket: replay stored events after the browser's last seq, then stream."""

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from studio import actions
from studio.models import Run

FORBIDDEN = 4403


class RunConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        self.run_id = self.scope["url_route"]["kwargs"]["run_id"]
        if not await self._may_watch(self.scope.get("user"), self.run_id):
            await self.close(code=FORBIDDEN)
            return
        self.sent = 0
        # Join before reading the database: an event committed in between arrives live, never falls between.
        await self.channel_layer.group_add(actions.group_name(self.run_id), self.channel_name)
        await self.accept()
        await self._catch_up(self._after())

    async def disconnect(self, code):
        if hasattr(self, "sent"):
            await self.channel_layer.group_discard(actions.group_name(self.run_id), self.channel_name)

    async def run_event(self, message):
        event = message["event"]
        if event["seq"] > self.sent + 1:
            await self._catch_up(self.sent)  # a gap: fetch what the layer did not deliver
        await self._send(event)

    async def _catch_up(self, after):
        for event in await database_sync_to_async(actions.events_after)(self.run_id, after):
            await self._send(event)

    async def _send(self, event):
        if event["seq"] <= self.sent:
            return
        self.sent = event["seq"]
        await self.send_json(event)

    def _after(self):
        query = self.scope.get("query_string", b"").decode()
        for part in query.split("&"):
            if part.startswith("after=") and part[6:].isdigit():
                return int(part[6:])
        return 0

    @database_sync_to_async
    def _may_watch(self, user, run_id):
        if user is None or not user.is_authenticated:
            return False
        runs = Run.objects.filter(pk=run_id)
        return runs.exists() if user.is_staff else runs.filter(owner=user).exists()
