// The run page's kernels: a chart of runtime per verified version against the eager and torch.compile lines,
// and the chosen version's files in a read-only Monaco (CUDA highlighting), or its diff against another version;
// a link opens the chosen version in the editor.
(function () {
  const KS = window.KS;
  const panel = document.getElementById("kernels");
  const chart = document.getElementById("runtime-chart");
  const pickA = document.getElementById("version-a");
  const pickB = document.getElementById("version-b");
  const pickFile = document.getElementById("version-file");
  const editLink = document.getElementById("version-edit");
  let versions = [];
  let editor = null;
  let monaco = null;

  function label(v) {
    const ms = v.runtime_ms ? Number(v.runtime_ms).toFixed(4) + " ms" : "–";
    return "#" + v.id + " · reward " + v.reward + " · " + ms + (v.best ? " · best" : "");
  }

  // Runtime per verified version (x: the versions in order, labelled by id), the baselines as dashed lines labelled
  // at the right edge (moved apart when close), the y axis from 0 with its top value.
  function drawChart() {
    const ok = versions.filter((v) => v.runtime_ms);
    chart.innerHTML = "";
    if (!ok.length) return;
    const last = ok[ok.length - 1];
    const top = Math.max(...ok.map((v) => v.runtime_ms), last.eager_ms || 0, last.compiled_ms || 0) * 1.15;
    const left = 56, right = 470, bottom = 145, height = 125;
    const x = (i) => left + (ok.length === 1 ? (right - left) / 2 : (i * (right - left)) / (ok.length - 1));
    const y = (ms) => bottom - (ms / top) * height;
    const ns = "http://www.w3.org/2000/svg";
    const add = (tag, attrs, text) => {
      const node = document.createElementNS(ns, tag);
      Object.entries(attrs).forEach(([k, v]) => node.setAttribute(k, v));
      if (text) node.textContent = text;
      chart.appendChild(node);
      return node;
    };
    add("line", { x1: left, x2: right, y1: bottom, y2: bottom, stroke: "#c9ced8" });
    add("text", { x: left - 6, y: bottom + 4, "text-anchor": "end", "font-size": 10, fill: "#5b6475" }, "0");
    add("text", { x: left - 6, y: bottom - height + 4, "text-anchor": "end", "font-size": 10, fill: "#5b6475" },
        Number(top).toPrecision(3));
    add("text", { x: 4, y: 12, "font-size": 10, fill: "#5b6475" }, "ms per call");
    const labels = [];
    [["eager", last.eager_ms, "#8a6d00"], ["torch.compile", last.compiled_ms, "#5b6475"]].forEach(([name, ms, color]) => {
      if (!ms) return;
      add("line", { x1: left, x2: right, y1: y(ms), y2: y(ms), stroke: color, "stroke-dasharray": "4 3" });
      labels.push({ y: y(ms), text: name + " " + KS.fmtMs(ms), color });
    });
    labels.sort((a, b) => a.y - b.y);
    for (let i = 1; i < labels.length; i++) labels[i].y = Math.max(labels[i].y, labels[i - 1].y + 12);
    labels.forEach((l) => add("text", { x: right + 6, y: l.y + 4, fill: l.color, "font-size": 10 }, l.text));
    add("polyline", { points: ok.map((v, i) => x(i) + "," + y(v.runtime_ms)).join(" "), fill: "none",
                      stroke: "#2f6f4f", "stroke-width": 2 });
    ok.forEach((v, i) => {
      const dot = add("circle", { cx: x(i), cy: y(v.runtime_ms), r: v.best ? 5 : 3, fill: "#2f6f4f" });
      dot.appendChild(document.createElementNS(ns, "title")).textContent = label(v);
      if (ok.length <= 12 || v.best || i === ok.length - 1) {
        add("text", { x: x(i), y: bottom + 14, "text-anchor": "middle", "font-size": 10, fill: "#5b6475" }, "#" + v.id);
      }
    });
  }

  function fillPickers() {
    const keepA = pickA.value, keepB = pickB.value;
    pickA.innerHTML = "";
    pickB.innerHTML = '<option value="">(no diff)</option>';
    versions.forEach((v) => {
      pickA.add(new Option(label(v), v.id));
      pickB.add(new Option(label(v), v.id));
    });
    const best = versions.find((v) => v.best) || versions[versions.length - 1];
    pickA.value = keepA || (best ? best.id : "");
    pickB.value = keepB;
    const chosen = (versions.find((v) => String(v.id) === pickA.value) || { files: {} }).files;
    const files = Object.keys(chosen).sort();
    const keepFile = pickFile.value;
    pickFile.innerHTML = "";
    files.forEach((f) => pickFile.add(new Option(f, f)));
    pickFile.value = files.includes(keepFile) ? keepFile : (window.KS.mainKernel(chosen) || files[0] || "");
    editLink.hidden = !pickA.value;
    editLink.href = "/versions/" + pickA.value + "/edit";
  }

  function show() {
    if (!monaco || !versions.length) return;
    const a = versions.find((v) => String(v.id) === pickA.value);
    const b = versions.find((v) => String(v.id) === pickB.value);
    const path = pickFile.value;
    const lang = window.KS.language(path);
    const node = document.getElementById("editor");
    if (editor) editor.dispose();
    const textA = (a && a.files[path]) || "";
    if (b) {
      editor = monaco.editor.createDiffEditor(node, { readOnly: true, automaticLayout: true });
      editor.setModel({ original: monaco.editor.createModel(b.files[path] || "", lang),
                        modified: monaco.editor.createModel(textA, lang) });
    } else {
      editor = monaco.editor.create(node, { value: textA, language: lang, readOnly: true, automaticLayout: true,
                                            minimap: { enabled: false } });
    }
  }

  function refresh() {
    return fetch(panel.dataset.versions, { credentials: "same-origin" })
      .then((r) => r.json())
      .then((data) => {
        versions = data.versions;
        panel.hidden = !versions.length;  // no empty panel before the first verified version
        fillPickers();
        drawChart();
        show();
      });
  }

  [pickA, pickB, pickFile].forEach((el) => el.addEventListener("change", () => {
    if (el === pickA) fillPickers();
    show();
  }));
  // A new verified version arrives as a "version" event on the run's stream (run.js shows it in the table).
  new MutationObserver(refresh).observe(document.getElementById("version-rows"), { childList: true });

  window.KS.loadMonaco(panel.dataset.monaco).then((m) => { monaco = m; show(); });
  refresh();
})();
