// The run page: render stored events, then follow the live stream; every event is shown once, in seq order.
(function () {
  const timeline = document.getElementById("timeline");
  const runId = timeline.dataset.run;
  let lastSeq = 0;

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  function fmt(ms) { return ms === null || ms === undefined ? "–" : Number(ms).toFixed(4) + " ms"; }

  function verdictLine(v) {
    const parts = [v.status, "reward " + v.reward];
    if (v.runtime_ms) parts.push(fmt(v.runtime_ms));
    if (v.speedup_vs_eager) parts.push(Number(v.speedup_vs_eager).toFixed(2) + "x eager");
    if (v.speedup_vs_compiled) parts.push(Number(v.speedup_vs_compiled).toFixed(2) + "x compiled");
    return parts.join(" · ");
  }

  function turnCard(turn) {
    const card = el("li", "turn card-turn");
    card.appendChild(el("h3", null, "Turn " + turn.index));
    if (turn.thought) card.appendChild(el("p", "thought", turn.thought));
    for (const call of turn.tool_calls) {
      const box = el("div", "call");
      const args = Object.entries(call.arguments || {}).map(([k, v]) => {
        const text = typeof v === "string" ? v : JSON.stringify(v);
        return k + "=" + (text.length > 80 ? text.slice(0, 77) + "..." : text);
      }).join(", ");
      box.appendChild(el("code", "call-name", call.name + "(" + args + ")"));
      if (call.verdict) box.appendChild(el("p", "verdict reward-" + call.verdict.reward, verdictLine(call.verdict)));
      const details = el("details");
      details.appendChild(el("summary", null, call.error ? "error" : "observation"));
      details.appendChild(el("pre", "observation", call.error || call.observation));
      box.appendChild(details);
      card.appendChild(box);
    }
    return card;
  }

  function show(event) {
    if (event.seq <= lastSeq) return;  // already shown (replay and live overlap)
    lastSeq = event.seq;
    timeline.dataset.lastSeq = String(lastSeq);
    const p = event.payload;
    if (event.kind === "turn") {
      timeline.appendChild(turnCard(p));
    } else if (event.kind === "status") {
      const status = document.getElementById("run-status");
      status.textContent = p.status;
      status.className = "status-" + p.status;
      if (p.error) document.getElementById("run-error").textContent = p.error;
    } else if (event.kind === "version") {
      const row = el("tr", p.best ? "best" : "");
      [String(p.version), String(p.reward), fmt(p.runtime_ms), fmt(p.eager_ms), fmt(p.compiled_ms)]
        .forEach((text) => row.appendChild(el("td", null, text)));
      document.getElementById("version-rows").appendChild(row);
    }
  }

  JSON.parse(document.getElementById("stored-events").textContent).forEach(show);

  let delay = 500;
  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(scheme + "://" + location.host + "/ws/runs/" + runId + "/?after=" + lastSeq);
    socket.onopen = () => { delay = 500; };
    socket.onmessage = (message) => show(JSON.parse(message.data));
    socket.onclose = (closing) => {
      if (closing.code === 4403) return;  // not ours to watch
      setTimeout(connect, delay);  // reconnect and resume after the last seq shown
      delay = Math.min(delay * 2, 10000);
    };
  }
  connect();
})();
