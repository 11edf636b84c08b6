"""SVG of a GenerationReport: per-step FLOPs and bytes against context length (generation.md 3).

Panels share the x axis (the tokens each step attends to; the step index when a length is
unknown): operator FLOPs, then operator bytes and attention K/V bytes, then (with two or more decode
steps) the decode FLOPs alone on a y axis labelled as not starting at zero. The prefill point is a
square labelled ``prefill``, decode points are circles. A partial value (a lower bound) is drawn
hollow with ``≥`` in its tooltip; an unavailable value is not drawn and the caption says how many
are missing. Deterministic, offline, every report string escaped; never imports torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from torchscan.views.text import compact, esc, number, svg_text

WIDTH, PANEL, LEFT, RIGHT, TOP, GAP = 640, 170, 70, 20, 30, 56
SERIES = {
    "flops": ("operator FLOPs", "#3b6ea8"),
    "operator_bytes": ("operator bytes", "#b5651d"),
    "attention_kv_bytes": ("attention K/V bytes", "#2e7d32"),
}
PANELS = (
    ("Operator FLOPs per step", ("flops",)),
    ("Bytes per step", ("operator_bytes", "attention_kv_bytes")),
)
# Decode FLOPs grow by a fraction of a percent per token next to a prefill many times larger: a third
# panel shows the decode steps alone, on a y axis that says it does not start at zero.
ZOOM_TITLE = "Decode steps only: operator FLOPs (y axis not from zero)"


def _x_values(steps: Sequence[Mapping[str, Any]]) -> tuple[list[float], str]:
    """x of each step and the axis name: context tokens when every step has one, else the index."""
    if steps and all(step["context_tokens"] is not None for step in steps):
        return [float(step["context_tokens"]) for step in steps], "context tokens (cached + new)"
    return [float(step["index"]) for step in steps], "step index (a context length is unknown)"


def _scale(low: float, high: float, start: float, length: float) -> Any:
    span = high - low

    def place(value: float) -> float:
        return start + (length / 2 if span == 0 else (value - low) / span * length)

    return place


def _marker(x: float, y: float, step: Mapping[str, Any], name: str, colour: str) -> str:
    result = step[name]
    fill = colour if result["status"] == "complete" else "none"
    tip = esc(f"step {step['index']} ({step['phase']}): {SERIES[name][0]} {svg_text(result)}")
    if step["phase"] == "prefill":
        return (
            f'<rect class="prefill" x="{x - 5:.2f}" y="{y - 5:.2f}" width="10" height="10" fill="{fill}" '
            f'stroke="{colour}" stroke-width="1.5"><title>{tip}</title></rect>'
        )
    return (
        f'<circle cx="{x:.2f}" cy="{y:.2f}" r="4" fill="{fill}" stroke="{colour}" stroke-width="1.5">'
        f"<title>{tip}</title></circle>"
    )


def _panel(
    steps: Sequence[Mapping[str, Any]],
    xs: list[float],
    top: float,
    title: str,
    names: tuple[str, ...],
    zoom: bool = False,
) -> str:
    """One panel; ``zoom`` draws only the decode steps on a y axis from their smallest value."""
    x_of = _scale(min(xs), max(xs), LEFT + 10, WIDTH - LEFT - RIGHT - 20) if xs else None
    drawn = [(step, x) for step, x in zip(steps, xs, strict=True) if not zoom or step["phase"] == "decode"]
    known = [
        float(step[n]["known_value"])
        for step, _ in drawn
        for n in names
        if step[n]["known_value"] is not None
    ]
    high = max(known) if known and max(known) > 0 else 1.0
    low = min(known) if zoom and known else 0.0
    if high == low:  # equal decode values: a unit span centred on them, still labelled
        low, high = low - 1, high + 1
    y_of = _scale(low, high, top + PANEL, -PANEL)
    bottom = top + PANEL
    parts = [
        f'<g class="panel{" zoom" if zoom else ""}">',
        f'<text x="{LEFT}" y="{top - 10:.1f}" font-weight="bold">{esc(title)}</text>',
        f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{bottom:.1f}" y2="{bottom:.1f}" stroke="#555"/>',
        f'<line x1="{LEFT}" x2="{LEFT}" y1="{top:.1f}" y2="{bottom:.1f}" stroke="#555"/>',
    ]
    for fraction in (0.0, 0.5, 1.0):
        tick = low + (high - low) * fraction
        label = number(round(tick)) if zoom else compact(tick)
        parts.append(
            f'<text x="{LEFT - 6}" y="{y_of(tick):.2f}" text-anchor="end" dominant-baseline="middle" '
            f'font-size="11">{esc(label)}</text>'
        )
    missing = 0
    for name in names:
        colour = SERIES[name][1]
        for step, x in drawn:
            value = step[name]["known_value"]
            if value is None or x_of is None:
                missing += 1
                continue
            parts.append(_marker(x_of(x), y_of(float(value)), step, name, colour))
            if step["phase"] == "prefill" and name == names[0]:
                # beside the square, never above it: the prefill is often the panel's top, under its title
                x_text, y_text = x_of(x) + 9, y_of(float(value))
                parts.append(
                    f'<text x="{x_text:.2f}" y="{y_text:.2f}" dominant-baseline="middle" '
                    'font-size="11">prefill</text>'
                )
    legend = "".join(
        f'<tspan fill="{SERIES[name][1]}">● {esc(SERIES[name][0])}</tspan>  ' for name in names
    ).rstrip()
    note = f" · {missing} unavailable value(s) not drawn" if missing else ""
    parts.append(
        f'<text x="{WIDTH - RIGHT}" y="{top - 10:.1f}" text-anchor="end" font-size="11">'
        f"{legend}{esc(note)}</text></g>"
    )
    return "".join(parts)


def _zoomable(steps: Sequence[Mapping[str, Any]]) -> bool:
    """A decode-only FLOPs panel helps when two or more decode steps have known FLOPs."""
    return sum(1 for s in steps if s["phase"] == "decode" and s["flops"]["known_value"] is not None) >= 2


def generation_svg(report: Mapping[str, Any], *, title: str = "") -> str:
    """A standalone SVG document of a validated GenerationReport's steps."""
    steps = report["steps"]
    xs, axis = _x_values(steps)
    panels = [(title, names, False) for title, names in PANELS]
    if _zoomable(steps):
        panels.append((ZOOM_TITLE, ("flops",), True))
    count = len(panels)
    height = TOP + count * PANEL + (count - 1) * GAP + 50
    body = "".join(
        _panel(steps, xs, TOP + k * (PANEL + GAP), title, names, zoom)
        for k, (title, names, zoom) in enumerate(panels)
    )
    low = number(min(xs)) if xs else "-"
    high = number(max(xs)) if xs else "-"
    axis_y = TOP + count * PANEL + (count - 1) * GAP + 30
    summary = (
        f"{len(steps)} steps of {report['context']['model_type']}; x from {low} to {high} {axis}. "
        "Filled: complete; hollow: partial (lower bound); square: prefill."
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" class="generation" width="{WIDTH}" '
        f'height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="system-ui, sans-serif" '
        'font-size="12" '
        f'aria-label="{esc(summary)}"><title>{esc(summary)}</title>{body}'
        f'<text x="{LEFT}" y="{axis_y}" font-size="11">{esc(low)}</text>'
        f'<text x="{WIDTH - RIGHT}" y="{axis_y}" text-anchor="end" font-size="11">{esc(high)}</text>'
        f'<text x="{(LEFT + WIDTH - RIGHT) / 2:.1f}" y="{axis_y}" text-anchor="middle" font-size="11">'
        f"{esc(axis)}</text></svg>"
    )
