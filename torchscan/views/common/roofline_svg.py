"""Offline SVG roofline chart of an AnalysisReport that carries stated hardware facts.

training-and-hardware.md 3. Log axes: arithmetic intensity (module FLOPs per DMA byte) across,
attainable FLOP/s under the stated facts up. The roof is the caller's stated peak (flat) and
bandwidth (the slope, intensity × bandwidth); each full-mode call with a positive intensity is one
point, its area proportional to its module FLOPs. Every drawn point lies on the roof by
construction: the roofline model assumes each call runs at its roof, so the chart shows which calls
the stated facts make memory bound or compute bound, never a measured speed. Reads only the report.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from torchscan.views.common.number_style import duration, quantity
from torchscan.views.common.text import esc, fixed, path_label

WIDTH, HEIGHT = 720, 360
LEFT, RIGHT, TOP, BOTTOM = 78, 20, 20, 48
MAX_POINTS = 2000  # the largest calls by FLOPs; the rest are counted in the note, not drawn
NOTE = (
    "A model, never a measurement: DMAs are the logical element reads and writes of the staged dense "
    "algorithm of TorchScan's formulas, not hardware traffic. Convolutions count each input element "
    "once per output channel and kernel tap, so real kernels, which reuse data in caches, usually run "
    "faster than their roofline time; any call can also be slower. The facts are the caller's; "
    "TorchScan has no device table."
)


def _points(report: Mapping[str, Any]) -> tuple[list[dict[str, Any]], int]:
    """Drawable calls (positive known intensity and FLOPs), largest first, and the count left out."""
    points, skipped = [], 0
    for layer in report["layers"]:
        metrics = layer["metrics"]
        intensity, flops = metrics.get("arithmetic_intensity"), metrics.get("module_flops")
        if intensity is None:
            continue  # a container or covered call: no module FLOPs of its own
        if not (intensity["known_value"] and flops and flops["known_value"]):
            skipped += 1  # unavailable or zero: a log axis has no place for it
            continue
        points.append(
            {
                "label": f"{path_label(layer['path'])} #{layer['call_index']} ({layer['type']})",
                "intensity": float(intensity["known_value"]),
                "flops": float(flops["known_value"]),
                "partial": "partial" in (intensity["status"], flops["status"]),
                "seconds": metrics.get("roofline_seconds"),
            }
        )
    points.sort(key=lambda point: -point["flops"])
    return points[:MAX_POINTS], skipped + max(0, len(points) - MAX_POINTS)


def _decades(low: float, high: float) -> tuple[int, int]:
    """Whole powers of ten around ``[10**low, 10**high]`` (given as log10), at least one decade apart."""
    start, stop = math.floor(low), math.ceil(high)
    return start, max(stop, start + 1)


def _log(value: float) -> float:
    """log10 of a positive finite number; the chart works in logs so that no stated rate, however
    extreme (1.7e308 FLOP/s, 5e-324 bytes/s), overflows a product or a ratio."""
    return math.log10(value)


def _ratio_text(numerator: float, denominator: float) -> str:
    """``numerator ÷ denominator`` in three significant digits, from logs when it leaves the float range."""
    ratio = numerator / denominator
    if 0 < ratio < math.inf:
        return fixed(ratio, 3)
    exponent = _log(numerator) - _log(denominator)
    mantissa, power = math.modf(exponent)
    if mantissa < 0:
        mantissa, power = mantissa + 1, power - 1
    return f"{fixed(10.0**mantissa, 3)} × 10{str(int(power)).translate(_SUPERSCRIPT)}"


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
_PREFIXES = {-3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P"}


def _tick(power: int) -> str:
    """A power of ten as an axis label people read: ``0.01``, ``1``, ``100 G``, ``10¹⁸``."""
    if -3 <= power <= 17:
        base = 3 * math.floor(power / 3) if power >= 3 else 0
        return f"{10 ** (power - base):,} {_PREFIXES[base]}".rstrip() if base else fixed(10.0**power)
    return f"10{str(power).translate(_SUPERSCRIPT)}"  # never 10.0**power: 10^400 overflows a float


class _Axes:
    """Log-log placement of (intensity, FLOP/s), both given as log10, inside the plot area."""

    def __init__(self, x: tuple[int, int], y: tuple[int, int]) -> None:
        self.x, self.y = x, y

    def px(self, exponent: float) -> float:
        span = self.x[1] - self.x[0]
        return LEFT + (exponent - self.x[0]) / span * (WIDTH - LEFT - RIGHT)

    def py(self, exponent: float) -> float:
        span = self.y[1] - self.y[0]
        return HEIGHT - BOTTOM - (exponent - self.y[0]) / span * (HEIGHT - TOP - BOTTOM)


def _ticks(low: int, high: int) -> range:
    """Every power of ten, or every few when the axis spans many decades (at most ~12 labels)."""
    return range(low, high + 1, max(1, math.ceil((high - low) / 12)))


def _grid(axes: _Axes) -> list[str]:
    parts = []
    for power in _ticks(*axes.x):
        x = axes.px(power)
        parts.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{HEIGHT - BOTTOM}" stroke="#ddd"/>')
        parts.append(
            f'<text x="{x:.1f}" y="{HEIGHT - BOTTOM + 16}" font-size="11" text-anchor="middle">'
            f"{_tick(power)}</text>"
        )
    for power in _ticks(*axes.y):
        y = axes.py(power)
        parts.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end">{_tick(power)}</text>'
        )
    parts.append(
        f'<text x="{(LEFT + WIDTH - RIGHT) / 2:.0f}" y="{HEIGHT - 10}" font-size="12" text-anchor="middle">'
        "arithmetic intensity (module FLOPs per DMA byte, log)</text>"
    )
    parts.append(
        f'<text x="14" y="{(TOP + HEIGHT - BOTTOM) / 2:.0f}" font-size="12" text-anchor="middle" '
        f'transform="rotate(-90 14 {(TOP + HEIGHT - BOTTOM) / 2:.0f})">'
        "attainable FLOP/s under the stated facts (log)</text>"
    )
    return parts


def _roof(axes: _Axes, peak: float, bandwidth: float) -> str:
    """The stated bandwidth's slope up to the ridge, then the stated peak (all in log10)."""
    top, slope = _log(peak), _log(bandwidth)
    low, high = float(axes.x[0]), float(axes.x[1])
    ridge = min(max(top - slope, low), high)
    start = max(low, axes.y[0] - slope)  # where the slope enters the plot area
    corners = [(start, min(start + slope, top)), (ridge, min(ridge + slope, top)), (high, top)]
    path = " ".join(f"{axes.px(x):.1f},{axes.py(y):.1f}" for x, y in corners)
    middle = (start + ridge) / 2  # the label sits below the middle of the slope (log scale)
    return (
        f'<polyline points="{path}" fill="none" stroke="#b33" stroke-width="2">'
        "<title>roof: min(stated peak, intensity x stated bandwidth); ridge at "
        f"{_ratio_text(peak, bandwidth)} FLOPs/byte</title></polyline>"
        f'<text x="{WIDTH - RIGHT - 4}" y="{axes.py(top) - 6:.1f}" font-size="11" text-anchor="end" '
        f'fill="#b33">stated peak {quantity(peak, "FLOPs/s")}</text>'
        f'<text x="{axes.px(middle) + 10:.1f}" y="{axes.py(min(middle + slope, top)) + 16:.1f}" '
        'font-size="11" '
        f'fill="#b33">stated bandwidth {quantity(bandwidth, "bytes/s")} × intensity</text>'
    )


def _circle(
    axes: _Axes, point: Mapping[str, Any], height: float, radius: float, y: float | None = None
) -> str:
    """One call at its intensity and ``height`` (log10 of its attainable FLOP/s)."""
    seconds = point["seconds"]
    when = "unavailable"
    if seconds is not None and seconds["known_value"] is not None:
        when = f"{'≥ ' if seconds['status'] == 'partial' else ''}{duration(seconds['known_value'])}"
    bound = "≥ " if point["partial"] else ""
    fill = "none" if point["partial"] else "#2a6fb0"
    cy = axes.py(height) if y is None else y
    return (
        f'<circle cx="{axes.px(_log(point["intensity"])):.1f}" cy="{cy:.1f}" r="{radius:.1f}" fill="{fill}" '
        f'fill-opacity="0.55" stroke="#2a6fb0"><title>{esc(point["label"])}: intensity '
        f"{bound}{fixed(point['intensity'], 3)} FLOPs/byte, module FLOPs "
        f"{bound}{quantity(point['flops'], 'FLOPs')}, "
        f"roofline time {esc(when)} (model, not measured)</title></circle>"
    )


def roofline_section(report: Mapping[str, Any]) -> str:
    """The explorer's roofline section, or ``""`` when the report states no hardware facts."""
    facts = report["context"].get("hardware")
    if not isinstance(facts, Mapping) or "arithmetic_intensity" not in report["totals"]:
        return ""
    peak, bandwidth = float(facts["peak_flops_per_second"]), facts.get("memory_bandwidth_bytes_per_second")
    points, skipped = _points(report)
    stated = f"peak {quantity(peak, 'FLOPs/s')}" + (
        f", bandwidth {quantity(float(bandwidth), 'bytes/s')}"
        if bandwidth is not None
        else ", no bandwidth stated"
    )
    caption = f"Roofline under the stated facts of {facts['name']!r}: {stated}"
    heaviest = max((point["flops"] for point in points), default=1.0)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="roofline" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="100%" role="img" aria-labelledby="roofline-title roofline-desc">'
        f'<title id="roofline-title">{esc(caption)}</title><desc id="roofline-desc">{esc(NOTE)}</desc>'
    ]
    if points:
        top = _log(peak)
        slope = None if bandwidth is None else _log(float(bandwidth))
        intensities = [_log(point["intensity"]) for point in points]
        ridge = [] if slope is None else [top - slope]
        x_range = _decades(min(intensities + ridge), max(intensities + ridge))
        heights = [top] if slope is None else [min(top, i + slope) for i in intensities]
        axes = _Axes(x_range, _decades(min(heights), top + math.log10(1.5)))
        parts += _grid(axes)
        if bandwidth is not None:
            parts.append(_roof(axes, peak, float(bandwidth)))
        else:  # only the flat peak: without a bandwidth the slope, and so each point's height, is unknown
            y = axes.py(top)
            parts.append(
                f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" stroke="#b33" '
                'stroke-width="2"/>'
            )
        for point, exponent in zip(points, intensities, strict=True):
            radius = 2 + 10 * math.sqrt(point["flops"] / heaviest)  # area follows FLOPs
            if slope is not None:
                parts.append(_circle(axes, point, min(top, exponent + slope), radius))
            else:  # a strip along the intensity axis, below the plot: no height is claimed
                parts.append(_circle(axes, point, top, radius, y=HEIGHT - BOTTOM - 8))
    else:
        parts.append(
            f'<text x="{LEFT}" y="{HEIGHT / 2:.0f}" font-size="13">'
            "No call has a positive known intensity.</text>"
        )
    parts.append("</svg>")
    left_out = f" {skipped} call(s) with an unavailable or zero intensity are not drawn." if skipped else ""
    return (
        f'<section id="roofline" aria-label="Roofline"><h2>{esc(caption)}</h2>{"".join(parts)}'
        f'<p class="note">Points: one per call, area by module FLOPs; hollow points are partial (lower '
        f"bounds).{esc(left_out)} {esc(NOTE)}</p></section>"
    )
