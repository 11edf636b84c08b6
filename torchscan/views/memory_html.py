"""Self-contained HTML page of a MemoryReport (memory.md 4 "Views"): no script, nothing loaded.

The page embeds the timeline SVG of :mod:`torchscan.views.memory_svg`, then the categories at the
peak (exact bytes, binary units and a status badge; a lower bound reads ``≥``), the peak of each
phase, the top module calls by saved activations, the allocator's own figures under their own
methods, and the diagnostics. With a comparison (``render_report(after, before=before)``) it adds
the per-category deltas at the peak of :func:`torchscan.report.memory_diff.compare_memory_reports`.
Reads only validated reports; every report string is escaped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscan.report.memory_schema import CATEGORIES, PHASES
from torchscan.views.benchmark_html import CSP
from torchscan.views.html import asset
from torchscan.views.html_appendix import badge_measure
from torchscan.views.memory_svg import peak_sentence, timeline_svg
from torchscan.views.memory_text import (
    CATEGORY_LABELS,
    NOT_MEANING,
    bytes_text,
    delta_bytes_text,
    place_text,
)
from torchscan.views.text import esc, number

TOP_MODULES = 10
_EXTRA_CSS = ".memory-timeline { max-width: 100%; height: auto; } td.num { text-align: right; }"


def badge_bytes(result: Mapping[str, Any] | None) -> str:
    """A status badge and the byte figure: ``complete 3,232 bytes (3.16 KiB)``, ``partial ≥ …``."""
    status = "unavailable" if result is None else result["status"]
    text = bytes_text(result)
    if status == "partial":
        text += " (lower bound; full value unknown)"
    return f'<span class="badge {status}">{status}</span> {esc(text)}'


def badge_figure(result: Mapping[str, Any]) -> str:
    """An allocator figure with its badge, in its own unit (bytes get binary units too)."""
    if result["unit"] == "bytes":
        return badge_bytes(result)
    return badge_measure(result)


def _context(report: Mapping[str, Any]) -> str:
    context = report["context"]
    dtypes = ", ".join(context["dtypes"]) or "none seen"
    return (
        f'<p class="context-line">Device {esc(context["device"])} · ledger on '
        f"{esc(context['ledger_device'])} tensors · dtypes {esc(dtypes)} · "
        f"torch {esc(context['torch_version'])} · method "
        f"{esc(context['method'])} · {number(report['timeline_events'])} ledger events</p>"
    )


def _summary(report: Mapping[str, Any]) -> str:
    rows = "".join(
        f'<tr><th scope="row">{label}</th><td>{badge_bytes(report[key])}</td>'
        f"<td>{esc(report[key]['scope'])}</td></tr>"
        for key, label in (("peak", "Peak (baseline included)"), ("baseline", "Baseline (before the call)"))
    )
    return (
        '<section id="summary"><h2>Peak and baseline</h2>'
        f'<p data-peak-text="true">{esc(peak_sentence(report))}</p>'
        f"<table><thead><tr><th>Figure</th><th>Bytes</th><th>Scope</th></tr></thead><tbody>{rows}</tbody>"
        "</table></section>"
    )


def _at_peak(report: Mapping[str, Any]) -> str:
    at_peak = report["at_peak"]
    rows = "".join(
        f'<tr id="category-{name}"><th scope="row">{esc(CATEGORY_LABELS[name])}</th>'
        f"<td>{badge_bytes(at_peak['by_category'][name])}</td></tr>"
        for name in CATEGORIES
    )
    return (
        '<section id="at-peak"><h2>Categories at the peak</h2>'
        f"<p>At the peak: {esc(place_text(at_peak['phase'], at_peak['module']))} (the innermost module "
        "call running).</p>"
        f"<table><thead><tr><th>Category</th><th>Live bytes at the peak</th></tr></thead><tbody>{rows}"
        "</tbody></table></section>"
    )


def _by_phase(report: Mapping[str, Any]) -> str:
    rows = "".join(
        f'<tr id="phase-{name}"><th scope="row">{name}</th>'
        f"<td>{badge_bytes(report['by_phase'][name])}</td></tr>"
        for name in PHASES
    )
    return (
        '<section id="by-phase"><h2>Peak within each phase</h2><p class="note">A phase that never ran is '
        "unavailable, not zero.</p>"
        f"<table><thead><tr><th>Phase</th><th>Peak live bytes</th></tr></thead><tbody>{rows}</tbody></table>"
        "</section>"
    )


def top_modules(report: Mapping[str, Any], limit: int = TOP_MODULES) -> tuple[list[int], list[int]]:
    """Indices into ``by_module`` of the ranked calls (known saved bytes, largest first) and the unknown ones.

    Complete and partial calls rank by their known bytes (a partial one is shown as ``≥``); ties keep
    call order. Unavailable calls are never ranked (an unknown is not a small number).
    """
    calls = report["by_module"]
    known = [i for i, call in enumerate(calls) if call["activations_saved"]["known_value"] is not None]
    unknown = [i for i in range(len(calls)) if i not in set(known)]
    known.sort(key=lambda i: (-calls[i]["activations_saved"]["known_value"], i))
    return known[:limit], unknown


def _modules(report: Mapping[str, Any]) -> str:
    calls = report["by_module"]
    ranked, unknown = top_modules(report)
    rows = "".join(
        f'<tr><td class="num">{rank}</td><td>{esc(calls[i]["path"] or "(root)")}</td>'
        f'<td class="num">{number(calls[i]["call_index"])}</td><td>{esc(calls[i]["module_type"])}</td>'
        f"<td>{badge_bytes(calls[i]['activations_saved'])}</td><td>{badge_bytes(calls[i]['allocated'])}</td>"
        f"<td>{badge_bytes(calls[i]['peak_inside'])}</td></tr>"
        for rank, i in enumerate(ranked, start=1)
    )
    table = (
        f"<table><caption>Top {len(ranked)} of {number(len(calls))} module calls by activations saved for "
        "backward (each call's figures include its nested calls')</caption><thead><tr><th>Rank</th>"
        "<th>Module</th><th>Call</th><th>Type</th>"
        "<th>Activations saved</th><th>Allocated</th><th>Peak inside</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
        if ranked
        else "<p>No module call has a known saved-activation figure.</p>"
    )
    missing = "".join(
        f"<li>{esc(calls[i]['path'] or '(root)')} call #{number(calls[i]['call_index'])}: unknown</li>"
        for i in unknown
    )
    missing_block = (
        f"<h3>Unranked: saved activations unknown ({len(unknown)})</h3><ul>{missing}</ul>" if unknown else ""
    )
    return f'<section id="modules"><h2>Module calls by saved activations</h2>{table}{missing_block}</section>'


def _allocator(report: Mapping[str, Any]) -> str:
    figures = report["allocator"]
    if not figures:
        body = "<p>No allocator figure was recorded for this device (see the documentation).</p>"
    else:
        rows = "".join(
            f'<tr><th scope="row">{esc(name)}</th><td>{badge_figure(value)}</td>'
            f"<td>{esc(value['method'])}</td><td>{esc(value['scope'])}</td></tr>"
            for name, value in sorted(figures.items())
        )
        body = (
            "<table><thead><tr><th>Figure</th><th>Value</th><th>Method</th><th>Scope</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>"
        )
    return (
        '<section id="allocator"><h2>Allocator figures</h2><p class="note">The allocator\'s own figures, '
        "each with its own method: never substituted for the ledger, nor the ledger for them.</p>"
        f"{body}</section>"
    )


def _diagnostics(report: Mapping[str, Any], prefix: str = "", heading: str = "Diagnostics") -> str:
    entries = report["diagnostics"]
    items = "".join(
        f'<li id="{prefix}diagnostic-{i}"><span class="badge {esc(entry["severity"])}">'
        f"{esc(entry['severity'])}</span> "
        f"<code>{esc(entry['code'])}</code> {esc(entry['metric'])}: {esc(entry['message'])}"
        + (f" (path {esc(entry['path'] or '(root)')})" if "path" in entry else "")
        + "</li>"
        for i, entry in enumerate(entries)
    )
    return (
        f'<section id="{prefix}diagnostics"><h2>{heading} ({len(entries)})</h2>'
        f"<ul>{items or '<li>None.</li>'}</ul></section>"
    )


def _comparison(diff: Mapping[str, Any]) -> str:
    def row(ident: str, label: str, entry: Mapping[str, Any]) -> str:
        return (
            f'<tr id="{ident}"><th scope="row">{esc(label)}</th><td>{badge_bytes(entry["before"])}</td>'
            f"<td>{badge_bytes(entry['after'])}</td><td>{esc(delta_bytes_text(entry))}</td></tr>"
        )

    rows = row("delta-peak", "Peak", diff["peak"]) + row("delta-baseline", "Baseline", diff["baseline"])
    rows += "".join(
        row(f"delta-{name}", f"{CATEGORY_LABELS[name]} at the peak", diff["at_peak"][name])
        for name in CATEGORIES
    )
    rows += "".join(
        row(f"delta-phase-{name}", f"{name} phase peak", diff["by_phase"][name]) for name in PHASES
    )
    changes = "".join(
        f"<li>{esc(key)}: {esc(change['before'])} → {esc(change['after'])}</li>"
        for key, change in sorted(diff["context_changes"].items())
    )
    where = diff["where"]
    return (
        '<section id="comparison"><h2>Before → after</h2><p class="note">Deltas are after minus before, '
        "only where both sides are complete with equal labels; a lower bound on either side leaves the "
        "delta unknown. A before/after of activation checkpointing or freezing shows here as per-category "
        "deltas at the peak.</p>"
        f"<p>Peak before: {esc(place_text(where['before']['phase'], where['before']['module']))}; "
        f"after: {esc(place_text(where['after']['phase'], where['after']['module']))}.</p>"
        "<table><thead><tr><th>Figure</th><th>Before</th><th>After</th><th>Delta</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
        + (f"<h3>Changed measurement context</h3><ul>{changes}</ul>" if changes else "")
        + "</section>"
    )


def render_memory(
    report: Mapping[str, Any],
    *,
    title: str,
    diff: Mapping[str, Any] | None = None,
    before: Mapping[str, Any] | None = None,
) -> str:
    """The HTML page of a validated MemoryReport; with ``diff`` (and its ``before``) the comparison too."""
    body = (
        f'{_context(report)}<section id="timeline"><h2>Live bytes over the workload</h2><figure>'
        f"{timeline_svg(report, title=title, standalone=False)}</figure></section>"
        f"{_summary(report)}{_at_peak(report)}{_by_phase(report)}"
        + (_comparison(diff) if diff is not None else "")
        + f"{_modules(report)}{_allocator(report)}{_diagnostics(report)}"
        + (_diagnostics(before, "before-", "Before diagnostics") if before is not None else "")
        + '<section id="not-mean"><h2>What these numbers do not mean</h2>'
        f'<p class="note">{esc(NOT_MEANING)}</p></section>'
    )
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        f"<title>{esc(title)}</title><style>{asset('explorer.css')}{_EXTRA_CSS}</style></head><body>"
        f'<a class="skip" href="#main">Skip to the measurements</a><main id="main"><h1>{esc(title)}</h1>'
        f"{body}</main></body></html>\n"
    )
