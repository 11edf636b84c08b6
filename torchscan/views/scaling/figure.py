"""SVG of a ScalingReport: one log-log panel per metric and axis (attention-and-scaling.md 2).

Each panel plots the series of a fit (the axis's sizes, the other axes at their largest sizes)
against the size, both axes logarithmic, so a polynomial of degree k ends as a line of slope k. The
total is the thick black line; for operator FLOPs and bytes the top operators (largest at the
largest size) get a line each, named at their right end and in the legend, so colour never carries
the name alone. A partial value (a lower bound) is drawn hollow with ``≥`` in its tooltip; an
unavailable or zero value cannot sit on a log axis and is not drawn (the panel says how many).
Latency medians carry their IQR as a bar and the least-squares fit as a dashed curve, labelled as a
fit. Deterministic, offline, every report string escaped; never imports torch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from torchscan.views.common.number_style import quantity
from torchscan.views.common.text import esc, number

WIDTH, PANEL, LEFT, RIGHT, TOP, GAP = 720, 200, 80, 190, 34, 70
TOP_OPERATORS = 5
TOTAL_COLOUR = "#111111"
PALETTE = ("#3b6ea8", "#b5651d", "#2e7d32", "#8e24aa", "#c62828", "#00838f")
FIT_SAMPLES = 24


def top_parts(report: Mapping[str, Any], metric: str, axis: str, key: str = "by_operator") -> list[str]:
    """The parts of a fit with the largest known values at the series' largest size (ties: name)."""
    fit = report["fits"][metric][axis]
    points = report["points"]
    last = next(
        (points[i] for i in reversed(fit["points"]) if points[i][metric]["known_value"] is not None), None
    )
    if last is None:
        return []
    values = last.get(key, {}).get(metric, {})
    ranked = sorted(fit[key], key=lambda name: (-values.get(name, 0), name))
    return [name for name in ranked if values.get(name, 0) > 0][:TOP_OPERATORS]


def _log_scale(low: float, high: float, start: float, length: float) -> Any:
    a, b = math.log10(low), math.log10(high)
    span = b - a

    def place(value: float) -> float:
        return start + (length / 2 if span == 0 else (math.log10(value) - a) / span * length)

    return place


def _series(report: Mapping[str, Any], metric: str, axis: str) -> list[tuple[str, str, list[Any]]]:
    """``(name, colour, [(size, value, status, point)])`` per line: the total, then top operators."""
    fit, points = report["fits"][metric][axis], report["points"]
    chosen = [points[i] for i in fit["points"]]
    lines = [
        (
            "total",
            TOTAL_COLOUR,
            [(p["sizes"][axis], p[metric]["known_value"], p[metric]["status"], p) for p in chosen],
        )
    ]
    for k, name in enumerate(top_parts(report, metric, axis)):
        values = [
            (
                p["sizes"][axis],
                None if p[metric]["known_value"] is None else p["by_operator"][metric].get(name, 0),
                p[metric]["status"],
                p,
            )
            for p in chosen
        ]
        lines.append((name, PALETTE[k % len(PALETTE)], values))
    return lines


def _fitted(fit: Mapping[str, Any], x: float) -> float:
    return float(sum(Fraction(c) * Fraction(x) ** k for k, c in enumerate(fit["coefficients"])))


def _ticks(low: float, high: float) -> list[float]:
    """Powers of ten between ``low`` and ``high`` (both ends when none falls inside)."""
    first, last = math.ceil(math.log10(low)), math.floor(math.log10(high))
    inside = [10.0**k for k in range(first, last + 1)]
    return inside if len(inside) >= 2 else [low, high] if low != high else [low]


def panel(report: Mapping[str, Any], metric: str, axis: str, top: float) -> str:
    """One titled log-log panel of ``metric`` against ``axis``."""
    fit = report["fits"][metric][axis]
    unit = report["points"][fit["points"][0]][metric]["unit"]
    lines = _series(report, metric, axis)
    sizes = [size for size, *_ in lines[0][2]]
    drawn = [v for _, _, values in lines for _, v, _, _ in values if v is not None and v > 0]
    if metric == "latency":
        drawn += [
            p["latency"]["known_value"] + p["latency_iqr"]["known_value"] / 2
            for _, _, _, p in lines[0][2]
            if p["latency"]["known_value"] is not None and p["latency_iqr"]["known_value"] is not None
        ]
    at = ", ".join(f"{name}={value}" for name, value in fit["at"].items())
    title = f"{metric} against {axis}" + (f" (at {at})" if at else "") + " · log-log"
    right, bottom = WIDTH - RIGHT, top + PANEL
    parts = [
        f'<g class="panel" data-metric="{esc(metric)}" data-axis="{esc(axis)}">',
        f'<text x="{LEFT}" y="{top - 12:.1f}" font-weight="bold">{esc(title)}</text>',
        f'<line x1="{LEFT}" x2="{right}" y1="{bottom:.1f}" y2="{bottom:.1f}" stroke="#555"/>',
        f'<line x1="{LEFT}" x2="{LEFT}" y1="{top:.1f}" y2="{bottom:.1f}" stroke="#555"/>',
    ]
    x_of = _log_scale(sizes[0], sizes[-1], LEFT + 10, right - LEFT - 20)
    for size in sizes:
        parts.append(
            f'<text x="{x_of(size):.2f}" y="{bottom + 16:.1f}" text-anchor="middle" font-size="11">'
            f"{esc(number(size))}</text>"
        )
    parts.append(
        f'<text x="{(LEFT + right) / 2:.1f}" y="{bottom + 32:.1f}" text-anchor="middle" font-size="11">'
        f"{esc(axis)} (log scale)</text>"
    )
    if not drawn:
        parts.append(
            f'<text x="{(LEFT + right) / 2:.1f}" y="{top + PANEL / 2:.1f}" text-anchor="middle">'
            "no positive value to draw on a log axis</text></g>"
        )
        return "".join(parts)
    y_of = _log_scale(min(drawn), max(drawn), bottom - 8, -(PANEL - 16))
    for tick in _ticks(min(drawn), max(drawn)):
        parts.append(
            f'<text x="{LEFT - 6}" y="{y_of(tick):.2f}" text-anchor="end" dominant-baseline="middle" '
            f'font-size="11">{esc(quantity(tick, unit))}</text>'
        )
    skipped = 0
    for name, colour, values in lines:
        width = 2.5 if name == "total" else 1.5
        placed = [
            (x_of(size), y_of(v), v, status, size) for size, v, status, _ in values if v is not None and v > 0
        ]
        skipped += len(values) - len(placed)
        if len(placed) >= 2:
            path = " ".join(f"{x:.2f},{y:.2f}" for x, y, *_ in placed)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="{width}"/>')
        for x, y, value, status, size in placed:
            fill = colour if status == "complete" else "none"
            shown = (
                quantity(value, unit) if status == "complete" else f"≥ {quantity(value, unit)} (lower bound)"
            )
            tip = esc(f"{name} at {axis}={number(size)}: {status} · {shown}")
            parts.append(
                f'<circle cx="{x:.2f}" cy="{y:.2f}" r="3.5" fill="{fill}" stroke="{colour}" '
                f'stroke-width="1.5"><title>{tip}</title></circle>'
            )
        if placed:
            x, y = placed[-1][0], placed[-1][1]
            parts.append(
                f'<text x="{x + 8:.2f}" y="{y:.2f}" dominant-baseline="middle" font-size="11" '
                f'fill="{colour}">{esc(name)}</text>'
            )
    if metric == "latency":
        parts.append(_latency_marks(lines[0][2], fit, x_of, y_of, sizes))
    note = f"{skipped} unavailable or zero value(s) not drawn" if skipped else ""
    if note:
        parts.append(
            f'<text x="{right}" y="{top - 12:.1f}" text-anchor="end" font-size="11">{esc(note)}</text>'
        )
    parts.append("</g>")
    return "".join(parts)


def _latency_marks(
    values: Sequence[Any], fit: Mapping[str, Any], x_of: Any, y_of: Any, sizes: list[int]
) -> str:
    """IQR bars around the medians and the least-squares curve, dashed (a fit, never exact)."""
    parts = []
    for size, median, _, point in values:
        spread = point["latency_iqr"]["known_value"]
        if median is None or spread is None or median - spread / 2 <= 0:
            continue
        low, high = y_of(median - spread / 2), y_of(median + spread / 2)
        parts.append(
            f'<line class="iqr" x1="{x_of(size):.2f}" x2="{x_of(size):.2f}" y1="{low:.2f}" y2="{high:.2f}" '
            f'stroke="{TOTAL_COLOUR}" stroke-width="1"><title>IQR of the block averages, centred on the '
            "median</title></line>"
        )
    if fit["coefficients"] is not None:
        first, last = math.log10(sizes[0]), math.log10(sizes[-1])
        samples = [10 ** (first + (last - first) * k / (FIT_SAMPLES - 1)) for k in range(FIT_SAMPLES)]
        placed = [(x_of(x), y_of(y)) for x in samples if (y := _fitted(fit, x)) > 0]
        if len(placed) >= 2:
            path = " ".join(f"{x:.2f},{y:.2f}" for x, y in placed)
            parts.append(
                f'<polyline class="fit" points="{path}" fill="none" stroke="{TOTAL_COLOUR}" '
                'stroke-dasharray="5 4" stroke-width="1"><title>least-squares fit (not exact)</title>'
                "</polyline>"
            )
    return "".join(parts)


def scaling_svg(report: Mapping[str, Any], *, title: str = "") -> str:
    """A standalone SVG document of a validated ScalingReport: a log-log panel per metric and axis
    (``title``, when given, is its ``<title>``)."""
    panels = [(metric, axis) for metric in report["fits"] for axis in report["axes"]]
    height = TOP + len(panels) * (PANEL + GAP) + 10
    body = "".join(
        panel(report, metric, axis, TOP + k * (PANEL + GAP)) for k, (metric, axis) in enumerate(panels)
    )
    axes = "; ".join(f"{name} from {number(v[0])} to {number(v[-1])}" for name, v in report["axes"].items())
    summary = (
        f"How cost grows: {len(report['points'])} measured points, {axes}. Log-log axes: a polynomial of "
        "degree k ends as a line of slope k. Filled: complete; hollow: partial (lower bound)."
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" class="scaling" width="{WIDTH}" '
        f'height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="system-ui, sans-serif" '
        f'font-size="12" aria-label="{esc(summary)}"><title>{esc(title or summary)}</title>'
        f"<desc>{esc(summary)}</desc>{body}</svg>"
    )
