"""SVG of a GenerationReport: per-step FLOPs, bytes and time against context length (generation.md 3,
views-3.md 5).

Panels share the x axis (the tokens each step attends to; the step index when a length is unknown)
and each has its own y axis in its own unit, so FLOPs and bytes never share a scale:

- operator FLOPs per step;
- bytes per step: operator bytes and attention K/V bytes (K/V bytes only ever on this bytes axis);
- with two or more decode steps, each decode fit of the report (FLOPs, K/V bytes) as a panel of the
  decode steps alone on a y axis that says it does not start at zero, the least-squares line drawn
  through them, and a strip of the residuals (step minus line) on their own scale;
- with ``timing``, the time of each step of the separate timed call (the prefill is the time to the
  first token), in ms/µs.

The prefill point is a square labelled ``prefill``, decode points are circles. A partial value (a
lower bound) is drawn hollow with ``≥`` in its tooltip; an unavailable value is not drawn and the
panel says how many are missing; a metric that does not apply (an attention-free model's K/V bytes,
method ``not_applicable``) is drawn nowhere and its legend says "not applicable". Deterministic,
offline, every report string escaped; never imports torch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from torchscan.views.common.number_style import not_applicable, quantity, status_measure
from torchscan.views.common.text import esc, number

WIDTH, PANEL, STRIP, LEFT, RIGHT, TOP, GAP = 720, 170, 70, 96, 20, 70, 62
SERIES = {
    "flops": ("operator FLOPs", "#3b6ea8", "FLOPs"),
    "operator_bytes": ("operator bytes", "#b5651d", "bytes"),
    "attention_kv_bytes": ("attention K/V bytes", "#2e7d32", "bytes"),
    "seconds": ("time per step", "#6a3d9a", "seconds"),
}
FIT_NAMES = {"flops": "operator FLOPs", "attention_kv_bytes": "attention K/V bytes"}


@dataclass(frozen=True)
class Point:
    """One drawn value: its step, x, known value (``None``: not drawn) and whether it is a lower bound."""

    step: Mapping[str, Any]
    x: float
    value: float | None
    partial: bool = False
    words: str | None = None  # the tooltip's value words, when not the step's own result


def _x_values(steps: Sequence[Mapping[str, Any]]) -> tuple[list[float], str]:
    """x of each step and the axis name: context tokens when every step has one, else the index."""
    if steps and all(step["context_tokens"] is not None for step in steps):
        return [float(step["context_tokens"]) for step in steps], "context tokens (cached + new)"
    return [float(step["index"]) for step in steps], "step index (a context length is unknown)"


def _scale(low: float, high: float, start: float, length: float) -> Callable[[float], float]:
    span = high - low

    def place(value: float) -> float:
        return start + (length / 2 if span == 0 else (value - low) / span * length)

    return place


def _tip(point: Point, name: str) -> str:
    step = point.step
    words = point.words or status_measure(step[name])
    return f"step {step['index']} ({step['phase']}): {SERIES[name][0]} {words}"


def _marker(x: float, y: float, point: Point, name: str) -> str:
    colour = SERIES[name][1]
    fill = "none" if point.partial else colour
    tip = esc(_tip(point, name))
    if point.step["phase"] == "prefill":
        return (
            f'<rect class="prefill" x="{x - 5:.2f}" y="{y - 5:.2f}" width="10" height="10" fill="{fill}" '
            f'stroke="{colour}" stroke-width="1.5"><title>{tip}</title></rect>'
        )
    return (
        f'<circle cx="{x:.2f}" cy="{y:.2f}" r="4" fill="{fill}" stroke="{colour}" stroke-width="1.5">'
        f"<title>{tip}</title></circle>"
    )


def _points(steps: Sequence[Mapping[str, Any]], xs: Sequence[float], name: str) -> list[Point]:
    return [
        Point(step, x, step[name]["known_value"], step[name]["status"] == "partial")
        for step, x in zip(steps, xs, strict=True)
    ]


class _Figure:
    """Panels stacked top to bottom, each with its own y axis; the x axis is shared."""

    def __init__(self, xs: Sequence[float], top: float) -> None:
        self.parts: list[str] = []
        self.top = top
        low, high = (min(xs), max(xs)) if xs else (0.0, 1.0)
        self.x_of = _scale(low, high, LEFT + 10, WIDTH - LEFT - RIGHT - 20)

    def panel(
        self,
        title: str,
        series: Sequence[tuple[str, Sequence[Point]]],
        *,
        unit: str,
        height: float = PANEL,
        from_zero: bool = True,
        kind: str = "panel",
        notes: Sequence[str] = (),
        line: tuple[float, float] | None = None,
    ) -> Callable[[float], float]:
        """One panel; returns its y scale. ``line`` is ``(intercept, slope)`` of a fit drawn across it."""
        top, bottom = self.top, self.top + height
        known = [p.value for _, points in series for p in points if p.value is not None]
        high = max(known) if known else 1.0
        low = 0.0 if from_zero else (min(known) if known else 0.0)
        if not from_zero and line is not None and known:
            xs = [p.x for _, points in series for p in points]
            ends = [line[0] + line[1] * x for x in (min(xs), max(xs))]
            low, high = min(low, *ends), max(high, *ends)
        if high <= low:  # equal values: a unit span centred on them, still labelled
            low, high = (low - 1, high + 1) if not from_zero else (0.0, max(high, 1.0))
        y_of = _scale(low, high, bottom, -height)
        out = [
            f'<g class="{kind}" data-unit="{esc(unit)}">',
            f'<text x="8" y="{top - 26:.1f}" font-weight="bold">{esc(title)}</text>',
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{bottom:.1f}" y2="{bottom:.1f}" stroke="#555"/>',
            f'<line x1="{LEFT}" x2="{LEFT}" y1="{top:.1f}" y2="{bottom:.1f}" stroke="#555"/>',
        ]
        ticks = [low + (high - low) * fraction for fraction in (0.0, 0.5, 1.0)]
        labels = [quantity(tick, unit) for tick in ticks]
        if len(set(labels)) < len(labels) and unit != "seconds":  # a span finer than 4 digits: exact ticks
            labels = [f"{number(round(tick))} {unit}" for tick in ticks]
        for tick, label in zip(ticks, labels, strict=True):
            out.append(
                f'<text x="{LEFT - 6}" y="{y_of(tick):.2f}" text-anchor="end" dominant-baseline="middle" '
                f'font-size="11">{esc(label)}</text>'
            )
        if line is not None:
            xs = [p.x for _, points in series for p in points]
            x1, x2 = min(xs), max(xs)
            out.append(
                f'<line class="fit" x1="{self.x_of(x1):.2f}" x2="{self.x_of(x2):.2f}" '
                f'y1="{y_of(line[0] + line[1] * x1):.2f}" y2="{y_of(line[0] + line[1] * x2):.2f}" '
                'stroke="#111" stroke-width="1.2" stroke-dasharray="6 3"/>'
            )
        missing = 0
        for name, points in series:
            for point in points:
                if point.value is None:
                    missing += not not_applicable(point.step.get(name))
                    continue
                x, y = self.x_of(point.x), y_of(float(point.value))
                out.append(_marker(x, y, point, name))
                if point.step["phase"] == "prefill" and name == series[0][0]:
                    # beside the square, never above it: the prefill is often the panel's top
                    out.append(
                        f'<text x="{x + 9:.2f}" y="{y:.2f}" dominant-baseline="middle" font-size="11">'
                        "prefill</text>"
                    )
        legend = "".join(
            f'<tspan fill="{SERIES[name][1]}">● {esc(_legend(name, points))}</tspan>  '
            for name, points in series
        )
        words = [*notes] + ([f"{missing} unavailable value(s) not drawn"] if missing else [])
        note = f" · {' · '.join(words)}" if words else ""
        out.append(
            f'<text x="{WIDTH - RIGHT}" y="{top - 10:.1f}" text-anchor="end" font-size="11">'
            f"{legend.rstrip()}{esc(note)}</text></g>"
        )
        self.parts.append("".join(out))
        self.top = bottom + GAP
        return y_of


def _legend(name: str, points: Sequence[Point]) -> str:
    label = SERIES[name][0]
    if points and all(not_applicable(p.step.get(name)) for p in points):
        return f"{label}: not applicable (no attention ran)"
    return label


def _fit_panels(
    figure: _Figure, steps: Sequence[Mapping[str, Any]], xs: Sequence[float], report: Mapping[str, Any]
) -> None:
    """Per decode metric: the decode steps alone (y not from zero) and, when the report has a fit of
    complete values, its least-squares line through them and a strip of the residuals."""
    decode = [(step, x) for step, x in zip(steps, xs, strict=True) if step["phase"] == "decode"]
    for name in FIT_NAMES:
        points = [
            Point(step, x, step[name]["known_value"], step[name]["status"] == "partial")
            for step, x in decode
            if step[name]["known_value"] is not None
        ]
        if len(points) < 2:
            continue
        fit = report["decode_fit"].get(name)
        usable = fit is not None and len(points) == len(decode) and not any(p.partial for p in points)
        unit = SERIES[name][2]
        line = (float(fit["intercept"]), float(fit["slope"])) if usable else None  # type: ignore[index]
        figure.panel(
            f"Decode steps: {FIT_NAMES[name]}"
            + (" and their least-squares line" if line else "")
            + " (y not from zero)",
            [(name, points)],
            unit=unit,
            from_zero=False,
            kind="panel zoom",
            line=line,
            notes=[f"line: {quantity(line[0], unit)} + {quantity(line[1], unit)} × context"] if line else [],
        )
        if line is None:
            continue
        residuals = []
        for p in points:
            residual = float(p.value) - (line[0] + line[1] * p.x)  # type: ignore[arg-type]
            residuals.append(Point(p.step, p.x, residual, words=f"residual {quantity(residual, unit)}"))
        largest = quantity(float(fit["max_residual"]), unit)  # type: ignore[index]
        figure.panel(
            f"Residuals of that line (step minus line; largest {largest})",
            [(name, residuals)],
            unit=unit,
            height=STRIP,
            from_zero=False,
            kind="panel residuals",
        )


def _timing_panel(
    figure: _Figure, steps: Sequence[Mapping[str, Any]], xs: Sequence[float], report: Mapping[str, Any]
) -> None:
    """The timed run's step times: the prefill as the time to the first token, then each decode step."""
    timing = report.get("timing")
    if timing is None:
        return
    decode = [(step, x) for step, x in zip(steps, xs, strict=True) if step["phase"] == "decode"]
    seconds = timing["decode_step_seconds"]
    points: list[Point] = []
    prefill = [(step, x) for step, x in zip(steps, xs, strict=True) if step["phase"] == "prefill"]
    first = timing["time_to_first_token"]
    if prefill and first["known_value"] is not None:
        known = float(first["known_value"])
        words = (
            f"{'≥ ' if first['status'] == 'partial' else ''}{quantity(known, 'seconds')} to the first token"
        )
        points.append(Point(prefill[0][0], prefill[0][1], known, first["status"] == "partial", words))
    note = []
    if len(seconds) == len(decode):
        points += [
            Point(step, x, float(t), words=quantity(float(t), "seconds"))
            for (step, x), t in zip(decode, seconds, strict=True)
        ]
    else:  # the timed run made another number of steps: drawn against the observed steps it has
        note.append(f"{len(seconds)} timed decode steps, {len(decode)} observed: first ones drawn")
        points += [
            Point(step, x, float(t), words=quantity(float(t), "seconds"))
            for (step, x), t in zip(decode, seconds, strict=False)
        ]
    figure.panel(
        "Time per step (separate timed generate() call; prefill: time to the first token)",
        [("seconds", points)],
        unit="seconds",
        notes=note,
    )


def generation_svg(report: Mapping[str, Any], *, title: str = "") -> str:
    """A standalone SVG document of a validated GenerationReport's steps (``title`` heads it)."""
    steps = report["steps"]
    xs, axis = _x_values(steps)
    figure = _Figure(xs, TOP if title else TOP - 26)  # a title line above the first panel
    figure.panel("Operator FLOPs per step", [("flops", _points(steps, xs, "flops"))], unit="FLOPs")
    figure.panel(
        "Bytes per step (operator bytes and the attention K/V bytes its kernels read)",
        [(name, _points(steps, xs, name)) for name in ("operator_bytes", "attention_kv_bytes")],
        unit="bytes",
    )
    _fit_panels(figure, steps, xs, report)
    _timing_panel(figure, steps, xs, report)
    low = number(min(xs)) if xs else "-"
    high = number(max(xs)) if xs else "-"
    axis_y = figure.top - GAP + 30
    height = axis_y + 14
    summary = (
        f"{len(steps)} steps of {report['context']['model_type']}; x from {low} to {high} {axis}. "
        "Filled: complete; hollow: partial (lower bound); square: prefill."
    )
    heading = f'<text x="8" y="22" font-size="16" font-weight="700">{esc(title)}</text>' if title else ""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" class="generation" width="{WIDTH}" '
        f'height="{height:.0f}" viewBox="0 0 {WIDTH} {height:.0f}" font-family="system-ui, sans-serif" '
        'font-size="12" '
        f'aria-label="{esc(summary)}"><title>{esc(title or summary)}</title><desc>{esc(summary)}</desc>'
        f'<rect width="{WIDTH}" height="{height:.0f}" fill="#ffffff"/>{heading}{"".join(figure.parts)}'
        f'<text x="{LEFT}" y="{axis_y:.0f}" font-size="11">{esc(low)}</text>'
        f'<text x="{WIDTH - RIGHT}" y="{axis_y:.0f}" text-anchor="end" font-size="11">{esc(high)}</text>'
        f'<text x="{(LEFT + WIDTH - RIGHT) / 2:.1f}" y="{axis_y:.0f}" text-anchor="middle" font-size="11">'
        f"{esc(axis)}</text></svg>"
    )
