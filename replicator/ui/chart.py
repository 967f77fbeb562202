"""A small inline SVG line chart of a topic's audited buckets: source vs target counts (pure).

No script and no external asset: the Airflow machine may have no internet, and the
page must render inside Airflow's iframe as it is. Every text is escaped here.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from replicator.ui.page import Series, format_time

SOURCE_COLOR, TARGET_COLOR, MISSING_COLOR = "#2563eb", "#16a34a", "#dc2626"
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


def _polyline(frame: Frame, xs: list[float], values: list[int], top: int, color: str, name: str) -> str:
    points = " ".join(f"{x:.1f},{frame.y(v, top):.1f}" for x, v in zip(xs, values, strict=True))
    dots = "" if len(values) > MAX_DOTS else "".join(
        f'<circle cx="{x:.1f}" cy="{frame.y(v, top):.1f}" r="2" fill="{color}"/>'
        for x, v in zip(xs, values, strict=True))
    return (f'<polyline class="{name}" fill="none" stroke="{color}" stroke-width="2" points="{points}"/>'
            f"{dots}")


def svg_chart(series: Series, frame: Frame = Frame()) -> str:
    """An ``<svg>`` with the source and target count per bucket; buckets with missing records marked red."""
    points = series.points
    label = escape(f"{series.topic}: records per bucket, source vs target")
    if not points:
        return f'<svg role="img" aria-label="{label}" width="{frame.width}" height="40"></svg>'
    top = max(max(p.source for p in points), max(p.target for p in points), 1)
    parts = [
        (f'<svg role="img" aria-label="{label}" width="{frame.width}" height="{frame.height}" '
         f'viewBox="0 0 {frame.width} {frame.height}" xmlns="http://www.w3.org/2000/svg" font-size="11">'),
        f"<title>{label}</title>",
        (f'<line x1="{frame.left}" y1="{frame.y(0, top)}" x2="{frame.width - frame.right}" '
         f'y2="{frame.y(0, top)}" stroke="#888"/>'),
        f'<line x1="{frame.left}" y1="{frame.top}" x2="{frame.left}" y2="{frame.y(0, top)}" stroke="#888"/>',
        f'<text x="{frame.left - 4}" y="{frame.top + 4}" text-anchor="end">{top}</text>',
        f'<text x="{frame.left - 4}" y="{frame.y(0, top)}" text-anchor="end">0</text>',
    ]
    first, last = points[0].at.timestamp(), points[-1].at.timestamp()
    xs = [frame.x(p.at.timestamp(), first, last) for p in points]
    for x, p in zip(xs, points, strict=True):
        if p.missing:
            parts.append(f'<rect class="missing" x="{x - 3:.1f}" y="{frame.top}" width="6" '
                         f'height="{frame.y(0, top) - frame.top:.1f}" fill="{MISSING_COLOR}" opacity="0.25">'
                         f"<title>{escape(format_time(p.at))}: {p.missing} missing</title></rect>")
    parts.append(_polyline(frame, xs, [p.source for p in points], top, SOURCE_COLOR, "source"))
    parts.append(_polyline(frame, xs, [p.target for p in points], top, TARGET_COLOR, "target"))
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
