// The run page: render stored events, then follow the live stream; every event is shown once, in seq order.
(function () {
  const KS = window.KS;
  const el = KS.el;
  const timeline = document.getElementById("timeline");
  const runId = timeline.dataset.run;
  let lastSeq = 0;

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
      if (call.verdict) box.appendChild(el("p", "verdict reward-" + call.verdict.reward, KS.verdictLine(call.verdict)));
      const details = el("details");
      details.appendChild(el("summary", null, call.error ? "error" : "observation"));
      details.appendChild(el("pre", "observation", call.error || call.observation));
      box.appendChild(details);
      card.appendChild(box);
    }
    return card;
  }

  // An edit evaluated from the kernel editor: one card, updated in place as its status moves.
  function evaluationCard(p) {
    const id = "evaluation-" + p.evaluation;
    let card = document.getElementById(id);
    if (!card) {
      card = el("li", "turn card-evaluation");
      card.id = id;
      timeline.appendChild(card);
    }
    card.innerHTML = "";
    card.appendChild(el("h3", null, "Edit of version #" + p.version + " by " + p.by));
    const line = p.verdict ? KS.verdictLine(p.verdict) : (p.failure || p.error || "evaluation " + p.status + "…");
    card.appendChild(el("p", "verdict" + (p.verdict ? " reward-" + p.verdict.reward : ""), line));
    if (p.verdict && p.verdict.log) {
      const details = el("details");
      details.appendChild(el("summary", null, "log"));
      details.appendChild(el("pre", "observation", p.verdict.log));
      card.appendChild(details);
    }
  }

  function versionRow(p) {
    const row = el("tr", p.best ? "best" : "");
    const link = el("a", null, "#" + p.version);
    link.href = "/versions/" + p.version + "/edit";
    const first = el("td");
    first.appendChild(link);
    row.appendChild(first);
    [p.author && p.author !== "agent" ? "edit by " + p.author : "agent", p.status, String(p.reward),
     KS.fmtMs(p.runtime_ms), KS.fmtMs(p.eager_ms), KS.fmtMs(p.compiled_ms)]
      .forEach((text) => row.appendChild(el("td", null, text)));
    document.getElementById("version-rows").appendChild(row);
  }

  const FINISHED = ["succeeded", "failed", "cancelled"];

  // The run's actions, failure and verdict are rendered by the server (one renderer): ask htmx to fetch them again.
  function summaryChanged() {
    document.body.dispatchEvent(new CustomEvent("run-changed"));
  }

  function show(event) {
    if (event.seq <= lastSeq) return;
    lastSeq = event.seq;
    timeline.dataset.lastSeq = String(lastSeq);
    const p = event.payload;
    if (event.kind === "turn") {
      const waiting = document.getElementById("turns-waiting");
      if (waiting) waiting.remove();
      timeline.appendChild(turnCard(p));
    } else if (event.kind === "status") {
      const status = document.getElementById("run-status");
      status.textContent = p.status;
      status.className = "status-" + p.status;
      const finished = FINISHED.includes(p.status);
      const layout = document.getElementById("run-layout");
      layout.classList.toggle("live", !finished);
      layout.classList.toggle("done", finished);
      // A finished run has no worker to speak of (its job may still say "started" for a moment).
      if (finished) document.querySelectorAll(".run-meta .worker-status").forEach((e) => e.remove());
      if (live) summaryChanged();  // stored events replayed at load are already in the page's summary
    } else if (event.kind === "version") {
      document.getElementById("versions").hidden = false;
      versionRow(p);
    } else if (event.kind === "evaluation") {
      evaluationCard(p);
    }
  }

  let live = false;
  JSON.parse(document.getElementById("stored-events").textContent).forEach(show);
  live = true;
  KS.followRun(runId, lastSeq, show);
})();
