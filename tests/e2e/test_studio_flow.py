"""A person's whole path through the studio in Chromium: sign up, sign in, see each upload error beside its field,
upload a problem, watch a heuristic run live on the CPU target (reloading mid-run) until its page leads with the
verdict and speedup bars, edit and evaluate a kernel with the verdicts before and after side by side, diff two
versions, download the package, run again and delete from "my runs" and "my problems", follow a staff evaluation's
progress.
Screenshots: artifacts/e2e/."""

import gzip
import re

import psycopg
import pytest

from studio.testing import chromium_missing, log_in

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
    return page.eval_on_selector_all(
        "#timeline li.card-turn h3", "hs => hs.map(h => Number(h.textContent.split(' ')[1]))"
    )


def stored_turns(studio, run_id):
    with psycopg.connect(studio.database_url.replace("postgres://", "postgresql://")) as conn:
        return [
            row[0]
            for row in conn.execute(
                "SELECT (payload->>'index')::int FROM studio_runevent WHERE run_id = %s AND kind = 'turn' ORDER BY seq",
                [run_id],
            )
        ]


def text_of(page, path):
    return page.evaluate("p => monaco.editor.getModel(monaco.Uri.parse('file:///' + p)).getValue()", path)


def needs(key):
    if key not in state:
        pytest.skip(f"needs the {key} of an earlier test")
    return state[key]


def test_sign_up_shows_errors_beside_fields_then_signs_the_new_account_in(page, studio, shot):
    page.goto(studio.url + "/accounts/signup")
    page.fill("#id_username", "grace")
    page.fill("#id_password1", "a-long passphrase 91")
    page.fill("#id_password2", "another passphrase")
    page.click("main button[type=submit]")
    assert "didn" in page.inner_text("#id_password2-error")  # "The two password fields didn't match."
    shot(page, "00-sign-up-error")
    page.fill("#id_password1", "a-long passphrase 91")
    page.fill("#id_password2", "a-long passphrase 91")
    page.click("main button[type=submit]")
    page.wait_for_url(studio.url + "/")
    assert "Sign out grace" in page.inner_text("header")
    page.click("text=Sign out grace")
    page.wait_for_url(re.compile(r"/accounts/login/"))


def test_upload_errors_are_shown_beside_their_fields(page, studio, shot, tmp_path):
    log_in(page, studio)
    page.goto(studio.url + "/problems/new")
    page.click("text=Validate and save")
    page.wait_for_selector(".upload-form .form-error")
    assert "one of the two" in page.inner_text(".upload-form .form-error")
    big = tmp_path / "big.py"
    big.write_text("#" * (3 << 19))  # 1.5 MB against the 1 MB limit
    page.set_input_files("#id_file", str(big))
    page.click("text=Validate and save")
    page.wait_for_selector("#id_file-error")
    assert page.inner_text("#id_file-error") == "The file is 1.5 MB; the limit is 1.0 MB."
    shot(page, "01b-upload-too-big")
    page.fill("#id_code", "import torch.nn as nn\n\nclass Model(nn.Module):\n    pass\n")
    page.set_input_files("#id_file", [])
    assert page.eval_on_selector("#id_device", "s => s.value") == "cpu"  # no GPU here: the form starts on the CPU
    page.click("text=Validate and save")
    page.wait_for_selector("text=The problem is not valid", timeout=120_000)
    assert "get_inputs" in page.inner_text("pre.reason")
    shot(page, "01c-upload-invalid")
    page.click("text=Sign out")
    page.wait_for_url(re.compile(r"/accounts/login/"))


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
    # While it runs (read in one go: the page may finish meanwhile), the turns lead and only Cancel is offered.
    live = page.evaluate(
        """() => { const top = (s) => { const e = document.querySelector(s); return e && !e.hidden ?
            e.getBoundingClientRect().top : Infinity; };
          return { status: document.getElementById('run-status').textContent,
                   turnsFirst: top('.run-turns') < Math.min(top('#kernels'), top('#versions')),
                   cancel: !!document.getElementById('run-cancel'), retry: !!document.getElementById('run-retry'),
                   verdict: !!document.getElementById('run-verdict') }; }"""
    )
    if live["status"] == "running":
        assert live["turnsFirst"] and live["cancel"] and not live["retry"] and not live["verdict"], live
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
    # Once it ended, the page leads with the verdict: correct, the reward badge, speedup bars with their spread.
    page.wait_for_selector("#run-verdict .verdict-headline")
    assert page.inner_text("#run-verdict .headline").startswith("Correct: ")
    assert page.locator("#run-verdict .reward-badge").inner_text().startswith("reward ")
    assert page.locator("#run-verdict svg.speedups g.bar").count() >= 1
    assert "trials correct" in page.inner_text("#run-verdict .trials")
    assert page.evaluate(
        "() => document.querySelector('#run-verdict').getBoundingClientRect().top < "
        "document.querySelector('#timeline').getBoundingClientRect().top"
    )
    assert page.locator("#run-cancel").count() == 0 and page.locator("#run-retry").count() == 1
    assert page.locator(".run-meta .worker-status").count() == 0  # no worker indicator once the run ended
    assert all(float(x) > 0 for x in re.findall(r"\(([-\d.]+)–", page.text_content("#run-verdict svg.speedups")))
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
    # The edit's verdict beside the version's, both rendered as every verdict is.
    page.wait_for_selector("#verdict-after .verdict-headline")
    assert page.inner_text("#verdict-after h2").startswith("After: your edit")
    assert page.inner_text("#verdict-before h2").startswith("Before: version #")
    assert page.evaluate(
        "() => { const a = document.querySelector('#verdict-before').getBoundingClientRect(), "
        "b = document.querySelector('#verdict-after').getBoundingClientRect(); "
        "return Math.abs(a.top - b.top) < 2 && a.left < b.left; }"
    )
    # The edit against the version as opened, in Monaco's diff editor, still editable on its right side.
    page.select_option("#diff-against", "opened")
    page.wait_for_selector("#edit[data-diff='opened'] .monaco-diff-editor")
    assert page.evaluate(
        "() => monaco.editor.getDiffEditors()[0].getModel().modified.getValue()"
        ".includes('tuned by hand in the browser')"
    )
    shot(page, "08-editor-verdict")
    page.select_option("#diff-against", "")
    page.wait_for_function("() => document.getElementById('edit').dataset.diff === ''")
    page.click("#keep")
    page.wait_for_selector("#kept:has-text('Kept as version')")
    kept = int(re.search(r"version #(\d+)", page.inner_text("#kept")).group(1))
    # A broken edit gets its compiler error, on its line, and the kept version is untouched.
    page.click("#editor .view-lines")
    page.keyboard.press("Control+End")
    page.keyboard.type("this is not C++;\n")
    page.click("#evaluate")
    page.wait_for_function(
        "() => document.getElementById('verdict-status').textContent.startsWith('compile_error')", timeout=180_000
    )
    broken_line = text_of(page, kernel).splitlines().index("this is not C++;") + 1
    markers = page.evaluate(
        "monaco.editor.getModelMarkers({owner: 'sandbox'}).map(m => [m.resource.path, m.startLineNumber])"
    )
    assert ["/" + kernel, broken_line] in markers and "error" in page.inner_text("#verdict-log")
    shot(page, "09-editor-compile-error")
    page.goto(needs("run"))
    page.wait_for_selector(f"#version-rows a[href='/versions/{kept}/edit']")
    assert "edit by " + studio.username in page.inner_text("#version-rows")
    state["kept"] = kept


def test_a_diff_between_two_versions_of_the_run(page, studio, shot):
    kept = needs("kept")
    page.goto(needs("run"))
    page.wait_for_selector(f"#version-a option[value='{kept}']", state="attached")
    page.select_option("#version-a", str(kept))
    agent = page.eval_on_selector_all("#version-b option", "os => os.map(o => o.value).filter(v => v)")
    agent = next(v for v in agent if v != str(kept))
    page.select_option("#version-b", agent)
    page.wait_for_selector("#kernels .monaco-diff-editor")
    models = page.evaluate(
        "() => { const m = monaco.editor.getDiffEditors()[0].getModel(); "
        "return [m.original.getValue(), m.modified.getValue()]; }"
    )
    assert "tuned by hand in the browser" in models[1] and "tuned by hand in the browser" not in models[0]
    shot(page, "09b-run-diff")


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


def test_my_runs_runs_again_and_deletes(page, studio, shot):
    run_id = int(needs("run").rsplit("/", 1)[1])
    page.goto(studio.url + "/runs/")
    row = page.locator(f"#run-row-{run_id}")
    assert "succeeded" in row.inner_text() and re.search(r"\d+\.\d\dx", row.inner_text())
    shot(page, "11-my-runs")
    row.locator("text=Run again").click()
    page.wait_for_url(re.compile(r"/runs/\d+$"))
    again = int(page.url.rsplit("/", 1)[1])
    assert again != run_id and page.inner_text("#run-status") in ("queued", "running", "succeeded")
    page.goto(studio.url + "/runs/")
    page.once("dialog", lambda dialog: dialog.accept())
    with page.expect_navigation():
        page.locator(f"#run-row-{again} >> text=Delete").click()
    page.goto(studio.url + "/runs/")
    assert page.locator(f"#run-row-{again}").count() == 0 and page.locator(f"#run-row-{run_id}").count() == 1
    shot(page, "12-my-runs-after-delete")


def test_my_problems_show_the_best_speedup_run_again_and_delete(page, studio, shot):
    problem_id = int(needs("problem").rsplit("/", 1)[1])
    page.goto(studio.url + "/problems/")
    row = page.locator(f"#problem-row-{problem_id}")
    assert "succeeded" in row.locator(".latest-status").inner_text()
    assert re.fullmatch(r"\d+\.\d\dx", row.locator(".best-speedup").inner_text().strip())
    page.goto(studio.url + "/problems/?status=none")
    assert page.locator(f"#problem-row-{problem_id}").count() == 0
    page.goto(studio.url + "/problems/?name=SIGMOID")
    shot(page, "13-my-problems")
    page.locator(f"#problem-row-{problem_id} >> text=Run again").click()
    page.wait_for_url(re.compile(r"/runs/\d+$"))
    assert page.inner_text("#run-status") in ("queued", "running", "succeeded")
    page.goto(studio.url + "/problems/")
    page.once("dialog", lambda dialog: dialog.accept())
    with page.expect_navigation():
        page.locator(f"#problem-row-{problem_id} >> text=Delete").click()
    assert page.locator(f"#problem-row-{problem_id}").count() == 0
    page.goto(studio.url + "/runs/?problem=sigmoid_scale")
    assert page.locator("#run-list").count() == 0 and "No run matches" in page.inner_text("main")
    shot(page, "14-my-problems-after-delete")


def test_staff_follow_an_evaluations_progress(page, studio, shot):
    with psycopg.connect(studio.database_url.replace("postgres://", "postgresql://")) as conn:
        user_id = conn.execute("SELECT id FROM auth_user WHERE username = %s", [studio.username]).fetchone()[0]
        evaluation = conn.execute(
            "INSERT INTO studio_benchevaluation (status, job_id, error, created_at, started_at, created_by_id, policy,"
            " model, device, levels, sandbox, folder, progress) VALUES ('running', '', '', now(),"
            " now() - interval '10 minutes', %s, 'heuristic', '', 'cpu', '1', 'strict', '', %s::jsonb) RETURNING id",
            [user_id, '{"done": 4, "total": 10, "correct": 3, "current": "level1/5_Matrix_scalar"}'],
        ).fetchone()[0]
    page.goto(f"{studio.url}/staff/evaluations/{evaluation}")
    assert "4 of 10 problems done" in page.inner_text("#evaluation-progress")
    assert page.inner_text(".current-problem") == "level1/5_Matrix_scalar"
    assert page.inner_text(".elapsed").startswith("elapsed 10 min") and "left" in page.inner_text(".eta")
    shot(page, "15-staff-evaluation-progress")
