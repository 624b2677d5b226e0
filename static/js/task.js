// A synthesized task's source, read-only in Monaco (the vendored AMD build, loaded from our own origin).
(function () {
  const panel = document.getElementById("task-source");
  const code = JSON.parse(document.getElementById("task-code").textContent);
  window.KS.loadMonaco(panel.dataset.monaco).then((monaco) => {
    monaco.editor.create(document.getElementById("editor"), {
      value: code, language: window.KS.language(panel.dataset.path), readOnly: true,
      automaticLayout: true, minimap: { enabled: false },
    });
  });
})();
