"""HTML page and terminal summary of a merged per-rank report (distributed.md 4).

Plain HTML with no script, one inline SVG bar chart per metric (executed FLOPs, latency): one bar
per rank, lengths proportional to the known values. An unavailable value draws no bar and says so;
a partial value (a lower bound) draws a dashed bar labelled ``≥``. Reads only the report.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscan.views.analysis.explorer import asset
from torchscan.views.benchmark.page import CSP
from torchscan.views.common.html_appendix import badge_measure
from torchscan.views.common.number_style import measure
from torchscan.views.common.text import esc, number

BAR_METRICS = (("operator_flops", "Executed operator FLOPs per rank"), ("latency", "Latency per rank"))
BAR_WIDTH, BAR_HEIGHT, LABEL_WIDTH, VALUE_WIDTH = 360, 18, 70, 190
NOTE = (
    "Executed FLOPs are the work each process ran (DTensor operators at their local shard shapes), "
    "summed over ranks; the logical total is the job's computation counted once. Communication bytes "
    "are what each rank handed to collectives, not network traffic, which depends on the algorithm. "
    "Latency is the slowest rank's warmed block average and memory the largest rank's peak: memory "
    "does not pool across processes and is never summed."
)


def _value_text(result: Mapping[str, Any] | None) -> str:
    """A rank's figure in the page style (``12.79 MFLOPs``, ``≥ …`` for a lower bound), or ``Unavailable``."""
    if result is None or result["status"] == "unavailable":
        return "Unavailable"
    return measure(result)


def _exact_text(result: Mapping[str, Any] | None) -> str:
    """The exact figure for the terminal summary (``65,536 FLOPs``, ``≥ …``), or ``Unavailable``."""
    if result is None or result["status"] == "unavailable":
        return "Unavailable"
    shown = number(result["known_value"])
    return f"{shown} {result['unit']}" if result["status"] == "complete" else f"≥ {shown} {result['unit']}"


def _bars(report: Mapping[str, Any], metric: str, caption: str) -> str:
    """One horizontal bar per rank for ``metric``; '' when no rank reports the metric."""
    rows = [(entry["rank"], entry["totals"].get(metric)) for entry in report["per_rank"]]
    if all(result is None for _, result in rows):
        return ""
    known = [r["known_value"] for _, r in rows if r is not None and r["known_value"] is not None]
    scale = max(known) if known and max(known) > 0 else 1
    height = BAR_HEIGHT * 1.5 * len(rows) + 8
    width = LABEL_WIDTH + BAR_WIDTH + VALUE_WIDTH
    parts = []
    for index, (rank, result) in enumerate(rows):
        y = 4 + index * BAR_HEIGHT * 1.5
        text_y = y + BAR_HEIGHT * 0.75
        parts.append(f'<text x="0" y="{text_y:.1f}" dominant-baseline="middle">rank {number(rank)}</text>')
        if result is not None and result["known_value"] is not None:
            length = BAR_WIDTH * float(result["known_value"]) / float(scale)
            dashed = ' stroke-dasharray="4 3" fill-opacity="0.35"' if result["status"] == "partial" else ""
            parts.append(
                f'<rect x="{LABEL_WIDTH}" y="{y:.1f}" width="{length:.1f}" height="{BAR_HEIGHT}" '
                f'fill="#3b6ea8" stroke="#1d3d63"{dashed}><title>{esc(_value_text(result))}</title></rect>'
            )
        parts.append(
            f'<text x="{LABEL_WIDTH + BAR_WIDTH + 6}" y="{text_y:.1f}" dominant-baseline="middle">'
            f"{esc(_value_text(result))}</text>"
        )
    return (
        f'<figure><figcaption>{esc(caption)}</figcaption><svg xmlns="http://www.w3.org/2000/svg" '
        f'role="img" aria-label="{esc(caption)}" width="{width}" height="{height:.0f}" '
        f'viewBox="0 0 {width} {height:.0f}" font-size="12">{"".join(parts)}</svg></figure>'
    )


def _table(results: Mapping[str, Any], caption: str) -> str:
    rows = "".join(
        f'<tr><th scope="row">{esc(name)}</th><td>{badge_measure(value)}</td><td>{esc(value["method"])}</td>'
        f"<td>{esc(value['scope'])}</td><td>{esc(value['unit'])}</td></tr>"
        for name, value in sorted(results.items())
    )
    return (
        f"<table><caption>{esc(caption)}</caption><thead><tr><th>Metric</th><th>Value</th>"
        f"<th>Method</th><th>Scope</th><th>Unit</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _origin(entry: Mapping[str, Any]) -> str:
    """``"rank 3: "`` for a diagnostic one rank's own report carried; ``""`` for the merge's own."""
    return f"rank {number(entry['rank'])}: " if "rank" in entry else ""


def _diagnostics(report: Mapping[str, Any]) -> str:
    items = "".join(
        f"<li>{esc(_origin(entry))}<code>{esc(entry['code'])}</code> {esc(entry['metric'])}: "
        f"{esc(entry['message'])}</li>"
        for entry in report["diagnostics"]
    )
    return f"<h2>Diagnostics</h2><ul>{items}</ul>" if items else ""


def render_merged(report: Mapping[str, Any], *, title: str) -> str:
    """The HTML page of a validated merged report."""
    ranks = ", ".join(number(rank) for rank in report["ranks"])
    body = (
        f"<p>Merged {esc(report['merged_type'])} reports of ranks {esc(ranks)} "
        f"(world size {number(report['world_size'])}).</p>"
        f"{_table(report['totals'], 'Merged totals')}{_table(report['imbalance'], 'Imbalance (max ÷ mean)')}"
        + "".join(_bars(report, metric, caption) for metric, caption in BAR_METRICS)
        + f"{_diagnostics(report)}<p class=note>{esc(NOTE)}</p>"
    )
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        f"<title>{esc(title)}</title><style>{asset('explorer.css')}</style></head><body>"
        f'<main id="main"><h1>{esc(title)}</h1>{body}</main></body></html>\n'
    )


def merged_summary(report: Mapping[str, Any]) -> str:
    """A few lines for the terminal: the merged totals, then each rank's executed FLOPs and latency."""
    lines = [
        f"TorchScan merged report: ranks {report['ranks']} of world size {report['world_size']} "
        f"({report['merged_type']} reports)"
    ]
    for name, result in sorted(report["totals"].items()):
        lines.append(f"  {name:<24} {_exact_text(result)}  [scope {result['scope']}]")
    for entry in report["per_rank"]:
        totals = entry["totals"]
        shown = ", ".join(
            f"{metric} {_exact_text(totals[metric])}" for metric, _ in BAR_METRICS if metric in totals
        )
        lines.append(f"  rank {entry['rank']}: {shown}")
    lines += [f"  {_origin(entry)}{entry['code']}: {entry['message']}" for entry in report["diagnostics"]]
    return "\n".join(lines)
