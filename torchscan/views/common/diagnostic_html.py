"""The explorer's visible diagnostics table: one row per group, each naming its metric (issue 23 item 1).

Diagnostics about requested metrics are the table; those about receptive-field geometry (never shown
by the explorer, so never requested there) fold into one collapsed informational line. The exact,
complete list stays in the appendix (``#diagnostics``). A view: it reads a report, never imports torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscan.views.common.diagnostic_groups import (
    DiagnosticGroup,
    DiagnosticSummary,
    escape_control,
    informational_line,
    metric_label,
    summarize_diagnostics,
)
from torchscan.views.common.text import esc, number, path_label

GROUPS_SHOWN = 5

_HEAD = (
    "<thead><tr><th>Code</th><th>Metric</th><th>Module type or operator</th><th>Class path</th>"
    "<th>Count</th><th>Example paths</th><th>Action that resolves it</th></tr></thead>"
)


def _group_row(group: DiagnosticGroup, node_ids: Mapping[str, str]) -> str:
    paths = []
    for path in group["example_paths"]:
        label = esc(escape_control(path_label(path)))
        paths.append(f'<a href="#module-{node_ids[path]}">{label}</a>' if path in node_ids else label)
    hidden = group["path_count"] - len(group["example_paths"])
    more = f" (+{hidden} more)" if hidden else ""
    action = f"<code>{esc(escape_control(group['action']))}</code>" if group["action"] else "—"
    subject = esc(escape_control(group["subject"])) or "—"
    metrics = esc(escape_control(metric_label(group)))
    return (
        f"<tr><td><code>{esc(group['code'])}</code></td><td><code>{metrics}</code></td><td>{subject}</td>"
        f"<td>{esc(escape_control(group['class_path'] or '')) or '—'}</td><td>{number(group['count'])}</td>"
        f"<td>{', '.join(paths) or '—'}{more}</td><td>{action}</td></tr>"
    )


def _table(groups: list[DiagnosticGroup], node_ids: Mapping[str, str]) -> str:
    return f"<table>{_HEAD}<tbody>{''.join(_group_row(g, node_ids) for g in groups)}</tbody></table>"


def _informational(summary: Any, node_ids: Mapping[str, str]) -> str:
    line = informational_line(summary, "summary(..., receptive_field=True) or --receptive-field shows them")
    if line is None:
        return ""
    return (
        f'<details class="informational" id="diagnostics-informational"><summary>{esc(line)}</summary>'
        f"{_table(summary['informational'], node_ids)}</details>"
    )


def diagnostics_heading(summary: DiagnosticSummary) -> str:
    """``Diagnostics: 3 in 2 groups`` or ``Diagnostics: 0 about requested metrics``: the count the
    explorer and the SVG snapshot both state (diagnostics about requested metrics only)."""
    groups = summary["groups"]
    if not groups:
        return "Diagnostics: 0 about requested metrics"
    return f"Diagnostics: {number(summary['count'])} in {len(groups)} group{'s' if len(groups) != 1 else ''}"


def diagnostic_groups_section(report: Mapping[str, Any], node_ids: Mapping[str, str]) -> str:
    """Visible summary of the report's diagnostics, one row per (code, subject) group with its metric.

    The first ``GROUPS_SHOWN`` groups about requested metrics are visible, the rest fold into
    details; diagnostics about unrequested metrics are one collapsed informational line. Returns
    ``""`` for a report without diagnostics.
    """
    summary = summarize_diagnostics(report)
    groups = summary["groups"]
    informational = _informational(summary, node_ids)
    if not groups and not informational:
        return ""
    table = more = ""
    if groups:
        table = (
            "<table><caption>One row per code and module type or operator; counts are report "
            "diagnostics, not calls. Every diagnostic is listed exactly in the appendix "
            f'(<a href="#diagnostics">all diagnostics</a>).</caption>{_HEAD}<tbody>'
            f"{''.join(_group_row(g, node_ids) for g in groups[:GROUPS_SHOWN])}</tbody></table>"
        )
    rest = groups[GROUPS_SHOWN:]
    if rest:
        count = sum(g["count"] for g in rest)
        more = (
            f"<details><summary>{len(rest)} more group{'s' if len(rest) != 1 else ''} ({number(count)} "
            f"diagnostics)</summary>{_table(rest, node_ids)}</details>"
        )
    heading = diagnostics_heading(summary)
    return (
        f'<section id="diagnostic-groups" class="diagnostic-groups"><h2>{heading}</h2>{table}{more}'
        f"{informational}</section>"
    )
