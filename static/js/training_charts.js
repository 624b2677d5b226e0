// Staff training page: each panel's chart drawn with uPlot (vendored) from the page's JSON (#training-panels) in
// place of the server's SVG, which stays the page without JavaScript. Hovering reads the exact value of every series
// at a step in the legend, dragging zooms (double-click resets), a legend entry toggles its series. While the run
// goes on, htmx swaps #training-progress every few seconds: every chart lives on, moved into the new markup with the
// new data, so a zoom, a hidden series and the pointer's readout survive the refresh.
(() => {
  const HEIGHT = 170;
  const plots = new Map(); // chart title -> uPlot
  let drawnFrom = null; // the #training-panels element last drawn: each swap brings a new one

  const format = (value) => (Number.isInteger(value) ? String(value) : Number(value).toPrecision(4));

  function last(values) {
    for (let i = values.length - 1; i >= 0; i--) if (values[i] != null) return values[i];
    return null;
  }

  // Off the plot, the legend reads each series' latest value (a live run's news); on it, the value at the pointer.
  const readout = (u, value, sidx, idx) => {
    const shown = idx == null ? last(u.data[sidx]) : value;
    return shown == null ? "—" : format(shown);
  };

  const widthOf = (box) => Math.max(200, box.clientWidth - 2);
  // Steps are whole numbers: ticks at 1, 2, 5 times a power of ten, never at half a step.
  const STEP_TICKS = [1, 2, 5].flatMap((m) => [1, 10, 100, 1000, 10000, 100000].map((p) => m * p)).sort((a, b) => a - b);

  function options(chart, width) {
    return {
      title: chart.title,
      width,
      height: HEIGHT,
      scales: { x: { time: false } },
      series: [
        { label: "step", value: readout },
        ...chart.series.map((s) => ({ label: s.name, stroke: s.color, width: 1.5, spanGaps: true, value: readout })),
      ],
      axes: [{ size: 30, incrs: STEP_TICKS }, { size: 52 }],
      legend: { live: true },
    };
  }

  const columns = (chart) => [chart.steps, ...chart.series.map((s) => s.values)];
  const signature = (chart) => chart.series.map((s) => s.name).join("\n");

  // Zoomed in: the x scale shows less than the steps drawn; new data then keeps the user's range.
  function zoomed(u) {
    const steps = u.data[0];
    return steps.length > 1 && (u.scales.x.min > steps[0] || u.scales.x.max < steps[steps.length - 1]);
  }

  function draw() {
    const source = document.getElementById("training-panels");
    if (!source || source === drawnFrom || typeof uPlot === "undefined") return;
    drawnFrom = source;
    const charts = new Map(JSON.parse(source.textContent).flatMap((p) => p.charts).map((c) => [c.title, c]));
    const shown = new Set();
    document.querySelectorAll("#panels .live-chart[data-chart]").forEach((box) => {
      const chart = charts.get(box.dataset.chart);
      if (!chart) return;
      shown.add(chart.title);
      let u = plots.get(chart.title);
      if (u && u.signature !== signature(chart)) {
        u.destroy(); // a stage began logging the metric: its series were renamed per stage
        u = null;
      }
      const width = widthOf(box);
      box.replaceChildren();
      if (u) {
        box.append(u.root);
        const keepZoom = zoomed(u);
        u.setData(columns(chart), !keepZoom);
        if (keepZoom) u.setLegend(); // a scale change would have refreshed the readout; none came
        if (u.width !== width) u.setSize({ width, height: HEIGHT });
        u.syncRect();
      } else {
        u = new uPlot(options(chart, width), columns(chart), box);
        u.signature = signature(chart);
        plots.set(chart.title, u);
      }
    });
    for (const [title, u] of plots) {
      if (!shown.has(title)) {
        u.destroy();
        plots.delete(title);
      }
    }
  }

  let resizing = null;
  window.addEventListener("resize", () => {
    clearTimeout(resizing);
    resizing = setTimeout(() => {
      for (const u of plots.values()) {
        const width = widthOf(u.root.parentElement);
        if (u.width !== width) u.setSize({ width, height: HEIGHT });
      }
    }, 100);
  });
  // afterSwap comes as the new markup lands (no frame shows its SVG); load, a settle later, is a fallback.
  document.addEventListener("htmx:afterSwap", draw);
  document.addEventListener("htmx:load", draw);
  draw();
})();
