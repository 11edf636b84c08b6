"""The page of a standalone ``FlopReport`` (``measure_flops``; views-3.md 4): HTML and SVG.

Operators, phases and PyTorch module labels, each with its share of the authoritative total, plus
steps, communication, ignored operators and diagnostics when the report has them. A share of a
partial total is an upper bound (``≤``), and a share is never shown for an unknown total. Module
labels are the counter's *inclusive* counts: a parent includes its children, so they are drawn as
an indented tree and never summed. Reads only the validated report; never imports torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscan.views.common.bar_rows import WIDTH, BarRow, bar_chart
from torchscan.views.common.method_note import method_note
from torchscan.views.common.number_style import measure, measure_status, quantity, share
from torchscan.views.common.page_parts import (
    badge,
    card,
    context_table,
    diagnostics_section,
    exact,
    not_meaning_section,
)
from torchscan.views.common.page_shell import page
from torchscan.views.common.text import esc, number
from torchscan.views.common.workload_svg import phase_section

NOT_MEANING = (
    "Operator FLOPs count the operators dispatched in one call of the workload, by TorchScan's "
    "convention; they are not module-formula FLOPs, never added to them, and say nothing about latency.",
    "A share is of this report's total: ≤ marks a share of a lower bound (the true share is at most "
    "that), and no share is shown when the total is unknown.",
    "Module labels are inclusive (a parent's count includes its children's): never sum them and never "
    "join them to an analysis report's module rows.",
    "Operator bytes are the sizes of operands read and results written per operator, not DRAM traffic.",
    "Ignored operators add no FLOPs for the stated reason; uncounted ones are listed as diagnostics, "
    "never counted as zero.",
)
OPERATOR_COLOUR = "#2f6db5"
MODULE_COLOUR = "#6a8fbf"


def share_of(value: int, total: Mapping[str, Any] | None) -> str:
    """``44.3 %`` of a complete total, ``≤ 44.3 %`` of a partial one, ``—`` of an unknown or zero one."""
    if total is None or total.get("known_value") in (None, 0):
        return "—"
    text = share(value / total["known_value"])
    return text if total["status"] == "complete" else f"≤ {text}"


def operator_rows(report: Mapping[str, Any]) -> list[tuple[str, int]]:
    """``by_operator`` largest first (ties by name)."""
    return sorted(report["by_operator"].items(), key=lambda item: (-item[1], item[0]))


def module_rows(report: Mapping[str, Any]) -> list[tuple[str, int, int]]:
    """``(label, inclusive FLOPs, depth)`` in report order; depth counts the label's dots."""
    return [(label, count, label.count(".")) for label, count in report["by_module"].items()]


def _operators(report: Mapping[str, Any]) -> str:
    total = report["total"]
    covered = set(report["context"].get("flop_counter_operators", ()))
    known_list = "flop_counter_operators" in report["context"]
    moved = report.get("by_operator_bytes")
    largest = max(report["by_operator"].values(), default=0)
    rows = []
    for name, flops in operator_rows(report):
        bar = f'<progress max="1" value="{flops / largest if largest else 0:.6f}"></progress>'
        cells = [
            f"<td><code>{esc(name)}</code></td>",
            f'<td class="num">{esc(quantity(flops, "FLOPs"))}</td>',
            f'<td class="num">{esc(share_of(flops, total))}</td>',
            f"<td>{bar}</td>",
            f'<td class="num">{esc(number(flops))}</td>',
        ]
        if moved is not None:
            cells.append(
                f'<td class="num">{esc(quantity(moved[name], "bytes")) if name in moved else "—"}</td>'
            )
        if known_list:
            cells.append(f"<td>{'yes' if name in covered else 'no (scores 0 there)'}</td>")
        rows.append(f"<tr>{''.join(cells)}</tr>")
    head = ["Operator", "FLOPs", "Share of total", "Relative to the largest", "Exact FLOPs"]
    if moved is not None:
        head.append("Operator bytes")
    if known_list:
        head.append("FlopCounterMode formula")
    table = (
        "<table><caption>Operators by FLOPs, largest first</caption><thead><tr>"
        + "".join(f"<th>{esc(name)}</th>" for name in head)
        + f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        if rows
        else "<p>No operator was counted.</p>"
    )
    note = method_note(report)
    return (
        f'<section id="operators"><h2>Operators ({len(rows)})</h2>'
        + (f'<p class="note">{esc(note)}</p>' if note else "")
        + f"{table}</section>"
    )


def _modules(report: Mapping[str, Any]) -> str:
    total = report["total"]
    rows = "".join(
        f'<tr><td style="padding-left:{0.4 + depth * 1.1:.1f}em"><code>{esc(label)}</code></td>'
        f'<td class="num">{esc(quantity(count, "FLOPs"))}</td>'
        f'<td class="num">{esc(share_of(count, total))}</td><td class="num">{esc(number(count))}</td></tr>'
        for label, count, depth in module_rows(report)
    )
    body = (
        "<table><caption>Inclusive operator FLOPs per PyTorch module label (a parent includes its "
        "children)</caption><thead><tr><th>Module label</th><th>Inclusive FLOPs</th><th>Share of total</th>"
        f"<th>Exact FLOPs</th></tr></thead><tbody>{rows}</tbody></table>"
        if rows
        else "<p>No module label was recorded (the workload ran no module, or none was given).</p>"
    )
    return (
        '<section id="modules"><h2>Modules (inclusive)</h2><p class="note">The counter\'s labels are '
        "inclusive: never sum these rows, and never join them to an analysis report's module rows.</p>"
        f"{body}</section>"
    )


def _steps(report: Mapping[str, Any]) -> str:
    steps = report.get("by_step")
    if steps is None:
        return ""
    rows = "".join(
        f'<tr><td class="num">{step["index"]}</td>'
        f"<td>{'unknown' if step['input_tokens'] is None else esc(number(step['input_tokens']))}</td>"
        f"<td>{badge(step['flops'])}</td><td>{esc(measure(step['operator_bytes']))}</td>"
        f"<td>{esc(measure(step['attention_kv_bytes']))}</td></tr>"
        for step in steps
    )
    outside = report.get("outside_steps")
    after = (
        f"<p>Outside every step (sampling, stopping checks): {esc(measure_status(outside['flops']))}, "
        f"{esc(measure(outside['operator_bytes']))} of operator bytes.</p>"
        if outside is not None
        else ""
    )
    return (
        f'<section id="steps"><h2>Steps ({len(steps)})</h2><table><thead><tr><th>Step</th><th>Input tokens'
        "</th><th>FLOPs</th><th>Operator bytes</th><th>Attention K/V bytes</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>{after}</section>"
    )


def _communication(report: Mapping[str, Any]) -> str:
    communication = report.get("communication")
    if communication is None:
        return ""
    rows = "".join(
        f'<tr><td><code>{esc(name)}</code></td><td class="num">{esc(number(entry["calls"]))}</td>'
        f'<td class="num">{esc(quantity(entry["bytes"], "bytes"))}</td></tr>'
        for name, entry in sorted(communication["by_operator"].items())
    )
    return (
        '<section id="communication"><h2>Communication</h2>'
        f"<p>Bytes handed to collectives: {badge(communication['total_bytes'])} (not wire traffic).</p>"
        "<table><thead><tr><th>Collective</th><th>Calls</th><th>Bytes</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></section>"
    )


def _ignored(report: Mapping[str, Any]) -> str:
    ignored = report["ignored_operators"]
    rows = "".join(
        f'<tr><td><code>{esc(name)}</code></td><td class="num">{esc(number(entry["calls"]))}</td>'
        f"<td>{esc(entry['reason'])}</td></tr>"
        for name, entry in sorted(ignored.items())
    )
    body = (
        "<table><thead><tr><th>Operator</th><th>Calls</th><th>Reason it adds no FLOPs</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
        if rows
        else "<p>None.</p>"
    )
    return f'<section id="ignored"><h2>Ignored operators ({len(ignored)})</h2>{body}</section>'


def _cards(report: Mapping[str, Any]) -> str:
    cards = [card("Operator FLOPs", report["total"], f"Exact: {exact(report['total'])}")]
    if "operator_bytes" in report:
        cards.append(card("Operator bytes", report["operator_bytes"], "Operands read plus results written."))
    if "logical_total" in report:
        cards.append(card("Logical FLOPs", report["logical_total"], "As if unsharded (DTensor)."))
    return f'<div class="cards">{"".join(cards)}</div>'


def _context_line(report: Mapping[str, Any]) -> str:
    context = report["context"]
    parts = [f"method {context['method']}", f"convention {context['counting_convention']}"]
    if "attention" in context:
        parts.append(f"attention {context['attention']}")
    parts.append(f"torch {context['torch_version']}")
    return (
        f'<p class="context-line">Operator FLOPs of one call of the workload · {esc(" · ".join(parts))}</p>'
    )


def render_flop_page(report: Mapping[str, Any], *, title: str) -> str:
    """The HTML page of a validated FlopReport."""
    body = (
        f"{_context_line(report)}{_cards(report)}"
        f'<figure id="flop-figure">{flop_svg(report, title=title, standalone=False)}</figure>'
        f"{phase_section(report)}{_operators(report)}{_modules(report)}{_steps(report)}"
        f"{_communication(report)}{_ignored(report)}"
        f"{diagnostics_section([('', report['diagnostics'])])}"
        f"{context_table(report['context'])}{not_meaning_section(NOT_MEANING)}"
    )
    return page(
        title, body, css="td.num { text-align: right; } figure svg { max-width: 100%; height: auto; }"
    )


def _operator_bars(report: Mapping[str, Any]) -> list[BarRow]:
    total = report["total"]
    return [
        BarRow(name, float(flops), f"{quantity(flops, 'FLOPs')} · {share_of(flops, total)}")
        for name, flops in operator_rows(report)
    ]


def _module_bars(report: Mapping[str, Any]) -> list[BarRow]:
    total = report["total"]
    return [
        BarRow(label, float(count), f"{quantity(count, 'FLOPs')} · {share_of(count, total)}", indent=depth)
        for label, count, depth in module_rows(report)
    ]


def flop_svg(report: Mapping[str, Any], *, title: str, standalone: bool = True) -> str:
    """A standalone SVG of a validated FlopReport: total, then every operator and module label as bars.

    The canvas grows with the rows: nothing is clipped. Module bars are inclusive (indented tree).
    """
    total = report["total"]
    y = 56.0
    parts = [
        f'<text x="8" y="24" font-size="16" font-weight="700">{esc(title)}</text>',
        f'<text x="8" y="44" font-size="12">Operator FLOPs: {esc(measure_status(total))} · method '
        f"{esc(total['method'])}</text>",
    ]
    for heading, rows, colour, name in (
        ("Operators, largest first", _operator_bars(report), OPERATOR_COLOUR, "operators"),
        (
            "PyTorch module labels (inclusive: a parent includes its children)",
            _module_bars(report),
            MODULE_COLOUR,
            "modules",
        ),
    ):
        y += 20
        parts.append(f'<text x="8" y="{y:.1f}" font-size="13" font-weight="700">{esc(heading)}</text>')
        y += 8
        if not rows:
            y += 16
            parts.append(f'<text x="8" y="{y:.1f}" font-size="12">None recorded.</text>')
            continue
        chart, height = bar_chart(rows, top=y, colour=colour, name=name)
        parts.append(chart)
        y += height
    diagnostics = len(report["diagnostics"])
    y += 24
    parts.append(f'<text x="8" y="{y:.1f}" font-size="12">Diagnostics: {diagnostics}</text>')
    height = y + 16
    summary = f"{title}: operator FLOPs {measure_status(total)}; {len(report['by_operator'])} operators."
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" class="flop-report" width="{WIDTH}" '
        f'height="{height:.0f}" viewBox="0 0 {WIDTH} {height:.0f}" font-family="system-ui, sans-serif" '
        f'aria-labelledby="flop-svg-title flop-svg-desc"><title id="flop-svg-title">{esc(title)}</title>'
        f'<desc id="flop-svg-desc">{esc(summary)}</desc>'
        f'<rect width="{WIDTH}" height="{height:.0f}" fill="#ffffff"/>{"".join(parts)}</svg>'
    )
    return svg + "\n" if standalone else svg
