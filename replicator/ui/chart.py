"""Small inline SVG line charts (pure): a topic's audited buckets (source vs target counts), its lag over time.

No script and no external asset: the Airflow machine may have no internet, and the
page must render inside Airflow's iframe as it is. Every text is escaped here.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from itertools import pairwise

from replicator.ui.page import LagSeries, Series, format_time

SOURCE_COLOR, TARGET_COLOR, MISSING_COLOR, LAG_COLOR = "#2563eb", "#16a34a", "#dc2626", "#9333ea"
MAX_DOTS = 200  # beyond this many buckets, the lines alone stay readable (and the page small)


@dataclass(frozen=True, slots=True)
class Frame:
    """The plotting area inside the SVG (pixels)."""

    width: int = 640
    height: int = 200
    left: int = 56
    right: int = 12
    top: int = 12
    bottom: int = 36

    def x(self, at: float, first: float, last: float) -> float:
        """Horizontal position of time ``at`` on a scale from ``first`` to ``last`` (gaps show as gaps)."""
        span = self.width - self.left - self.right
        return self.left + (span / 2 if last <= first else span * (at - first) / (last - first))

    def y(self, value: int, top_value: int) -> float:
        """Vertical position of ``value`` on a scale from 0 to ``top_value``."""
        span = self.height - self.top - self.bottom
        return self.top + span * (1 - value / max(top_value, 1))


# The source line is drawn wider, under the target's: where both counts agree (the usual case) it shows as a
# band around the target line instead of disappearing under it.
WIDTH = {"source": 5, "target": 2, "lag": 2}
OPACITY = {"source": 0.45, "target": 1.0, "lag": 1.0}


def runs_of_buckets(times: list[float]) -> list[range]:
    """Index ranges of consecutive buckets: a gap longer than one and a half buckets (no audit then) ends a
    run, so no line is drawn across time nothing was measured in."""
    steps = [b - a for a, b in pairwise(times) if b > a]
    bucket = min(steps, default=0.0)
    runs, start = [], 0
    for i in range(1, len(times)):
        if bucket and times[i] - times[i - 1] > 1.5 * bucket:
            runs.append(range(start, i))
            start = i
    runs.append(range(start, len(times)))
    return runs


def _polyline(frame: Frame, xs: list[float], values: list[int], top: int, color: str, name: str,
              runs: list[range]) -> str:
    lines = "".join(
        f'<polyline class="{name}" fill="none" stroke="{color}" stroke-width="{WIDTH[name]}" '
        f'stroke-opacity="{OPACITY[name]}" stroke-linejoin="round" points="'
        + " ".join(f"{xs[i]:.1f},{frame.y(values[i], top):.1f}" for i in run) + '"/>'
        for run in runs if len(run) > 1)
    dots = "" if len(values) > MAX_DOTS else "".join(
        f'<circle cx="{x:.1f}" cy="{frame.y(v, top):.1f}" r="{WIDTH[name] / 2 + 1:.1f}" fill="{color}" '
        f'fill-opacity="{OPACITY[name]}"/>'
        for x, v in zip(xs, values, strict=True))
    return lines + dots


def _axes(frame: Frame, label: str, top: int) -> list[str]:
    """The opening of a chart: the ``<svg>`` with its (escaped) label, both axes, the scale from 0 to ``top``."""
    return [
        (f'<svg role="img" aria-label="{label}" width="{frame.width}" height="{frame.height}" '
         f'viewBox="0 0 {frame.width} {frame.height}" xmlns="http://www.w3.org/2000/svg" font-size="11">'),
        f"<title>{label}</title>",
        (f'<line x1="{frame.left}" y1="{frame.y(0, top)}" x2="{frame.width - frame.right}" '
         f'y2="{frame.y(0, top)}" stroke="#888"/>'),
        f'<line x1="{frame.left}" y1="{frame.top}" x2="{frame.left}" y2="{frame.y(0, top)}" stroke="#888"/>',
        f'<text x="{frame.left - 4}" y="{frame.top + 4}" text-anchor="end">{top}</text>',
        f'<text x="{frame.left - 4}" y="{frame.y(0, top)}" text-anchor="end">0</text>',
    ]


def svg_chart(series: Series, frame: Frame = Frame()) -> str:
    """An ``<svg>`` with the source and target count per bucket; buckets with missing records marked red."""
    points = series.points
    label = escape(f"{series.topic}: records per bucket, source vs target")
    if not points:
        return f'<svg role="img" aria-label="{label}" width="{frame.width}" height="40"></svg>'
    top = max(max(p.source for p in points), max(p.target for p in points), 1)
    parts = _axes(frame, label, top)
    first, last = points[0].at.timestamp(), points[-1].at.timestamp()
    xs = [frame.x(p.at.timestamp(), first, last) for p in points]
    for x, p in zip(xs, points, strict=True):
        if p.missing:
            parts.append(f'<rect class="missing" x="{x - 3:.1f}" y="{frame.top}" width="6" '
                         f'height="{frame.y(0, top) - frame.top:.1f}" fill="{MISSING_COLOR}" opacity="0.25">'
                         f"<title>{escape(format_time(p.at))}: {p.missing} missing</title></rect>")
    runs = runs_of_buckets([p.at.timestamp() for p in points])
    parts.append(_polyline(frame, xs, [p.source for p in points], top, SOURCE_COLOR, "source", runs))
    parts.append(_polyline(frame, xs, [p.target for p in points], top, TARGET_COLOR, "target", runs))
    if len(points) == 1:  # a lone dot says little: say what it is
        only = points[0]
        parts.append(f'<text x="{xs[0] + 8:.1f}" y="{frame.y(max(only.source, only.target), top) - 6:.1f}">'
                     f"one bucket: source {only.source}, target {only.target}</text>")
    baseline = frame.height - frame.bottom + 14
    parts.append(f'<text x="{frame.left}" y="{baseline}">{escape(format_time(points[0].at))}</text>')
    if len(points) > 1:
        parts.append(f'<text x="{frame.width - frame.right}" y="{baseline}" text-anchor="end">'
                     f"{escape(format_time(points[-1].at))}</text>")
    parts.append(f'<text x="{frame.left}" y="{baseline + 14}"><tspan fill="{SOURCE_COLOR}">— source</tspan> '
                 f'<tspan fill="{TARGET_COLOR}">— target</tspan> '
                 f'<tspan fill="{MISSING_COLOR}">▮ missing</tspan></text>')
    parts.append("</svg>")
    return "".join(parts)


def svg_lag_chart(series: LagSeries, frame: Frame = Frame()) -> str:
    """An ``<svg>`` of a topic's lag (records not yet copied) at each SLA check; no line across time unmeasured."""
    return svg_line_chart(series.topic, series.points, "lag over time (records not yet copied)",
                          "lag (records not yet copied)", "records", frame)


def svg_line_chart(name: str, points: Sequence[tuple[dt.datetime, int]], title: str, what: str, unit: str,
                   frame: Frame = Frame()) -> str:
    """An ``<svg>`` of one measure (``what``, in ``unit``) at each SLA check; no line across time unmeasured."""
    label = escape(f"{name}: {title}")
    if not points:
        return f'<svg role="img" aria-label="{label}" width="{frame.width}" height="40"></svg>'
    top = max(max(value for _, value in points), 1)
    first, last = points[0][0].timestamp(), points[-1][0].timestamp()
    xs = [frame.x(at.timestamp(), first, last) for at, _ in points]
    baseline = frame.height - frame.bottom + 14
    parts = [
        *_axes(frame, label, top),
        _polyline(frame, xs, [value for _, value in points], top, LAG_COLOR, "lag",  # one line: the lag's style
                  runs_of_buckets([at.timestamp() for at, _ in points])),
        f'<text x="{frame.left}" y="{baseline}">{escape(format_time(points[0][0]))}</text>',
    ]
    if len(points) > 1:
        parts.append(f'<text x="{frame.width - frame.right}" y="{baseline}" text-anchor="end">'
                     f"{escape(format_time(points[-1][0]))}</text>")
    else:
        parts.append(f'<text x="{xs[0] + 8:.1f}" y="{frame.y(points[0][1], top) - 6:.1f}">one measure: '
                     f"{points[0][1]} {escape(unit)}</text>")
    parts.append(f'<text x="{frame.left}" y="{baseline + 14}"><tspan fill="{LAG_COLOR}">— {escape(what)}'
                 "</tspan></text></svg>")
    return "".join(parts)
