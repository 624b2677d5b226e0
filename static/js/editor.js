// The kernel editor: one Monaco model per file of the version, evaluated on a worker with the verdict streamed
// back over the run's WebSocket; compiler errors become markers on their lines; an evaluated edit can be kept. The
// edit's verdict is shown beside the version's (rendered by the server), and the editor can diff the edit against
// the version as opened or any other version of the run (Monaco's diff editor, the edited side still editable).
(function () {
  const KS = window.KS;
  const panel = document.getElementById("edit");
  const pickFile = document.getElementById("edit-file");
  const evaluateButton = document.getElementById("evaluate");
  const keepButton = document.getElementById("keep");
  const statusLine = document.getElementById("verdict-status");
  const waitingLine = document.getElementById("verdict-waiting");
  const trials = document.getElementById("verdict-trials");
  const logBox = document.getElementById("verdict-log");
  const kept = document.getElementById("kept");
  const diffAgainst = document.getElementById("diff-against");
  let others = null;  // version id -> files, fetched when a diff against another version is first asked for
  const csrf = panel.querySelector("input[name=csrfmiddlewaretoken]").value;
  const original = JSON.parse(document.getElementById("version-files").textContent);
  const models = {};
  let monaco = null;
  let editor = null;
  let current = null;  // the evaluation this page is waiting for or showing
  let evaluatedText = null;  // the files that evaluation is about, to tell whether the editor changed since
  const latest = {};  // evaluation id -> its newest streamed state (the stream may beat the POST's answer)
  let waitingTimer = null;

  Object.keys(original).sort().forEach((path) => pickFile.add(new Option(path, path)));
  pickFile.value = window.KS.mainKernel(original) || Object.keys(original)[0];

  function files() {
    const out = {};
    Object.keys(original).forEach((path) => { out[path] = models[path] ? models[path].getValue() : original[path]; });
    return out;
  }

  function otherText(path) {
    if (diffAgainst.value === "opened") return Promise.resolve(original[path] || "");
    const load = others ? Promise.resolve(others) : fetch(diffAgainst.dataset.versions, { credentials: "same-origin" })
      .then((r) => r.json()).then((body) => {
        others = {};
        body.versions.forEach((v) => { others[String(v.id)] = v.files; });
        return others;
      });
    return load.then((all) => (all[diffAgainst.value] || {})[path] || "");
  }

  // One editor at a time: the plain one, or a diff editor whose right side is the same editable model.
  function showFile() {
    if (!monaco) return;
    const path = pickFile.value;
    const node = document.getElementById("editor");
    if (!diffAgainst.value) {
      if (editor && editor.getModifiedEditor) { editor.dispose(); editor = null; }
      if (!editor) editor = monaco.editor.create(node, { automaticLayout: true, minimap: { enabled: false } });
      editor.setModel(models[path]);
      panel.dataset.diff = "";
      return;
    }
    otherText(path).then((text) => {
      if (editor) editor.dispose();
      editor = monaco.editor.createDiffEditor(node, { automaticLayout: true, originalEditable: false,
                                                      renderSideBySide: true });
      editor.setModel({ original: monaco.editor.createModel(text, KS.language(path)), modified: models[path] });
      panel.dataset.diff = diffAgainst.value;
    });
  }

  // The edit's verdict beside the version's: the server renders it as it renders every verdict.
  function showAfter(id) {
    fetch("/evaluations/" + id + "/verdict", { credentials: "same-origin" }).then((r) => r.text()).then((html) => {
      if (id !== current) return;
      document.getElementById("verdict-after").outerHTML = html;
    });
  }

  // "…/kernels/k.cpp:12:5: error: …" (gcc, nvcc) and 'File "…/model_new.py", line 7' (Python) -> markers.
  function markErrors(log) {
    if (!monaco) return;
    const marks = {};
    const gcc = /(?:^|[\s/])((?:kernels\/[\w.\-\/]+)|binding\.cpp|model_new\.py)[:(](\d+)(?:[:,](\d+))?\)?:?\s*(fatal error|error|warning)?:?\s*(.*)$/gm;
    const py = /File "[^"]*?(model_new\.py)", line (\d+)/g;
    let m;
    while ((m = gcc.exec(log || "")) !== null) {
      (marks[m[1]] = marks[m[1]] || []).push({ line: +m[2], col: +(m[3] || 1), message: (m[4] ? m[4] + ": " : "") + m[5],
                                              severity: m[4] === "warning" ? monaco.MarkerSeverity.Warning : monaco.MarkerSeverity.Error });
    }
    while ((m = py.exec(log || "")) !== null) {
      (marks[m[1]] = marks[m[1]] || []).push({ line: +m[2], col: 1, message: "Python error (see the log)",
                                              severity: monaco.MarkerSeverity.Error });
    }
    Object.entries(models).forEach(([path, model]) => {
      monaco.editor.setModelMarkers(model, "sandbox", (marks[path] || []).map((k) => ({
        startLineNumber: k.line, endLineNumber: k.line, startColumn: k.col, endColumn: 1000,
        message: k.message, severity: k.severity })));
    });
  }

  // While the evaluation waits in its queue, where it stands (the stream says only "queued"): polled, every 2 s.
  function followQueue() {
    clearTimeout(waitingTimer);
    const id = current;
    if (panel.dataset.evaluationStatus !== "queued") { waitingLine.textContent = ""; return; }
    fetch("/evaluations/" + id, { credentials: "same-origin" }).then((r) => r.json()).then((body) => {
      if (id !== current || panel.dataset.evaluationStatus !== "queued") return;
      const w = body.waiting;
      waitingLine.textContent = w ? "waiting: " + w.ahead + " job" + (w.ahead === 1 ? "" : "s") + " ahead in the " +
                                    w.queue + " queue" : "";
      waitingTimer = setTimeout(followQueue, 2000);
    });
  }

  function showEvaluation(p) {
    if (!current || p.evaluation !== current) return;
    panel.dataset.evaluation = String(p.evaluation);
    panel.dataset.evaluationStatus = p.status;
    trials.innerHTML = "";
    logBox.hidden = true;
    followQueue();
    if (p.status === "queued" || p.status === "running") {
      statusLine.className = "muted";
      statusLine.textContent = "Evaluation #" + p.evaluation + " " + p.status + " on a worker…";
      return;
    }
    evaluateButton.disabled = false;
    showAfter(p.evaluation);
    if (p.status === "failed") {
      statusLine.className = "error-text";
      statusLine.textContent = "The evaluation could not finish. " + (p.failure || p.error);
      return;
    }
    const v = p.verdict;
    statusLine.className = "verdict reward-" + v.reward;
    statusLine.textContent = KS.verdictLine(v) + (v.violations && v.violations.length ? " · " + v.violations.join("; ") : "");
    (v.trials || []).forEach((t, i) => trials.appendChild(KS.el("li", t.ok ? "" : "error-text",
      "trial " + (i + 1) + ": " + (t.ok ? "correct" : (t.error || "incorrect")))));
    if (v.log) { logBox.textContent = v.log; logBox.hidden = false; }
    markErrors(v.log);
    keepButton.disabled = p.verdict === null || kept.dataset.evaluation === String(p.evaluation);
  }

  evaluateButton.addEventListener("click", () => {
    evaluateButton.disabled = true;
    keepButton.disabled = true;
    evaluatedText = JSON.stringify(files());
    fetch(panel.dataset.evaluate, { method: "POST", credentials: "same-origin",
                                    headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
                                    body: JSON.stringify({ files: JSON.parse(evaluatedText) }) })
      .then((r) => r.json().then((body) => ({ ok: r.ok, body })))
      .then(({ ok, body }) => {
        if (!ok) {
          evaluateButton.disabled = false;
          statusLine.className = "error-text";
          statusLine.textContent = body.error || "the edit was refused";
          return;
        }
        current = body.evaluation;
        showEvaluation(latest[current] || body);
      });
  });

  keepButton.addEventListener("click", () => {
    keepButton.disabled = true;
    fetch("/evaluations/" + current + "/keep", { method: "POST", credentials: "same-origin",
                                                 headers: { "X-CSRFToken": csrf } })
      .then((r) => r.json())
      .then((body) => {
        kept.hidden = false;
        kept.innerHTML = "";
        if (body.error) { kept.textContent = body.error; return; }
        kept.dataset.evaluation = String(current);
        const changed = JSON.stringify(files()) !== evaluatedText ? " (the evaluated files, not your later changes)" : "";
        kept.appendChild(document.createTextNode("Kept as version #" + body.version + changed + ": "));
        const link = KS.el("a", null, "open it");
        link.href = body.edit_url;
        kept.appendChild(link);
        kept.appendChild(document.createTextNode(" · "));
        const run = KS.el("a", null, "back to the run");
        run.href = body.run_url;
        kept.appendChild(run);
      });
  });

  pickFile.addEventListener("change", showFile);
  diffAgainst.addEventListener("change", showFile);
  KS.followRun(panel.dataset.run, Number(panel.dataset.lastSeq), (event) => {
    if (event.kind !== "evaluation") return;
    latest[event.payload.evaluation] = event.payload;
    showEvaluation(event.payload);
  });
  KS.loadMonaco(panel.dataset.monaco).then((m) => {
    monaco = m;
    Object.entries(original).forEach(([path, text]) => {
      models[path] = monaco.editor.createModel(text, KS.language(path), monaco.Uri.parse("file:///" + path));
    });
    showFile();
    panel.dataset.ready = "1";
  });
})();
