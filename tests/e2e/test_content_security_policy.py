"""The studio's pages under their own Content-Security-Policy in Chromium: the run page (its live WebSocket, Monaco)
and the kernel editor work, and the browser reports no violation."""

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings

from studio.testing import chromium_missing, log_in

pytestmark = [pytest.mark.slow, pytest.mark.skipif(bool(chromium_missing()), reason=chromium_missing() or "ok")]

# Reported by the page itself, so that nothing Chromium blocks goes unseen (it also logs its own line).
REPORT_VIOLATIONS = """document.addEventListener("securitypolicyviolation", (e) =>
  console.error("CSP violation: " + e.violatedDirective + " blocked " + e.blockedURI + " at " + e.sourceFile));"""
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


def in_studio(studio, code):
    """Run CODE in `manage.py shell` against STUDIO's database; its output."""
    env = {**os.environ, "DATABASE_URL": studio.database_url, "KS_CACHE_DIR": str(studio.folder / "cache")}
    proc = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def seeded(studio):
    return json.loads(in_studio(studio, SEED).strip().splitlines()[-1])


@pytest.fixture(scope="module")
def violations(browser):
    """Every CSP complaint the browser logs on this module's page."""
    browser.add_init_script(REPORT_VIOLATIONS)
    return []


@pytest.fixture(scope="module")
def watched_page(page, studio, violations):
    page.on(
        "console",
        lambda message: (
            violations.append(message.text)
            if "Content Security Policy" in message.text or "CSP violation" in message.text
            else None
        ),
    )
    log_in(page, studio)
    return page


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
