// A run's event stream over its WebSocket: resumes after the last seq seen, reconnects with back-off,
// and hands every event to the page once, in seq order.
(function () {
  const KS = (window.KS = window.KS || {});

  KS.followRun = function (runId, after, onEvent) {
    let lastSeq = after;
    let delay = 500;
    function connect() {
      const scheme = location.protocol === "https:" ? "wss" : "ws";
      const socket = new WebSocket(scheme + "://" + location.host + "/ws/runs/" + runId + "/?after=" + lastSeq);
      socket.onopen = () => { delay = 500; };
      socket.onmessage = (message) => {
        const event = JSON.parse(message.data);
        if (event.seq <= lastSeq) return;  // replay and live overlap
        lastSeq = event.seq;
        onEvent(event);
      };
      socket.onclose = (closing) => {
        if (closing.code === 4403) return;  // not ours to watch
        setTimeout(connect, delay);  // reconnect and resume after the last seq shown
        delay = Math.min(delay * 2, 10000);
      };
    }
    connect();
  };

  KS.fmtMs = function (ms) { return ms === null || ms === undefined ? "–" : Number(ms).toFixed(4) + " ms"; };

  KS.verdictLine = function (v) {
    const parts = [v.status, "reward " + v.reward];
    if (v.runtime_ms) parts.push(KS.fmtMs(v.runtime_ms));
    if (v.speedup_vs_eager) parts.push(Number(v.speedup_vs_eager).toFixed(2) + "x eager");
    if (v.speedup_vs_compiled) parts.push(Number(v.speedup_vs_compiled).toFixed(2) + "x compiled");
    // Beside PyTorch's defaults (the reward's basis), the precision-matched figures where the sandbox measured them.
    if (v.speedup_vs_eager_tf32) {
      let matched = Number(v.speedup_vs_eager_tf32).toFixed(2) + "x eager";
      if (v.speedup_vs_compiled_tf32) matched += ", " + Number(v.speedup_vs_compiled_tf32).toFixed(2) + "x compiled";
      parts.push("TF32-matched: " + matched);
    }
    return parts.join(" · ");
  };

  KS.el = function (tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  };
})();
