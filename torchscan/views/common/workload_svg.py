"""The workload page's phase split and roofline (issue 23 item 5; training-and-hardware.md 1 and 3).

A training step's operator FLOPs split into forward, backward, optimizer and recompute (``by_phase``,
whose known values sum exactly to the total) as a table and one stacked bar. With stated hardware the
page also draws the workload on a roofline: the caller's peak (flat) and bandwidth (slope), and the
measured achieved FLOP/s. The workload's arithmetic intensity needs its operator bytes; when they were
not counted the achieved rate is a horizontal line, never a guessed point. Reads only the report.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from torchscan.views.common.number_style import measure, quantity, share
from torchscan.views.common.text import esc

PHASES = ("forward", "backward", "optimizer", "recompute")
COLOURS = {"forward": "#2f6db5", "backward": "#c0392b", "optimizer": "#8e6c00", "recompute": "#6a3d9a"}
BAR_WIDTH = 600
WIDTH, HEIGHT = 600, 300
LEFT, RIGHT, TOP, BOTTOM = 86, 20, 16, 44
# Figures shrink with a narrow window (390 px phones) instead of scrolling the page sideways.
FIT = "max-width:100%;height:auto"


def phase_section(flop_report: Mapping[str, Any]) -> str:
    """Table and stacked bar of ``by_phase``; ``""`` when the report has no phases."""
    phases = flop_report.get("by_phase")
    total = flop_report.get("total")
    if not isinstance(phases, Mapping) or total is None or total["known_value"] is None:
        return ""
    known = total["known_value"]
    exact = total["status"] == "complete"
    rows, bars, x = [], [], 0.0
    for name in PHASES:
        result = phases.get(name)
        if result is None:
            continue
        value = result["known_value"] or 0
        fraction = share(value / known) if exact and known and result["status"] == "complete" else "—"
        rows.append(
            f'<tr data-phase="{name}"><th scope="row">{name}</th><td>{esc(measure(result))}</td>'
            f"<td>{esc(fraction)}</td></tr>"
        )
        if known and value:
            width = BAR_WIDTH * value / known
            bars.append(
                f'<rect data-phase="{name}" x="{x:.2f}" y="0" width="{width:.2f}" height="18" '
                f'fill="{COLOURS[name]}"><title>{name}: {esc(measure(result))}</title></rect>'
            )
            x += width
    legend = " · ".join(
        f'<span class="phase-key" style="color:{COLOURS[name]}">■</span> {name}' for name in PHASES
    )
    svg = (
        f'<svg class="phase-bar" xmlns="http://www.w3.org/2000/svg" role="img" aria-label="Operator FLOPs by '
        f'phase" viewBox="0 0 {BAR_WIDTH} 18" width="{BAR_WIDTH}" height="18" preserveAspectRatio="none" '
        f'style="{FIT}">{"".join(bars)}</svg>'
    )
    caveat = "" if exact else " Shares are shown only when the phase and the total are complete."
    return (
        '<section id="phases"><h3>Operator FLOPs by phase</h3>'
        f"<figure>{svg}<figcaption>{legend}</figcaption></figure>"
        "<table><thead><tr><th>Phase</th><th>Operator FLOPs</th><th>Share of the total</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table><p class=note>Phases of one call of the workload as executed "
        "(the optimizer step, the autograd backward, checkpoint recompute, everything else forward); their "
        f"known values sum exactly to the total.{caveat}</p></section>"
    )


def _log(value: float) -> float:
    return math.log10(value)


def workload_roofline_section(report: Mapping[str, Any]) -> str:
    """The workload on the stated roofline; ``""`` without stated hardware or a measured rate."""
    facts = report["context"].get("hardware")
    achieved = report["totals"].get("achieved_flops_per_second")
    if facts is None or achieved is None or not achieved["known_value"]:
        return ""
    peak = float(facts["peak_flops_per_second"])
    bandwidth = facts.get("memory_bandwidth_bytes_per_second")
    rate = float(achieved["known_value"])
    flops = report.get("operator_flops", {})
    moved = flops.get("operator_bytes")
    total = flops.get("total")
    intensity = None
    if moved and moved["status"] == "complete" and moved["value"] and total and total["status"] == "complete":
        intensity = total["value"] / moved["value"]
    ridge = peak / bandwidth if bandwidth else None
    anchors = [value for value in (intensity, ridge) if value]
    low = math.floor(_log(min(anchors)) - 1) if anchors else -1
    high = math.ceil(_log(max(anchors)) + 1) if anchors else 3
    bottom = math.floor(_log(min(rate, peak)) - 1)
    top = math.ceil(_log(peak) + 0.3)

    def px(value: float) -> float:
        return LEFT + (_log(value) - low) / (high - low) * (WIDTH - LEFT - RIGHT)

    def py(value: float) -> float:
        return HEIGHT - BOTTOM - (_log(value) - bottom) / (top - bottom) * (HEIGHT - TOP - BOTTOM)

    lo, hi = 10.0**low, 10.0**high
    if bandwidth and ridge:
        start = max(lo, 10.0**bottom / bandwidth)
        roof = (
            f"M{px(start):.2f},{py(start * bandwidth):.2f} L{px(ridge):.2f},{py(peak):.2f} "
            f"L{px(hi):.2f},{py(peak):.2f}"
        )
    else:
        roof = f"M{px(lo):.2f},{py(peak):.2f} L{px(hi):.2f},{py(peak):.2f}"
    fraction = share(rate / peak)
    label = f"achieved {quantity(rate, 'FLOPs/s')} ({fraction} of the stated peak)"
    if achieved["status"] != "complete":
        label = f"achieved ≥ {quantity(rate, 'FLOPs/s')} (lower bound)"
    if intensity is not None:
        mark = (
            f'<circle class="workload-point" cx="{px(intensity):.2f}" cy="{py(rate):.2f}" r="5" '
            'fill="#c0392b">'
            f"<title>{esc(label)} at {esc(quantity(intensity, 'FLOPs/byte'))}</title></circle>"
        )
        where = (
            f"at an arithmetic intensity of {quantity(intensity, 'FLOPs/byte')} "
            "(operator FLOPs ÷ operator bytes)"
        )
    else:
        mark = (
            f'<line class="workload-rate" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{py(rate):.2f}" '
            f'y2="{py(rate):.2f}" stroke="#c0392b" stroke-dasharray="6 4"/>'
        )
        where = "as a line: operator bytes were not counted, so the workload's intensity is unknown"
    ticks = "".join(
        f'<text x="{px(10.0**k):.2f}" y="{HEIGHT - BOTTOM + 16}" font-size="10" text-anchor="middle">'
        f"{esc(quantity(10.0**k, 'FLOPs/byte').replace(' FLOPs/byte', ''))}</text>"
        for k in range(low, high + 1)
    )
    ticks += "".join(
        f'<text x="{LEFT - 6}" y="{py(10.0**k) + 4:.2f}" font-size="10" text-anchor="end">'
        f"{esc(quantity(10.0**k, 'FLOPs/s'))}</text>"
        for k in range(bottom, top + 1)
    )
    svg = (
        f'<svg class="workload-roofline" xmlns="http://www.w3.org/2000/svg" role="img" '
        f'aria-label="Roofline of the stated hardware: {esc(label)}" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="{WIDTH}" height="{HEIGHT}" style="{FIT}" font-family="system-ui, sans-serif">'
        f'<path class="roof" d="{roof}" fill="none" stroke="#111" stroke-width="2"/>{mark}{ticks}'
        f'<text x="{(LEFT + WIDTH - RIGHT) / 2:.0f}" y="{HEIGHT - 8}" font-size="11" text-anchor="middle">'
        "arithmetic intensity (FLOPs/byte, log)</text></svg>"
    )
    roof_words = (
        f"the roof is the stated peak {quantity(peak, 'FLOPs/s')} and bandwidth "
        f"{quantity(bandwidth, 'bytes/s')}"
        if bandwidth
        else f"the roof is the stated peak {quantity(peak, 'FLOPs/s')} (no bandwidth stated, so no slope)"
    )
    return (
        f'<figure id="workload-roofline">{svg}<figcaption>Roofline of the stated hardware: '
        f"{esc(roof_words)}; "
        f"the workload is drawn {esc(where)}, {esc(label)}. The facts are the caller's, the rate is "
        "measured; the chart says how far below the stated roof the workload ran, not why.</figcaption>"
        "</figure>"
    )
