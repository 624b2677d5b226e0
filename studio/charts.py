"""Tiny server-side SVG charts for the staff pages (a line per logged metric, bars for a distribution): no
JavaScript, no matplotlib in the web process, and htmx re-renders them as the data grows."""

import math

from django.utils.html import escape
from django.utils.safestring import mark_safe

WIDTH, HEIGHT, PAD = 260, 120, 26


def _num(value):
    return f"{value:.4g}"


def line_chart(title, points):
    """An SVG line chart of POINTS [(x, y)] (None and non-finite y skipped) titled TITLE, or '' with no point."""
    points = [
        (float(x), float(y))
        for x, y in points
        if isinstance(y, (int, float)) and not isinstance(y, bool) and math.isfinite(y)
    ]
    if not points:
        return ""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    sx = (WIDTH - 2 * PAD) / ((x1 - x0) or 1)
    sy = (HEIGHT - 2 * PAD) / ((y1 - y0) or 1)

    at = [(PAD + (x - x0) * sx, HEIGHT - PAD - (y - y0) * sy) for x, y in points]
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in at)
    dots = "".join(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2"/>' for x, y in at)
    return mark_safe(
        f'<svg class="chart" style="width:{WIDTH}px;max-height:none" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{escape(title)}" data-points="{len(points)}">'
        f"<title>{escape(title)}: last {_num(ys[-1])}</title>"
        f'<text x="4" y="12" class="chart-title">{escape(title)}</text>'
        f'<text x="{WIDTH - 4}" y="12" text-anchor="end" class="chart-last">{_num(ys[-1])}</text>'
        f'<text x="2" y="{PAD + 4}" class="chart-axis">{_num(y1)}</text>'
        f'<text x="2" y="{HEIGHT - PAD}" class="chart-axis">{_num(y0)}</text>'
        f'<text x="{PAD}" y="{HEIGHT - 6}" class="chart-axis">{_num(x0)}</text>'
        f'<text x="{WIDTH - PAD}" y="{HEIGHT - 6}" text-anchor="end" class="chart-axis">{_num(x1)}</text>'
        f'<polyline fill="none" stroke="currentColor" stroke-width="1.5" points="{line}"/>'
        f'<g fill="currentColor">{dots}</g></svg>'
    )


def bar_chart(title, bars):
    """An SVG horizontal bar chart of BARS [(label, count)] titled TITLE, or '' with no bar."""
    bars = [(str(label), count) for label, count in bars if isinstance(count, (int, float))]
    if not bars:
        return ""
    row, label_w, top = 16, 110, 18
    height = top + row * len(bars) + 4
    top_count = max(count for _, count in bars) or 1
    span = WIDTH - label_w - 34
    rows = []
    for i, (label, count) in enumerate(bars):
        y = top + i * row
        w = max(1.0, span * count / top_count) if count else 0
        rows.append(
            f'<text x="{label_w - 4}" y="{y + 11}" text-anchor="end" class="chart-axis">'
            f"{escape(label)}</text>"
            f'<rect x="{label_w}" y="{y + 2}" width="{w:.1f}" height="{row - 4}" fill="currentColor"/>'
            f'<text x="{label_w + w + 3:.1f}" y="{y + 11}" class="chart-axis">{_num(count)}</text>'
        )
    return mark_safe(
        f'<svg class="chart" style="width:{WIDTH}px;max-height:none" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="{escape(title)}" data-bars="{len(bars)}">'
        f'<text x="4" y="12" class="chart-title">{escape(title)}</text>{"".join(rows)}</svg>'
    )


def speedup_bars(speedups):
    """An SVG of speedups (studio.verdicts.Speedup) as bars from the 1x line on a log scale (right: faster, left:
    slower), each with its spread as an error bar, or '' with none."""
    if not speedups:
        return ""
    width, label_w, value_w, row, top = 680, 200, 190, 26, 20
    span = width - label_w - value_w
    extent = max(math.log(2.0), *(abs(math.log(v)) for s in speedups for v in (s.low, s.high, s.speedup) if v > 0))
    extent *= 1.1

    def x(value):
        value = min(max(value, math.exp(-extent)), math.exp(extent))
        return label_w + span * (math.log(value) + extent) / (2 * extent)

    one = x(1.0)
    height = top + row * len(speedups) + 8
    rows = []
    for i, s in enumerate(speedups):
        y = top + i * row
        left, right = sorted((one, x(s.speedup)))
        faster = "faster" if s.speedup >= 1 else "slower"
        spread = f" ({_num(s.low)}–{_num(s.high)})" if s.high - s.low > 1e-9 else ""
        rows.append(
            f'<g class="bar {faster} {s.precision}" data-baseline="{escape(s.baseline)}" data-precision="{s.precision}"'
            f' data-speedup="{s.speedup:.4f}">'
            f"<title>{escape(s.label)}: {s.speedup:.2f}x{spread}, baseline {_num(s.baseline_ms)} ms</title>"
            f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end" class="chart-axis">{escape(s.label)}</text>'
            f'<rect x="{left:.1f}" y="{y + 4}" width="{max(right - left, 1.0):.1f}" height="{row - 10}"/>'
            f'<line class="whisker" x1="{x(s.low):.1f}" x2="{x(s.high):.1f}" y1="{y + row / 2 - 1}" '
            f'y2="{y + row / 2 - 1}"/>'
            f'<line class="whisker" x1="{x(s.low):.1f}" x2="{x(s.low):.1f}" y1="{y + 7}" y2="{y + row - 9}"/>'
            f'<line class="whisker" x1="{x(s.high):.1f}" x2="{x(s.high):.1f}" y1="{y + 7}" y2="{y + row - 9}"/>'
            f'<text x="{label_w + span + 8}" y="{y + 15}" class="chart-value">{s.speedup:.2f}x{spread}</text></g>'
        )
    return mark_safe(
        f'<svg class="speedups" viewBox="0 0 {width} {height}" role="img" aria-label="speedup against each baseline">'
        f'<text x="{one:.1f}" y="12" text-anchor="middle" class="chart-axis">1x</text>'
        f'<text x="{label_w}" y="12" class="chart-axis">slower</text>'
        f'<text x="{label_w + span}" y="12" text-anchor="end" class="chart-axis">faster</text>'
        f'<line class="one" x1="{one:.1f}" x2="{one:.1f}" y1="14" y2="{height - 4}"/>{"".join(rows)}</svg>'
    )


PALETTE = ("#2f6f4f", "#8a6d00", "#3b5ba5", "#a33", "#7a4fa0", "#5b6475")


def multi_line_chart(title, series, width=340, height=150):
    """An SVG of several lines [(name, [(x, y)])] on one y axis (its range printed), a legend below, or '' with none."""
    series = [
        (
            name,
            [
                (float(x), float(y))
                for x, y in points
                if isinstance(y, (int, float)) and not isinstance(y, bool) and math.isfinite(y)
            ],
        )
        for name, points in series
    ]
    series = [(name, points) for name, points in series if points]
    if not series:
        return ""
    xs = [x for _, points in series for x, _ in points]
    ys = [y for _, points in series for _, y in points]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    legend_rows = math.ceil(len(series) / 2)
    top, left, right, bottom = 20, 40, 8, 18 + 13 * legend_rows
    sx = (width - left - right) / ((x1 - x0) or 1)
    sy = (height - top - bottom) / ((y1 - y0) or 1)
    lines, legend = [], []
    for i, (name, points) in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        at = " ".join(f"{left + (x - x0) * sx:.1f},{height - bottom - (y - y0) * sy:.1f}" for x, y in points)
        lines.append(
            f'<polyline fill="none" stroke="{color}" stroke-width="1.6" points="{at}">'
            f"<title>{escape(name)}: last {_num(points[-1][1])}</title></polyline>"
        )
        lx, ly = 6 + (i % 2) * (width // 2), height - bottom + 28 + 13 * (i // 2) - 8
        legend.append(
            f'<rect x="{lx}" y="{ly - 7}" width="10" height="3" fill="{color}"/>'
            f'<text x="{lx + 14}" y="{ly}" class="chart-axis">{escape(name)}</text>'
            f'<text x="{lx + width // 2 - 12}" y="{ly}" text-anchor="end" class="chart-axis">'
            f"{_num(points[-1][1])}</text>"
        )
    return mark_safe(
        f'<svg class="chart multi" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}" '
        f'data-series="{len(series)}">'
        f'<text x="4" y="12" class="chart-title">{escape(title)}</text>'
        f'<text x="{left - 4}" y="{top + 4}" text-anchor="end" class="chart-axis">{_num(y1)}</text>'
        f'<text x="{left - 4}" y="{height - bottom}" text-anchor="end" class="chart-axis">{_num(y0)}</text>'
        f'<text x="{left}" y="{height - bottom + 12}" class="chart-axis">step {_num(x0)}</text>'
        f'<text x="{width - right}" y="{height - bottom + 12}" text-anchor="end" class="chart-axis">{_num(x1)}</text>'
        f'<line x1="{left}" x2="{width - right}" y1="{height - bottom}" y2="{height - bottom}" stroke="#c9ced8"/>'
        f"{''.join(lines)}{''.join(legend)}</svg>"
    )
