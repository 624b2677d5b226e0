// The run page's kernels: a chart of runtime per verified version against the eager and torch.compile lines,
// and the chosen version's files in a read-only Monaco (CUDA highlighting), or its diff against another version.
(function () {
  const panel = document.getElementById("kernels");
  const chart = document.getElementById("runtime-chart");
  const pickA = document.getElementById("version-a");
  const pickB = document.getElementById("version-b");
  const pickFile = document.getElementById("version-file");
  let versions = [];
  let editor = null;
  let monaco = null;

  const CUDA_KEYWORDS = ["__global__", "__device__", "__host__", "__shared__", "__constant__", "__restrict__",
    "__forceinline__", "__launch_bounds__", "__syncthreads", "__syncwarp", "__shfl_xor_sync", "__shfl_down_sync",
    "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "float4", "float2", "int4", "half", "__half",
    "__nv_bfloat16", "cudaStream_t", "dim3"];
  const CPP_KEYWORDS = ["auto", "bool", "break", "case", "char", "const", "constexpr", "continue", "default", "do",
    "double", "else", "enum", "extern", "false", "float", "for", "if", "inline", "int", "int64_t", "int32_t", "long",
    "namespace", "nullptr", "return", "short", "signed", "sizeof", "static", "struct", "switch", "template", "true",
    "typedef", "typename", "unsigned", "using", "void", "volatile", "while", "uint32_t", "uint64_t", "size_t"];

  function registerCuda(m) {
    m.languages.register({ id: "cuda", extensions: [".cu", ".cuh"] });
    m.languages.setMonarchTokensProvider("cuda", {
      cuda: CUDA_KEYWORDS, keywords: CPP_KEYWORDS,
      tokenizer: {
        root: [
          [/#\s*\w+/, "keyword.directive"],
          [/[a-zA-Z_]\w*/, { cases: { "@cuda": "type.identifier", "@keywords": "keyword", "@default": "identifier" } }],
          [/\/\/.*$/, "comment"],
          [/\/\*/, "comment", "@comment"],
          [/"([^"\\]|\\.)*"/, "string"],
          [/\d+\.?\d*([eE][-+]?\d+)?[fFlLuU]*/, "number"],
          [/<<<|>>>/, "keyword.operator"],
        ],
        comment: [[/[^/*]+/, "comment"], [/\*\//, "comment", "@pop"], [/[/*]/, "comment"]],
      },
    });
  }

  function language(path) {
    if (/\.(cu|cuh)$/.test(path)) return "cuda";
    if (/\.(cpp|cc|c|h|hpp)$/.test(path)) return "cpp";
    return path.endsWith(".py") ? "python" : "plaintext";
  }

  function label(v) {
    const ms = v.runtime_ms ? Number(v.runtime_ms).toFixed(4) + " ms" : "–";
    return "#" + v.id + " · reward " + v.reward + " · " + ms + (v.best ? " · best" : "");
  }

  function drawChart() {
    const ok = versions.filter((v) => v.runtime_ms);
    chart.innerHTML = "";
    if (!ok.length) return;
    const last = ok[ok.length - 1];
    const top = Math.max(...ok.map((v) => v.runtime_ms), last.eager_ms || 0, last.compiled_ms || 0) * 1.1;
    const x = (i) => 40 + (ok.length === 1 ? 260 : (i * 540) / (ok.length - 1));
    const y = (ms) => 150 - (ms / top) * 140;
    const ns = "http://www.w3.org/2000/svg";
    const add = (tag, attrs, text) => {
      const node = document.createElementNS(ns, tag);
      Object.entries(attrs).forEach(([k, v]) => node.setAttribute(k, v));
      if (text) node.textContent = text;
      chart.appendChild(node);
    };
    [["eager", last.eager_ms, "#8a6d00"], ["torch.compile", last.compiled_ms, "#5b6475"]].forEach(([name, ms, color]) => {
      if (!ms) return;
      add("line", { x1: 40, x2: 590, y1: y(ms), y2: y(ms), stroke: color, "stroke-dasharray": "4 3" });
      add("text", { x: 42, y: y(ms) - 3, fill: color, "font-size": 10 }, name + " " + Number(ms).toFixed(4) + " ms");
    });
    add("polyline", { points: ok.map((v, i) => x(i) + "," + y(v.runtime_ms)).join(" "), fill: "none",
                      stroke: "#2f6f4f", "stroke-width": 2 });
    ok.forEach((v, i) => add("circle", { cx: x(i), cy: y(v.runtime_ms), r: 3, fill: "#2f6f4f" }));
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
    const files = Object.keys((versions.find((v) => String(v.id) === pickA.value) || { files: {} }).files).sort();
    const keepFile = pickFile.value;
    pickFile.innerHTML = "";
    files.forEach((f) => pickFile.add(new Option(f, f)));
    pickFile.value = files.includes(keepFile) ? keepFile : (files.find((f) => f.startsWith("kernels/")) || files[0] || "");
  }

  function show() {
    if (!monaco || !versions.length) return;
    const a = versions.find((v) => String(v.id) === pickA.value);
    const b = versions.find((v) => String(v.id) === pickB.value);
    const path = pickFile.value;
    const lang = language(path);
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
      .then((data) => { versions = data.versions; fillPickers(); drawChart(); show(); });
  }

  [pickA, pickB, pickFile].forEach((el) => el.addEventListener("change", () => {
    if (el === pickA) fillPickers();
    show();
  }));
  // A new verified version arrives as a "version" event on the run's stream (run.js shows it in the table).
  new MutationObserver(refresh).observe(document.getElementById("version-rows"), { childList: true });

  window.require.config({ paths: { vs: panel.dataset.monaco } });
  window.require(["vs/editor/editor.main"], function () {
    monaco = window.monaco;
    registerCuda(monaco);
    show();
  });
  refresh();
})();
