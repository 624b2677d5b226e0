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
    points = [(float(x), float(y)) for x, y in points
              if isinstance(y, (int, float)) and not isinstance(y, bool) and math.isfinite(y)]
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
        f'<title>{escape(title)}: last {_num(ys[-1])}</title>'
        f'<text x="4" y="12" class="chart-title">{escape(title)}</text>'
        f'<text x="{WIDTH - 4}" y="12" text-anchor="end" class="chart-last">{_num(ys[-1])}</text>'
        f'<text x="2" y="{PAD + 4}" class="chart-axis">{_num(y1)}</text>'
        f'<text x="2" y="{HEIGHT - PAD}" class="chart-axis">{_num(y0)}</text>'
        f'<text x="{PAD}" y="{HEIGHT - 6}" class="chart-axis">{_num(x0)}</text>'
        f'<text x="{WIDTH - PAD}" y="{HEIGHT - 6}" text-anchor="end" class="chart-axis">{_num(x1)}</text>'
        f'<polyline fill="none" stroke="currentColor" stroke-width="1.5" points="{line}"/>'
        f'<g fill="currentColor">{dots}</g></svg>')


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
        rows.append(f'<text x="{label_w - 4}" y="{y + 11}" text-anchor="end" class="chart-axis">'
                    f'{escape(label)}</text>'
                    f'<rect x="{label_w}" y="{y + 2}" width="{w:.1f}" height="{row - 4}" fill="currentColor"/>'
                    f'<text x="{label_w + w + 3:.1f}" y="{y + 11}" class="chart-axis">{_num(count)}</text>')
    return mark_safe(
        f'<svg class="chart" style="width:{WIDTH}px;max-height:none" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="{escape(title)}" data-bars="{len(bars)}">'
        f'<text x="4" y="12" class="chart-title">{escape(title)}</text>{"".join(rows)}</svg>')
