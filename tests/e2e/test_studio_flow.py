"""A person's whole path through the studio in Chromium: sign in, upload a problem, watch a heuristic run live on the
CPU target (reloading mid-run), edit and evaluate a kernel, download the package. Screenshots: artifacts/e2e/."""
import gzip
import re

import psycopg
import pytest

from studio.testing import chromium_missing

pytestmark = [pytest.mark.slow, pytest.mark.skipif(bool(chromium_missing()), reason=chromium_missing() or "ok")]

PROBLEM = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.sigmoid(x) * 2.0 - 0.5


def get_inputs():
    return [torch.randn(64, 1024)]


def get_init_inputs():
    return []
"""
state = {}


def turn_indexes(page):
    return page.eval_on_selector_all("#timeline li.card-turn h3", "hs => hs.map(h => Number(h.textContent.split(' ')[1]))")


def stored_turns(studio, run_id):
    with psycopg.connect(studio.database_url.replace("postgres://", "postgresql://")) as conn:
        return [row[0] for row in conn.execute(
            "SELECT (payload->>'index')::int FROM studio_runevent WHERE run_id = %s AND kind = 'turn' ORDER BY seq",
            [run_id])]


def text_of(page, path):
    return page.evaluate("p => monaco.editor.getModel(monaco.Uri.parse('file:///' + p)).getValue()", path)


def needs(key):
    if key not in state:
        pytest.skip(f"needs the {key} of an earlier test")
    return state[key]


def test_sign_in_and_upload_a_problem(page, studio, shot, tmp_path):
    page.goto(studio.url + "/")
    assert "/accounts/login/" in page.url
    shot(page, "01-sign-in")
    page.fill("#id_username", studio.username)
    page.fill("#id_password", studio.password)
    page.click("main button[type=submit]")
    page.wait_for_url(studio.url + "/")
    page.click("text=Upload a problem")
    source = tmp_path / "sigmoid_scale.py"
    source.write_text(PROBLEM)
    page.set_input_files("#id_file", str(source))
    page.select_option("#id_device", "cpu")
    shot(page, "02-upload")
    page.click("text=Validate and save")
    page.wait_for_url(re.compile(r"/problems/\d+$"), timeout=120_000)
    assert page.inner_text("h1") == "sigmoid_scale"
    assert "torch.Size([64, 1024])" in page.inner_text("dl.spec") or "64, 1024" in page.inner_text("dl.spec")
    shot(page, "03-problem")
    state["problem"] = page.url


def test_a_heuristic_run_streams_turn_cards_live_and_a_reload_shows_no_gap(page, studio, shot):
    page.goto(needs("problem"))
    page.select_option("#id_policy", "heuristic")
    page.select_option("#id_device", "cpu")
    page.fill("#id_max_turns", "8")
    page.click("text=Start a run")
    page.wait_for_url(re.compile(r"/runs/\d+$"))
    run_id = int(page.url.rsplit("/", 1)[1])
    state["run"] = page.url
    # Live: cards arrive over the WebSocket while the page stays loaded.
    page.wait_for_selector("#timeline li.card-turn", timeout=180_000)
    first = len(turn_indexes(page))
    shot(page, "04-run-live")
    if page.inner_text("#run-status") == "running":
        page.reload()  # mid-run: stored cards are rendered, then the stream resumes after the last seq
        page.wait_for_selector("#timeline li.card-turn")
        shown = turn_indexes(page)
        assert shown == list(range(1, len(shown) + 1)) and len(shown) >= first
        shot(page, "05-run-reloaded")
    # Predicates as functions: Playwright evaluates a bare expression with eval, which the pages' policy forbids.
    page.wait_for_function("() => document.getElementById('run-status').textContent !== 'running'", timeout=300_000)
    assert page.inner_text("#run-status") == "succeeded", page.inner_text("#run-error")
    # Every stored turn is shown exactly once, in order, after live streaming and the reload.
    shown = turn_indexes(page)
    assert shown == stored_turns(studio, run_id) and shown == list(range(1, len(shown) + 1)) and len(shown) > first - 1
    assert page.locator("#version-rows tr").count() >= 1
    page.wait_for_selector("#runtime-chart circle", state="attached")
    shot(page, "06-run-finished")


def test_edit_and_evaluate_a_kernel_then_keep_it(page, studio, shot):
    page.goto(needs("run"))
    page.click("text=open in the editor")
    page.wait_for_url(re.compile(r"/versions/\d+/edit$"))
    page.wait_for_selector("#edit[data-ready='1']")
    kernel = page.eval_on_selector("#edit-file", "s => s.value")
    assert kernel.startswith("kernels/")
    page.click("#editor .view-lines")
    page.keyboard.press("Control+End")
    before = text_of(page, kernel)
    page.keyboard.type("\n// tuned by hand in the browser\n")
    assert text_of(page, kernel) == before + "\n// tuned by hand in the browser\n"
    shot(page, "07-editor")
    page.click("#evaluate")
    page.wait_for_selector("#edit[data-evaluation-status='done']", timeout=180_000)
    verdict = page.inner_text("#verdict-status")
    assert verdict.startswith("ok · reward"), verdict
    assert "correct" in page.inner_text("#verdict-trials")
    shot(page, "08-editor-verdict")
    page.click("#keep")
    page.wait_for_selector("#kept:has-text('Kept as version')")
    kept = int(re.search(r"version #(\d+)", page.inner_text("#kept")).group(1))
    # A broken edit gets its compiler error, on its line, and the kept version is untouched.
    page.click("#editor .view-lines")
    page.keyboard.press("Control+End")
    page.keyboard.type("this is not C++;\n")
    page.click("#evaluate")
    page.wait_for_function("() => document.getElementById('verdict-status').textContent.startsWith('compile_error')",
                           timeout=180_000)
    broken_line = text_of(page, kernel).splitlines().index("this is not C++;") + 1
    markers = page.evaluate("monaco.editor.getModelMarkers({owner: 'sandbox'}).map(m => [m.resource.path, m.startLineNumber])")
    assert ["/" + kernel, broken_line] in markers and "error" in page.inner_text("#verdict-log")
    shot(page, "09-editor-compile-error")
    page.goto(needs("run"))
    page.wait_for_selector(f"#version-rows a[href='/versions/{kept}/edit']")
    assert "edit by " + studio.username in page.inner_text("#version-rows")
    state["kept"] = kept


def test_download_the_best_version_as_a_package(page, studio, shot):
    page.goto(needs("run"))
    page.click("text=Download as a pip-installable package")
    link = page.wait_for_selector("a[href$='.tar.gz']", timeout=300_000)
    shot(page, "10-package")
    with page.expect_download() as download:
        link.click()
    path = download.value.path()
    with open(path, "rb") as f:
        assert gzip.decompress(f.read())[:512].strip(b"\0")  # a real gzip'd tarball
    assert download.value.suggested_filename.endswith(".tar.gz")
