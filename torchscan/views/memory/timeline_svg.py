"""Static SVG of a MemoryReport's timeline: live bytes stacked by category (memory.md 4 "Views").

A view over a validated report (no torch, no clock): the same report always gives the same bytes.
The seven categories are stacked bottom-up in report order with fixed colours; the phases run as a
labelled strip above the plot; the peak is a dashed line labelled with its phase and the innermost
module call running at that moment. Colour never carries meaning alone: the legend names every band
with its figure at the peak, and each band has a ``<title>``.

Truth rules: the timeline's integers are the bytes the ledger saw. A category whose figure at the
peak is ``unavailable`` is not drawn at all (never as a zero band) and the legend says so; a
``partial`` one is drawn hatched and labelled ``≥`` (a lower bound). A report recorded with
``timeline=False`` has no area, and the figure says so instead of drawing a flat zero line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from torchscan.report.memory_schema import CATEGORIES
from torchscan.views.common.number_style import quantity, status_measure
from torchscan.views.common.text import esc, number
from torchscan.views.memory.text import (
    CATEGORY_COLOURS,
    CATEGORY_LABELS,
    call_label,
    phase_label,
    place_text,
)

WIDTH = 900
PLOT_LEFT, PLOT_RIGHT = 86.0, 884.0
STRIP_TOP, STRIP_HEIGHT = 66.0, 18.0
PLOT_TOP, PLOT_BOTTOM = 92.0, 352.0
LEGEND_TOP = 400.0
LEGEND_ROW = 20.0
HEIGHT = LEGEND_TOP + 7 * LEGEND_ROW + 12  # seven categories in the legend
TICKS = 5  # event ticks along the x axis; the page's script rewrites them when zooming
PHASE_FILLS = {"forward": "#eef3f8", "backward": "#f8efe8", "optimizer": "#f1ecf6", "recompute": "#eaf5ef"}
NO_PHASE_FILL = "#f6f6f6"


def _fmt(value: float) -> str:
    """Coordinates with one decimal: enough for a 900-pixel canvas, and short for 2,000 points."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _totals(points: Sequence[Mapping[str, Any]], drawn: Sequence[str]) -> list[int]:
    return [sum(point["by_category"][name] for name in drawn) for point in points]


def peak_index(points: Sequence[Mapping[str, Any]]) -> int | None:
    """Index of the first timeline point with the largest live sum over every category (the peak)."""
    if not points:
        return None
    sums = _totals(points, CATEGORIES)
    return sums.index(max(sums))


class _Scale:
    """Maps ledger events to x and bytes to y inside the plot area."""

    def __init__(self, points: Sequence[Mapping[str, Any]], top: int) -> None:
        events = [point["event"] for point in points]
        self.first, self.last = min(events), max(events)
        self.top = top if top > 0 else 1

    def x(self, event: int) -> float:
        if self.last == self.first:  # one point (or one event): spread it over the plot
            return (PLOT_LEFT + PLOT_RIGHT) / 2
        return PLOT_LEFT + (PLOT_RIGHT - PLOT_LEFT) * (event - self.first) / (self.last - self.first)

    def y(self, count: int) -> float:
        return PLOT_BOTTOM - (PLOT_BOTTOM - PLOT_TOP) * count / self.top


def _xs(points: Sequence[Mapping[str, Any]], scale: _Scale) -> list[float]:
    if len(points) == 1:  # a single point is drawn as a flat band across the plot
        return [PLOT_LEFT, PLOT_RIGHT]
    return [scale.x(point["event"]) for point in points]


def _bands(
    points: Sequence[Mapping[str, Any]], drawn: Sequence[str], partial: set[str], scale: _Scale, hatch: str
) -> str:
    """One closed path per drawn category between its lower and upper cumulative lines."""
    values = points if len(points) > 1 else [points[0], points[0]]
    xs = _xs(points, scale)
    below = [0] * len(values)
    parts = []
    for name in drawn:
        above = [low + point["by_category"][name] for low, point in zip(below, values, strict=True)]
        if any(high != low for high, low in zip(above, below, strict=True)):
            upper = " L".join(f"{_fmt(x)},{_fmt(scale.y(v))}" for x, v in zip(xs, above, strict=True))
            lower = " L".join(
                f"{_fmt(x)},{_fmt(scale.y(v))}" for x, v in zip(reversed(xs), reversed(below), strict=True)
            )
            shape = f"M{upper} L{lower} Z"
            label = esc(CATEGORY_LABELS[name])
            parts.append(
                f'<path data-category="{name}" d="{shape}" fill="{CATEGORY_COLOURS[name]}" '
                f'stroke="#333333" stroke-width="0.4" vector-effect="non-scaling-stroke"><title>{label}'
                "</title></path>"
            )
            if name in partial:  # a lower bound: hatched, so it never reads as the full value
                parts.append(
                    f'<path data-category-overlay="{name}" d="{shape}" fill="url(#{hatch})">'
                    f"<title>{label}: a lower bound (partial)</title></path>"
                )
        below = above
    return "".join(parts)


def _phase_strip(points: Sequence[Mapping[str, Any]], scale: _Scale) -> tuple[str, str]:
    """Consecutive points of one phase make one segment of the strip above the plot.

    Returns the segments (zoomable) and their names (hidden by the page's script while zoomed, so a
    stretched strip never carries misplaced words).
    """
    xs = _xs(points, scale)
    phases = [point["phase"] for point in points] if len(points) > 1 else [points[0]["phase"]] * 2
    runs: list[tuple[str | None, int, int]] = []
    for index, phase in enumerate(phases):
        if runs and runs[-1][0] == phase:
            runs[-1] = (phase, runs[-1][1], index)
        else:
            runs.append((phase, index, index))
    segments, names = [], []
    for number_, (phase, start, end) in enumerate(runs):
        # A segment reaches half-way to its neighbours, so adjacent segments meet without overlap.
        left = PLOT_LEFT if start == 0 else (xs[start - 1] + xs[start]) / 2
        right = PLOT_RIGHT if end == len(xs) - 1 else (xs[end] + xs[end + 1]) / 2
        fill = PHASE_FILLS.get(phase or "", NO_PHASE_FILL)
        label = phase_label(phase)
        segments.append(
            f'<g data-phase-segment="{number_}"><rect x="{_fmt(left)}" y="{_fmt(STRIP_TOP)}" '
            f'width="{_fmt(max(right - left, 0.0))}" height="{_fmt(STRIP_HEIGHT)}" fill="{fill}" '
            f'stroke="#888888" stroke-width="0.5" vector-effect="non-scaling-stroke"><title>{esc(label)}'
            "</title></rect></g>"
        )
        if right - left >= 8 * len(label) * 0.75:  # the name fits inside the segment
            names.append(
                f'<text data-phase-name="{number_}" x="{_fmt((left + right) / 2)}" '
                f'y="{_fmt(STRIP_TOP + 13)}" '
                f'text-anchor="middle" font-size="11">{esc(label)}</text>'
            )
    return "".join(segments), f'<g class="phase-names">{"".join(names)}</g>'


def _axes(scale: _Scale, points: int, events: int) -> str:
    parts = [
        f'<line x1="{_fmt(PLOT_LEFT)}" y1="{_fmt(PLOT_BOTTOM)}" x2="{_fmt(PLOT_RIGHT)}" '
        f'y2="{_fmt(PLOT_BOTTOM)}" stroke="#333333"/>',
        f'<line x1="{_fmt(PLOT_LEFT)}" y1="{_fmt(PLOT_TOP)}" x2="{_fmt(PLOT_LEFT)}" '
        f'y2="{_fmt(PLOT_BOTTOM)}" stroke="#333333"/>',
    ]
    for step in range(5):
        count = scale.top * step // 4
        y = scale.y(count)
        parts.append(
            f'<line x1="{_fmt(PLOT_LEFT - 4)}" y1="{_fmt(y)}" x2="{_fmt(PLOT_LEFT)}" y2="{_fmt(y)}" '
            f'stroke="#333333"/><text x="{_fmt(PLOT_LEFT - 6)}" y="{_fmt(y + 4)}" text-anchor="end" '
            f'font-size="11">{esc(quantity(count, "bytes"))}</text>'
        )
    for k in range(TICKS):
        event = scale.first + (scale.last - scale.first) * k / (TICKS - 1)
        x = PLOT_LEFT + (PLOT_RIGHT - PLOT_LEFT) * k / (TICKS - 1)
        parts.append(
            f'<text data-event-tick="{k}" x="{_fmt(x)}" y="{_fmt(PLOT_BOTTOM + 14)}" text-anchor="middle" '
            f'font-size="10">{esc(number(round(event)))}</text>'
        )
    shown = f"{number(points)} points kept of {number(events)} events" if points else "no timeline points"
    parts.append(
        f'<text x="{_fmt((PLOT_LEFT + PLOT_RIGHT) / 2)}" y="{_fmt(PLOT_BOTTOM + 30)}" text-anchor="middle" '
        f'font-size="12">Ledger event (operator boundary; 0 is the start) · {esc(shown)}</text>'
        f'<text x="14" y="{_fmt((PLOT_TOP + PLOT_BOTTOM) / 2)}" font-size="12" text-anchor="middle" '
        f'transform="rotate(-90 14 {_fmt((PLOT_TOP + PLOT_BOTTOM) / 2)})">Live bytes</text>'
    )
    return "".join(parts)


def peak_sentence(report: Mapping[str, Any]) -> str:
    """``Peak: complete · 12.06 KiB · phase backward, inside layer1 call #0``."""
    at_peak = report["at_peak"]
    return f"Peak: {status_measure(report['peak'])} · {place_text(at_peak['phase'], at_peak['module'])}"


def _peak_marker(points: Sequence[Mapping[str, Any]], scale: _Scale, report: Mapping[str, Any]) -> str:
    """The dashed peak line and its label, inside the zoomable group (the script hides the label
    while zoomed: a stretched label would be misplaced)."""
    index = peak_index(points)
    if index is None:
        return ""
    x = (PLOT_LEFT + PLOT_RIGHT) / 2 if len(points) == 1 else scale.x(points[index]["event"])
    at_peak = report["at_peak"]
    words = f"peak · {phase_label(at_peak['phase'])} · {call_label(at_peak['module'])}"
    anchor, dx = ("end", -5) if x > (PLOT_LEFT + PLOT_RIGHT) / 2 else ("start", 5)
    line = (
        f'<g data-peak-marker="true"><title>{esc(peak_sentence(report))}</title>'
        f'<line x1="{_fmt(x)}" y1="{_fmt(PLOT_TOP - 4)}" x2="{_fmt(x)}" y2="{_fmt(PLOT_BOTTOM)}" '
        'stroke="#000000" stroke-width="1.5" stroke-dasharray="5 3" vector-effect="non-scaling-stroke"/>'
    )
    label = (
        f'<text class="peak-label" x="{_fmt(x + dx)}" y="{_fmt(PLOT_TOP + 10)}" text-anchor="{anchor}" '
        f'font-size="12" font-weight="700">{esc(words)}</text>'
    )
    return line + label + "</g>"


def _legend(report: Mapping[str, Any], hatch: str) -> str:
    parts = []
    by_category = report["at_peak"]["by_category"]
    for row, name in enumerate(CATEGORIES):
        result = by_category[name]
        y = LEGEND_TOP + row * LEGEND_ROW
        status = result["status"]
        note = {"partial": " · hatched", "unavailable": " · not drawn (never drawn as zero)"}.get(status, "")
        swatch = (
            f'<rect x="{_fmt(PLOT_LEFT)}" y="{_fmt(y - 11)}" width="14" height="14" '
            f'fill="{CATEGORY_COLOURS[name]}" stroke="#333333"/>'
            if status != "unavailable"
            else f'<rect x="{_fmt(PLOT_LEFT)}" y="{_fmt(y - 11)}" width="14" height="14" fill="#ffffff" '
            'stroke="#333333" stroke-dasharray="2 2"/>'
        )
        hatch = (
            f'<rect x="{_fmt(PLOT_LEFT)}" y="{_fmt(y - 11)}" width="14" height="14" fill="url(#{hatch})"/>'
            if status == "partial"
            else ""
        )
        text = f"{CATEGORY_LABELS[name]} at the peak: {status_measure(result)}{note}"
        parts.append(
            f'<g data-legend="{name}">{swatch}{hatch}<text x="{_fmt(PLOT_LEFT + 22)}" y="{_fmt(y)}" '
            f'font-size="12">{esc(text)}</text></g>'
        )
    return "".join(parts)


def timeline_top(report: Mapping[str, Any]) -> int:
    """The largest drawn stack of a report's timeline (the y scale's top), 0 without a timeline."""
    by_category = report["at_peak"]["by_category"]
    drawn = [name for name in CATEGORIES if by_category[name]["status"] != "unavailable"]
    return max(_totals(report["timeline"], drawn), default=0)


def timeline_svg(
    report: Mapping[str, Any],
    *,
    title: str,
    standalone: bool = True,
    prefix: str = "memory",
    top: int | None = None,
) -> str:
    """The timeline figure of a validated MemoryReport as one ``<svg>`` element.

    ``standalone`` adds the trailing newline of a document (render.md 1); the HTML page embeds the
    element without it. ``prefix`` keeps ids unique when a page draws two runs; ``top`` is a shared
    y scale (bytes) so two runs drawn one above the other read on one axis. The bands, phase strip
    and peak line sit in ``g.zoomable`` (clipped to the plot) so the page's script can zoom the event
    axis; their words sit outside it.
    """
    points = report["timeline"]
    by_category = report["at_peak"]["by_category"]
    drawn = [name for name in CATEGORIES if by_category[name]["status"] != "unavailable"]
    partial = {name for name in CATEGORIES if by_category[name]["status"] == "partial"}
    height = HEIGHT
    hatch, clip = f"{prefix}-hatch", f"{prefix}-clip"
    parts = [
        f'<defs><pattern id="{hatch}" width="8" height="8" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="8" stroke="#1a1a1a" '
        'stroke-width="2.5" stroke-opacity="0.6"/></pattern>'
        f'<clipPath id="{clip}"><rect x="{_fmt(PLOT_LEFT)}" y="{_fmt(STRIP_TOP)}" '
        f'width="{_fmt(PLOT_RIGHT - PLOT_LEFT)}" height="{_fmt(PLOT_BOTTOM - STRIP_TOP)}"/></clipPath>'
        "</defs>",
        f'<rect width="{WIDTH}" height="{_fmt(height)}" fill="#ffffff"/>',
        f'<text x="{_fmt(PLOT_LEFT)}" y="24" font-size="16" font-weight="700">{esc(title)}</text>',
        f'<text x="{_fmt(PLOT_LEFT)}" y="46" font-size="12" data-peak-text="true">'
        f"{esc(peak_sentence(report))}</text>",
    ]
    if points:
        scale = _Scale(points, top if top is not None else max(_totals(points, drawn)))
        segments, names = _phase_strip(points, scale)
        line = _peak_marker(points, scale, report)
        parts += [
            # the clip wraps the zoomed group: a clip on the transformed group would move with it
            f'<g clip-path="url(#{clip})"><g class="zoomable" data-first="{scale.first}" '
            f'data-last="{scale.last}" data-x0="{_fmt(PLOT_LEFT)}" data-x1="{_fmt(PLOT_RIGHT)}">{segments}'
            f"{_bands(points, drawn, partial, scale, hatch)}{line}</g></g>",
            names,
            _axes(scale, len(points), report["timeline_events"]),
        ]
    else:
        parts.append(
            f'<text x="{_fmt((PLOT_LEFT + PLOT_RIGHT) / 2)}" y="{_fmt((PLOT_TOP + PLOT_BOTTOM) / 2)}" '
            'text-anchor="middle" font-size="13" data-no-timeline="true">No timeline was recorded '
            "(measure_memory(timeline=False)): nothing is drawn; the figures at the peak are below.</text>"
        )
    parts.append(_legend(report, hatch))
    description = (
        "Live storage bytes over the workload, stacked by category (bottom to top: "
        + ", ".join(CATEGORY_LABELS[name] for name in CATEGORIES)
        + "). "
        + peak_sentence(report)
        + ". Hatched bands are lower bounds; a category unknown at the peak is not drawn."
    )
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" class="memory-timeline" id="{prefix}-timeline" '
        f'aria-labelledby="{prefix}-svg-title {prefix}-svg-description" width="{WIDTH}" '
        f'height="{_fmt(height)}" '
        f'viewBox="0 0 {WIDTH} {_fmt(height)}" font-family="system-ui, sans-serif">'
        f'<title id="{prefix}-svg-title">{esc(title)}</title>'
        f'<desc id="{prefix}-svg-description">{esc(description)}</desc>{"".join(parts)}</svg>'
    )
    return svg + "\n" if standalone else svg


def comparison_svg(before: Mapping[str, Any], after: Mapping[str, Any], *, title: str) -> str:
    """Both runs' timelines in one document, one above the other on one bytes axis (views-3.md 5).

    Each run keeps its own event axis (the runs need not have as many operator boundaries); the
    y scale is shared, so equal heights are equal bytes.
    """
    top = max(timeline_top(before), timeline_top(after))
    first = timeline_svg(before, title=f"Before: {title}", standalone=False, prefix="before", top=top)
    second = timeline_svg(after, title=f"After: {title}", standalone=False, prefix="after", top=top)
    height = HEIGHT
    total = 2 * height
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" class="memory-comparison" width="{WIDTH}" '
        f'height="{_fmt(total)}" viewBox="0 0 {WIDTH} {_fmt(total)}" '
        'aria-labelledby="comparison-title comparison-desc">'
        f'<title id="comparison-title">{esc(title)}</title>'
        '<desc id="comparison-desc">Before and after, one above the other on one bytes axis.</desc>'
        + first.replace("<svg ", '<svg x="0" y="0" ', 1)
        + second.replace("<svg ", f'<svg x="0" y="{_fmt(height)}" ', 1)
        + "</svg>\n"
    )
