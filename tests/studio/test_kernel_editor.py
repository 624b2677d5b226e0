"""The kernel editor: edits evaluated by the sandbox on a real worker, verdicts stored then streamed, kept as human
versions, handed back to the agent; bad edits get a clear verdict and lose nothing stored."""

import django_rq
import pytest
from asgiref.sync import async_to_sync
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model

from agent.heuristic.analyze import analyze
from agent.heuristic.codegen import workspace_files
from agent.heuristic.plan import make_plan
from studio.models import Evaluation, KernelVersion, Problem, Run, RunEvent
from studio.routing import websocket_urlpatterns

pytestmark = pytest.mark.django_db(transaction=True)

SOURCE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x * 2.0 + 1.0)

def get_inputs():
    return [torch.randn(16, 256)]

def get_init_inputs():
    return []
"""


@pytest.fixture(scope="module")
def worker_cache(tmp_path_factory):
    """One cache for this module's workers: the problem's baselines and unchanged builds are measured once."""
    return str(tmp_path_factory.mktemp("worker-cache"))


@pytest.fixture
def drain(drain_queue, worker_cache):
    return lambda: drain_queue(KS_CACHE_DIR=worker_cache)


@pytest.fixture
def version(tmp_path):
    """An agent's version of a finished run: the heuristic's C++ workspace for SOURCE."""
    owner = get_user_model().objects.create_user("ada", password="pw")
    problem_path = tmp_path / "chain.py"
    problem_path.write_text(SOURCE)
    files = workspace_files(make_plan(analyze(str(problem_path))), "cpu", SOURCE)
    problem = Problem.objects.create(owner=owner, name="chain", source=SOURCE, sha256="0" * 64, device="cpu")
    run = Run.objects.create(owner=owner, problem=problem, status="succeeded", policy="heuristic", max_turns=8)
    version = KernelVersion.objects.create(
        problem=problem, run=run, files=files, verdict={"status": "ok", "correct": True, "reward": 0, "runtime_ms": 9.0}
    )
    Run.objects.filter(pk=run.pk).update(best_version=version)
    django_rq.get_queue("cpu").empty()
    return version


def kernel_path(files):
    return next(path for path in files if path.startswith("kernels/"))


def evaluate(client, version, files):
    return client.post(f"/versions/{version.pk}/evaluations", {"files": files}, content_type="application/json")


def stream(run_id, user):
    """Everything the run's WebSocket replays to a browser that connects now."""

    async def scenario():
        comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/runs/{run_id}/")
        comm.scope["user"] = user
        assert (await comm.connect())[0]
        received = []
        while not await comm.receive_nothing(timeout=0.5):
            received.append(await comm.receive_json_from())
        await comm.disconnect()
        return received

    return async_to_sync(scenario)()


def test_the_editor_page_opens_a_version_in_an_editable_monaco(client, version):
    client.force_login(version.problem.owner)
    page = client.get(f"/versions/{version.pk}/edit").content.decode()
    assert "js/editor.js" in page and 'id="version-files"' in page and "binding.cpp" in page
    assert f'data-run="{version.run_id}"' in page and f"/versions/{version.pk}/handback" in page


def test_an_edit_is_evaluated_on_a_worker_streamed_and_kept_as_a_human_version(client, version, drain):
    client.force_login(version.problem.owner)
    files = dict(version.files)
    path = kernel_path(files)
    files[path] = "// tuned by hand\n" + files[path]
    queued = evaluate(client, version, files)
    assert queued.status_code == 202 and queued.json()["status"] == "queued"
    evaluation_id = queued.json()["evaluation"]
    assert client.post(f"/evaluations/{evaluation_id}/keep").status_code == 409  # no verdict yet
    drain()
    evaluation = Evaluation.objects.get(pk=evaluation_id)
    assert evaluation.status == "done" and evaluation.verdict["status"] == "ok", evaluation.verdict
    assert evaluation.verdict["correct"] and evaluation.files[path].startswith("// tuned by hand")
    # Stored first, then streamed: a browser connecting now replays queued -> running -> done, equal to the rows.
    events = [e for e in stream(version.run_id, version.problem.owner) if e["kind"] == "evaluation"]
    assert [e["payload"]["status"] for e in events] == ["queued", "running", "done"]
    stored = RunEvent.objects.filter(run=version.run, kind="evaluation").order_by("seq")
    assert events == [e.to_message() for e in stored]
    assert events[-1]["payload"]["verdict"]["reward"] == evaluation.verdict["reward"]
    assert client.get(f"/evaluations/{evaluation_id}").json()["status"] == "done"

    kept = client.post(f"/evaluations/{evaluation_id}/keep").json()
    new = KernelVersion.objects.get(pk=kept["version"])
    assert new.human_edit and new.author == "ada" and new.parent_id == version.pk and new.run_id == version.run_id
    assert new.files == evaluation.files and new.verdict == evaluation.verdict
    assert client.post(f"/evaluations/{evaluation_id}/keep").json()["version"] == new.pk  # keeping twice: once
    assert RunEvent.objects.filter(run=version.run, kind="version", payload__version=new.pk).count() == 1
    rows = client.get(f"/runs/{version.run_id}/versions.json").json()["versions"]
    assert [(v["id"], v["author"]) for v in rows] == [(version.pk, "agent"), (new.pk, "ada")]


def test_bad_edits_get_a_clear_verdict_and_lose_nothing_stored(client, version, drain):
    client.force_login(version.problem.owner)
    broken = dict(version.files)
    path = kernel_path(broken)
    broken[path] = broken[path] + "\nvoid oops() { this is not C++; }\n"
    cheating = dict(version.files)
    cheating["model_new.py"] = (
        "import torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n"
        "    def forward(self, x):\n        return torch.relu(x * 2.0 + 1.0)\n"
    )
    crashing = dict(version.files, **{"model_new.py": "import os\nos._exit(3)\n"})
    ids = [evaluate(client, version, files).json()["evaluation"] for files in (broken, cheating, crashing)]
    drain()
    compile_error, violation, crash = (Evaluation.objects.get(pk=i).verdict for i in ids)
    assert compile_error["status"] == "compile_error" and compile_error["reward"] == -1
    assert f"{path.split('/')[-1]}:" in compile_error["log"] and "error" in compile_error["log"]
    assert violation["status"] == "violation" and violation["violations"], violation
    assert crash["status"] in ("crashed", "load_error", "runtime_error") and crash["reward"] == -1, crash
    # A failing edit may be kept (work is not lost) but never becomes the run's best.
    kept = client.post(f"/evaluations/{ids[0]}/keep").json()["version"]
    run = Run.objects.get(pk=version.run_id)
    assert run.best_version_id == version.pk and KernelVersion.objects.get(pk=kept).verdict["status"] == "compile_error"
    version.refresh_from_db()
    assert version.files[path] == broken[path].rsplit("\nvoid oops", 1)[0]


@pytest.mark.parametrize(
    "body, reason",
    [
        ({"files": {"../etc/passwd": "x", "model_new.py": ""}}, "not a plain relative path"),
        ({"files": {"setup.py": "x", "model_new.py": ""}}, "not a solution file"),
        ({"files": {"kernels/k.cpp": "int x;"}}, "needs model_new.py"),
        ({"files": {"model_new.py": "\x00"}}, "NUL"),
        ({"files": ["model_new.py"]}, "{path: text}"),
    ],
)
def test_it_rejects_edits_that_are_not_a_workspace_and_stores_nothing(client, version, body, reason):
    client.force_login(version.problem.owner)
    response = evaluate(client, version, body["files"])
    assert response.status_code == 400 and reason in response.json()["error"]
    assert not Evaluation.objects.exists() and not RunEvent.objects.filter(run=version.run).exists()
    bad_json = client.post(f"/versions/{version.pk}/evaluations", b"{nope", content_type="application/json")
    assert bad_json.status_code == 400 and "send JSON" in bad_json.json()["error"]


def test_it_rejects_edits_over_the_size_limit(client, version, settings):
    settings.KS_UPLOAD_LIMIT_BYTES = 1000
    client.force_login(version.problem.owner)
    response = evaluate(client, version, version.files)
    assert response.status_code == 400 and "the limit is 1000 bytes" in response.json()["error"]


def test_another_user_can_neither_open_evaluate_keep_nor_hand_back(client, version):
    client.force_login(version.problem.owner)
    evaluation_id = evaluate(client, version, version.files).json()["evaluation"]
    client.force_login(get_user_model().objects.create_user("eve", password="pw"))
    assert client.get(f"/versions/{version.pk}/edit").status_code == 404
    assert evaluate(client, version, version.files).status_code == 404
    assert client.get(f"/evaluations/{evaluation_id}").status_code == 404
    assert client.post(f"/evaluations/{evaluation_id}/keep").status_code == 404
    assert client.post(f"/versions/{version.pk}/handback", {"policy": "heuristic", "max_turns": 3}).status_code == 404
    assert Evaluation.objects.count() == 1 and Run.objects.count() == 1


def test_a_version_handed_back_starts_a_new_run_from_its_files(client, version, drain):
    client.force_login(version.problem.owner)
    files = dict(version.files, **{"kernels/notes_by_ada.h": "// keep the block size at 256\n"})
    kept = KernelVersion.objects.create(
        problem=version.problem,
        run=version.run,
        parent=version,
        files=files,
        author="ada",
        human_edit=True,
        verdict=version.verdict,
    ).pk
    response = client.post(f"/versions/{kept}/handback", {"policy": "heuristic", "max_turns": 4})
    run = Run.objects.exclude(pk=version.run_id).get()
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}"
    assert run.start_version_id == kept and run.device == "cpu" and run.max_turns == 4
    drain()
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    # The episode's workspace started from the kept files: the agent's task lists the file only they hold.
    assert "kernels/notes_by_ada.h" in run.trajectory["messages"][1]["content"]
    page = client.get(f"/runs/{run.pk}").content.decode()
    assert f"/versions/{kept}/edit" in page and "edited by ada" in page
