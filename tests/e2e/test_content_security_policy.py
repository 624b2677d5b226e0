"""The studio's pages under their own Content-Security-Policy in Chromium: the run page (its live WebSocket, Monaco)
and the kernel editor work, and the browser reports no violation."""

import json

import pytest

from studio.testing import chromium_missing, in_studio

pytestmark = [pytest.mark.slow, pytest.mark.skipif(bool(chromium_missing()), reason=chromium_missing() or "ok")]

SEED = """
import json
from django.contrib.auth import get_user_model
from studio import actions
from studio.models import KernelVersion, Problem, Run
admin = get_user_model().objects.get(username="admin")
problem = Problem.objects.create(owner=admin, name="relu", source="# relu", sha256="0" * 64)
run = Run.objects.create(owner=admin, problem=problem)
files = {"kernels/relu.cu": "__global__ void relu(float* x) { x[threadIdx.x] = fmaxf(x[threadIdx.x], 0.f); }\\n",
         "model_new.py": "import torch\\n"}
version = KernelVersion.objects.create(problem=problem, run=run, files=files, verdict={"status": "ok", "reward": 1})
actions.append_event(run.pk, "turn", {"index": 1, "thought": "stored", "tool_calls": []})
print(json.dumps({"run": run.pk, "version": version.pk}))
"""
APPEND = """
from studio import actions
actions.append_event({run}, "turn", {{"index": 2, "thought": "live", "tool_calls": []}})
"""


@pytest.fixture(scope="module")
def seeded(studio):
    return json.loads(in_studio(studio, SEED).strip().splitlines()[-1])


def test_the_run_page_streams_and_shows_kernels_without_a_policy_violation(watched_page, studio, seeded, violations):
    page = watched_page
    response = page.goto(f"{studio.url}/runs/{seeded['run']}")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.wait_for_selector("#timeline li.card-turn")
    page.wait_for_selector("#editor .monaco-editor .view-lines")  # Monaco: scripts, styles, fonts, workers
    in_studio(studio, APPEND.format(run=seeded["run"]))
    page.wait_for_selector("#timeline li.card-turn:nth-child(2)")  # arrived over the WebSocket
    assert violations == []


def test_the_kernel_editor_works_without_a_policy_violation(watched_page, studio, seeded, violations):
    page = watched_page
    response = page.goto(f"{studio.url}/versions/{seeded['version']}/edit")
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    page.wait_for_selector("#edit[data-ready='1']")
    page.click("#editor .view-lines")
    page.keyboard.press("Control+End")
    page.keyboard.type("// typed under the policy\n")
    assert "typed under the policy" in page.evaluate("monaco.editor.getModels().map(m => m.getValue()).join()")
    assert violations == []
