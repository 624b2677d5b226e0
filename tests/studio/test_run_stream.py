"""Live run events: stored first, replayed after the browser's last seq, then streamed without gaps or repeats."""

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model

from studio import actions
from studio.models import Problem, Run, RunEvent
from studio.routing import websocket_urlpatterns

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def owner():
    return get_user_model().objects.create_user("ada", password="pw")


@pytest.fixture
def run(owner):
    problem = Problem.objects.create(owner=owner, name="relu", source="# relu", sha256="0" * 64)
    return Run.objects.create(owner=owner, problem=problem)


def communicator(run_id, user, after=None):
    path = f"/ws/runs/{run_id}/" + (f"?after={after}" if after is not None else "")
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), path)
    comm.scope["user"] = user
    return comm


async def receive_all(comm, count):
    return [await comm.receive_json_from(timeout=5) for _ in range(count)]


def test_a_late_browser_gets_stored_events_then_live_ones_without_gaps_or_duplicates(run, owner):
    for i in range(3):
        actions.append_event(run.pk, "turn", {"index": i})

    async def scenario():
        comm = communicator(run.pk, owner)
        connected, _ = await comm.connect()
        assert connected
        replayed = await receive_all(comm, 3)
        for i in range(3, 6):
            await database_sync_to_async(actions.append_event)(run.pk, "turn", {"index": i})
        live = await receive_all(comm, 3)
        assert await comm.receive_nothing(timeout=0.3)
        await comm.disconnect()
        return replayed + live

    received = async_to_sync(scenario)()
    stored = [e.to_message() for e in RunEvent.objects.filter(run=run).order_by("seq")]
    assert received == stored
    assert [m["seq"] for m in received] == [1, 2, 3, 4, 5, 6]


def test_a_reconnecting_browser_gets_only_what_it_missed(run, owner):
    for i in range(5):
        actions.append_event(run.pk, "turn", {"index": i})

    async def scenario():
        comm = communicator(run.pk, owner, after=3)
        assert (await comm.connect())[0]
        got = await receive_all(comm, 2)
        assert await comm.receive_nothing(timeout=0.3)
        await comm.disconnect()
        return got

    assert [m["seq"] for m in async_to_sync(scenario)()] == [4, 5]


def test_another_user_is_refused_with_4403(run):
    stranger = get_user_model().objects.create_user("eve", password="pw")

    async def scenario():
        comm = communicator(run.pk, stranger)
        connected, code = await comm.connect()
        return connected, code

    assert async_to_sync(scenario)() == (False, 4403)


def test_staff_may_watch_any_run(run):
    staff = get_user_model().objects.create_user("root", password="pw", is_staff=True)
    actions.append_event(run.pk, "turn", {"index": 0})

    async def scenario():
        comm = communicator(run.pk, staff)
        assert (await comm.connect())[0]
        got = await comm.receive_json_from(timeout=5)
        await comm.disconnect()
        return got

    assert async_to_sync(scenario)()["payload"] == {"index": 0}


def test_status_changes_are_events_and_stamp_the_run(run):
    actions.set_status(run.pk, Run.Status.RUNNING)
    actions.set_status(run.pk, Run.Status.FAILED, error="worker died")
    run.refresh_from_db()
    assert run.status == Run.Status.FAILED and run.error == "worker died"
    assert run.started_at is not None and run.finished_at >= run.started_at
    kinds = list(RunEvent.objects.filter(run=run).values_list("kind", "payload"))
    assert kinds == [
        ("status", {"status": "running", "error": ""}),
        ("status", {"status": "failed", "error": "worker died"}),
    ]
