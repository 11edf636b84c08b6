"""The summary table's footer: totals, what the rows stand for, then the diagnostics (analysis.md 8)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from torchscan.views.analysis.row_values import NOT_CALLED_TEXT, is_called
from torchscan.views.analysis.table_columns import COVERED, format_metric
from torchscan.views.analysis.table_rows import TableRow
from torchscan.views.common.diagnostic_groups import format_groups, informational_line, summarize_diagnostics
from torchscan.views.common.method_note import method_note

DIAGNOSTIC_LINES = 5  # groups shown in the footer before "N more"


def _bytes(count: int) -> str:
    size = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.2f} {unit}" if unit != "B" else f"{count} B"
        size /= 1024
    return f"{count} B"


def _rows_line(
    report: Mapping[str, Any],
    rows: Sequence[TableRow],
    depth: int,
    deepest: int,
    fold: bool,
    spelled: Mapping[str, str],
) -> str:
    calls = sum(1 for layer in report["layers"] if is_called(layer))
    uncalled = len(report["layers"]) - calls
    what = f"{calls} layer calls" + (f" and {uncalled} modules not called" if uncalled else "")
    if len(rows) == len(report["layers"]):
        return f"Rows: all {what} shown." if uncalled else f"Rows: all {calls} layer calls shown."
    hints = []
    if any(row.collapsed for row in rows):
        every = spelled["max_depth"].format(deepest)
        hints.append(
            f"calls deeper than depth {depth} are in their ancestors' incl. cells ({every} shows every depth)"
        )
    if fold and any(row.fold > 1 for row in rows):
        hints.append(
            "a (×N) row shows one of N identical blocks, each with these values "
            f"({spelled['fold']} lists them)"
        )
    return f"Rows: {len(rows)} for {what}; " + "; ".join(hints) + "."


def _row_kind_lines(report: Mapping[str, Any], covered: bool) -> list[str]:
    """What not-called rows, attributed shares and ``covered`` cells mean (views-3.md 1), when present."""
    layers = report["layers"]
    lines = []
    uncalled = [layer for layer in layers if not is_called(layer)]
    if uncalled:
        held = sum(layer["parameters"]["trainable"] + layer["parameters"]["frozen"] for layer in uncalled)
        lines.append(
            f"Not called: {len(uncalled)} module(s) never ran as a module call (shape '{NOT_CALLED_TEXT}'); "
            f"their rows hold their own {held:,} params; work done with them is counted in the call "
            "that ran it."
        )
    if any("attribution" in layer for layer in layers):
        lines.append(
            "Rows inside a native Transformer call show their share of its inclusive estimate "
            "(by the module formulas; the shares sum to it)."
        )
    if covered:
        lines.append(f"{COVERED}: included in an ancestor's inclusive estimate (see that row's incl. value).")
    return lines


def footer_lines(
    report: Mapping[str, Any],
    rows: Sequence[TableRow],
    depth: int,
    deepest: int,
    fold: bool,
    spelled: Mapping[str, str],
    geometry: bool = False,
    covered: bool = False,
) -> list[str]:
    """Parameter and cost totals, what the rows stand for, then the diagnostics (issue 23 item 1).

    Only diagnostics about requested metrics are counted and grouped; those about the receptive
    field when ``geometry`` (its columns) was not asked for fold into one informational line.
    """
    totals = report["totals"]
    trainable = totals["trainable_parameters"]["value"]
    frozen = totals["frozen_parameters"]["value"]
    size = totals["parameter_bytes"]["value"] + totals["buffer_bytes"]["value"]
    lines = [
        f"Trainable params: {trainable:,}",
        f"Non-trainable params: {frozen:,}",
        f"Total params: {totals['parameters']['value']:,}",
        f"Model size (params + buffers): {_bytes(size)}",
    ]
    attributed = sum(
        layer["parameters"]["trainable"] + layer["parameters"]["frozen"] for layer in report["layers"]
    )
    if attributed != totals["parameters"]["value"]:  # a report saved before not-called rows existed
        unattributed = totals["parameters"]["value"] - attributed
        lines.append(
            f"Params of modules never called: {unattributed:,} (in the total and the root's incl. count; "
            "other incl. counts may miss them: ≥)"
        )
    lines += _row_kind_lines(report, covered)
    lines.append("-" * 20)
    labels = {
        "module_flops": "Module FLOPs (formula)",
        "macs": "MACs (formula)",
        "dmas": "DMAs (formula)",
        "operator_flops": "Operator FLOPs (dispatch)",
    }
    for name, label in labels.items():
        if name in totals:
            result = totals[name]
            text = "not requested" if result["method"] == "not_requested" else format_metric(result)
            lines.append(f"{label}: {text}")
            if name == "operator_flops":
                note = method_note(report)  # issue 23 item 7: what the method label means
                if note is not None:
                    lines.append(f"  {note}")
    lines.append(_rows_line(report, rows, depth, deepest, fold, spelled))
    lines.append(
        "Columns: incl. counts the row's call and every call it made (once each); own counts the call alone."
    )
    summary = summarize_diagnostics(report, receptive_field=geometry)
    informational = informational_line(summary, spelled["receptive_field"])
    count, groups = summary["count"], summary["groups"]
    if not count:
        lines.append("Diagnostics: 0")
    else:
        incomplete = any(
            result["status"] != "complete" and result["method"] != "not_requested"
            for result in totals.values()
        )
        lines.append(
            f"Diagnostics: {count} in {len(groups)} group(s)"
            + ("; incomplete totals are lower bounds" if incomplete else "")
            + " (count × code: subject [metrics] at paths -> what resolves it):"
        )
        lines += ["  " + line for line in format_groups(groups, DIAGNOSTIC_LINES)]
    if informational is not None:
        lines.append(informational)
    return lines
