"""The page of a standalone ``ProfileReport`` (``profile_workload``; views-3.md 4): HTML and SVG.

Operators by self time (CPU, and device where the profiler saw it), grouped by operator name and
listed per input shapes, with net CPU bytes. A ProfileReport records self times only: total
(inclusive) times and the timeline are in the Chrome trace that ``profile_workload(trace_path=...)``
writes, whose path the report never records (reports hold no file paths), so the page says where
to look instead of linking it. Self times of one instrumented call overlap with nothing to sum into
a latency; a missing device time is unknown, never zero. Reads only the validated report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from torchscan.views.common.bar_rows import WIDTH, BarRow, bar_chart
from torchscan.views.common.number_style import duration, quantity
from torchscan.views.common.page_parts import context_table, diagnostics_section, not_meaning_section
from torchscan.views.common.page_shell import page
from torchscan.views.common.text import esc, number

NOT_MEANING = (
    "Self times come from one instrumented call: the profiler slows the call down, so they are not clean "
    "latency and must not be summed into a model latency; measure latency with measure_latency.",
    "Self time excludes the operators an operator called; total (inclusive) time is not recorded in a "
    "ProfileReport: read it from the Chrome trace.",
    "A device time shown as unknown was not observed by the profiler; it is not zero.",
    "Net CPU bytes are allocations minus frees inside the operator, not a peak and not device memory.",
    "A hot operator shows where this call spent time; it promises no gain from changing it.",
)
TRACE_NOTE = (
    "Total (inclusive) time per operator and the full timeline are in the Chrome trace written by "
    "profile_workload(trace_path=...), if one was asked for; the report never records file paths, so "
    "open that file yourself in a Chrome trace viewer (chrome://tracing or Perfetto)."
)
CPU_COLOUR = "#2f6db5"
DEVICE_COLOUR = "#b5651d"


def _seconds(value: float | None) -> str:
    return "unknown" if value is None else duration(value)


def _ranked_by(report: Mapping[str, Any]) -> str:
    return "device_self_seconds" if report["context"]["device_time_supported"] else "cpu_self_seconds"


def grouped_operators(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rows grouped by operator name: calls, CPU and device self seconds, net bytes, shape groups.

    Device seconds are ``None`` when any row of the operator lacks them (unknown, never zero).
    Sorted by the report's ranking key (device self time when supported, else CPU), then name.
    """
    groups: dict[str, dict[str, Any]] = {}
    for row in report["operators"]:
        group = groups.setdefault(
            row["operator"],
            {"operator": row["operator"], "calls": 0, "cpu": 0.0, "device": 0.0, "bytes": 0, "shapes": 0},
        )
        group["calls"] += row["calls"]
        group["cpu"] += row["cpu_self_seconds"]
        group["bytes"] += row["cpu_net_bytes"]
        group["shapes"] += 1
        device = row["device_self_seconds"]
        group["device"] = None if device is None or group["device"] is None else group["device"] + device
    key = "device" if _ranked_by(report) == "device_self_seconds" else "cpu"
    return sorted(groups.values(), key=lambda g: (-(g[key] or 0.0), g["operator"]))


def _shapes(shapes: Sequence[Any]) -> str:
    return ", ".join(
        "[" + ", ".join(str(d) for d in s) + "]" if isinstance(s, list) else str(s) for s in shapes
    )


def _grouped_table(report: Mapping[str, Any]) -> str:
    rows = "".join(
        f"<tr><td><code>{esc(g['operator'])}</code></td><td class=num>{esc(number(g['calls']))}</td>"
        f"<td class=num>{esc(duration(g['cpu']))}</td><td class=num>{esc(_seconds(g['device']))}</td>"
        f"<td class=num>{esc(quantity(g['bytes'], 'bytes'))}</td><td class=num>{g['shapes']}</td></tr>"
        for g in grouped_operators(report)
    )
    return (
        "<table><caption>Operators by self time (the rows below, grouped by operator)</caption><thead><tr>"
        "<th>Operator</th><th>Calls</th><th>CPU self time</th><th>Device self time</th><th>Net CPU bytes</th>"
        f"<th>Shape groups</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def rows_table(report: Mapping[str, Any]) -> str:
    """Every recorded row of a ProfileReport (its rank, operator, input shapes, calls, self times, bytes)."""
    rows = "".join(
        f"<tr><td class=num>{rank}</td><td><code>{esc(row['operator'])}</code></td>"
        f"<td>{esc(_shapes(row['input_shapes']))}</td><td class=num>{esc(number(row['calls']))}</td>"
        f"<td class=num>{esc(duration(row['cpu_self_seconds']))}</td>"
        f"<td class=num>{esc(_seconds(row['device_self_seconds']))}</td>"
        f"<td class=num>{esc(quantity(row['cpu_net_bytes'], 'bytes'))}</td></tr>"
        for rank, row in enumerate(report["operators"], start=1)
    )
    return (
        "<table><caption>Every recorded row (operator and input shapes), in the report's order</caption>"
        "<thead><tr><th>Rank</th><th>Operator</th><th>Input shapes</th><th>Calls</th><th>CPU self time</th>"
        f"<th>Device self time</th><th>Net CPU bytes</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _context_line(report: Mapping[str, Any]) -> str:
    context = report["context"]
    device_time = "device time recorded" if context["device_time_supported"] else "no device time"
    shown = len(report["operators"])
    return (
        f'<p class="context-line">{esc(number(shown))} of {esc(number(context["operator_groups"]))} operator '
        f"groups (limit {esc(number(context['limit']))}) · device {esc(context['device'])} · "
        f"{esc(device_time)} · ranked by {esc(_ranked_by(report).replace('_', ' '))} · "
        f"method {esc(context['method'])} · torch {esc(context['torch_version'])}</p>"
    )


def render_profile_page(report: Mapping[str, Any], *, title: str) -> str:
    """The HTML page of a validated ProfileReport."""
    body = (
        f"{_context_line(report)}"
        f'<figure id="profile-figure">{profile_svg(report, title=title, standalone=False)}</figure>'
        f'<section id="operators"><h2>Operators by self time</h2>{_grouped_table(report)}</section>'
        f'<section id="rows"><h2>Rows ({len(report["operators"])})</h2>{rows_table(report)}</section>'
        f'<section id="trace"><h2>Total time and the trace</h2><p>{esc(TRACE_NOTE)}</p></section>'
        f"{diagnostics_section([('', report['diagnostics'])])}{context_table(report['context'])}"
        f"{not_meaning_section(NOT_MEANING)}"
    )
    return page(
        title, body, css="td.num { text-align: right; } figure svg { max-width: 100%; height: auto; }"
    )


def profile_svg(report: Mapping[str, Any], *, title: str, standalone: bool = True) -> str:
    """A standalone SVG of a validated ProfileReport: self time per operator group, largest first.

    One bar chart of CPU self time and, when the profiler saw the device, one of device self time
    (unknown device times draw no bar and read ``unknown``). The canvas grows with its rows.
    """
    groups = grouped_operators(report)
    charts = [("CPU self time per operator", "cpu", CPU_COLOUR)]
    if report["context"]["device_time_supported"]:
        charts.insert(0, ("Device self time per operator", "device", DEVICE_COLOUR))
    y = 56.0
    parts = [
        f'<text x="8" y="24" font-size="16" font-weight="700">{esc(title)}</text>',
        f'<text x="8" y="44" font-size="12">{len(groups)} operators · device '
        f"{esc(report['context']['device'])} · self times of one instrumented call "
        "(not a latency; never summed)</text>",
    ]
    for heading, key, colour in charts:
        y += 20
        parts.append(f'<text x="8" y="{y:.1f}" font-size="13" font-weight="700">{esc(heading)}</text>')
        y += 8
        rows = [BarRow(g["operator"], g[key], _seconds(g[key])) for g in groups]
        if not rows:
            y += 16
            parts.append(f'<text x="8" y="{y:.1f}" font-size="12">No operator was recorded.</text>')
            continue
        chart, height = bar_chart(rows, top=y, colour=colour, name=key)
        parts.append(chart)
        y += height
    y += 24
    parts.append(f'<text x="8" y="{y:.1f}" font-size="12">Diagnostics: {len(report["diagnostics"])}</text>')
    height = y + 16
    summary = f"{title}: self time of {len(groups)} profiled operators."
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" class="profile-report" width="{WIDTH}" '
        f'height="{height:.0f}" viewBox="0 0 {WIDTH} {height:.0f}" font-family="system-ui, sans-serif" '
        'aria-labelledby="profile-svg-title profile-svg-desc">'
        f'<title id="profile-svg-title">{esc(title)}</title>'
        f'<desc id="profile-svg-desc">{esc(summary)}</desc>'
        f'<rect width="{WIDTH}" height="{height:.0f}" fill="#ffffff"/>{"".join(parts)}</svg>'
    )
    return svg + "\n" if standalone else svg
