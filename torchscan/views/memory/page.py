"""Self-contained HTML page of a MemoryReport (memory.md 4 "Views", views-3.md 5): nothing loaded.

The page embeds the timeline SVG of :mod:`torchscan.views.memory.timeline_svg` (with ``before=``, both runs'
timelines one above the other on one bytes axis), then the categories at the peak (page-style bytes
and the exact count, a status badge; a lower bound reads ``≥``), the peak of each phase, the
per-module view (:mod:`torchscan.views.memory.modules_svg`) and the top module calls ranked by the
bytes they created *themselves* (nested calls excluded), the allocator's own figures under their
own methods, and the diagnostics. With a comparison it adds the per-category deltas at the peak of
:func:`torchscan.report.memory_diff.compare_memory_reports`. One constant script (assets/memory.js,
allowed by its hash) zooms the timelines and reads a point's bytes on hover; without it the page
is complete, only static. Reads only validated reports; every report string is escaped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscan.report.memory_schema import CATEGORIES, PHASES
from torchscan.views.common.html_appendix import badge_measure
from torchscan.views.common.number_style import change, quantity
from torchscan.views.common.page_parts import badge, exact
from torchscan.views.common.page_shell import asset, page
from torchscan.views.common.text import esc, number, script_json
from torchscan.views.memory.modules_svg import NO_SHAPES, call_name, module_bars_svg
from torchscan.views.memory.own_bytes import Own, own_bytes, ranked_by_own
from torchscan.views.memory.text import CATEGORY_LABELS, NOT_MEANING, place_text
from torchscan.views.memory.timeline_svg import peak_index, peak_sentence, timeline_svg, timeline_top

TOP_MODULES = 10
_EXTRA_CSS = (
    ".memory-timeline, .memory-modules { max-width: 100%; height: auto; } td.num { text-align: right; }"
    " .memory-toolbar { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; margin: 4px 0; }"
    " .memory-toolbar button { font: inherit; padding: 2px 10px; border: 1px solid #555; border-radius: 4px;"
    " background: #fff; } .memory-toolbar button:disabled { color: #888; border-color: #bbb; }"
    " .memory-readout { min-height: 1.4em; } svg.memory-timeline:focus { outline: 3px solid #0b57d0; }"
)
ZOOM_NOTE = (
    "Zoom: the buttons, or drag across the plot; read a point: hover the plot, or focus it and use "
    "the arrow keys."
)


def badge_bytes(result: Mapping[str, Any] | None) -> str:
    """A status badge and the bytes in the page style: ``complete 3.156 KiB``, ``partial ≥ …``."""
    return badge(result)


def exact_cell(result: Mapping[str, Any] | None) -> str:
    """The exact recorded byte count (``3,232 bytes``), ``≥`` for a lower bound, ``—`` when unknown."""
    return f'<td class="num">{esc(exact(result))}</td>'


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
        f'<tr><th scope="row">{label}</th><td>{badge_bytes(report[key])}</td>{exact_cell(report[key])}'
        f"<td>{esc(report[key]['scope'])}</td></tr>"
        for key, label in (("peak", "Peak (baseline included)"), ("baseline", "Baseline (before the call)"))
    )
    return (
        '<section id="summary"><h2>Peak and baseline</h2>'
        f'<p data-peak-text="true">{esc(peak_sentence(report))}</p>'
        "<table><thead><tr><th>Figure</th><th>Bytes</th><th>Exact</th><th>Scope</th></tr></thead>"
        f"<tbody>{rows}</tbody>"
        "</table></section>"
    )


def _at_peak(report: Mapping[str, Any]) -> str:
    at_peak = report["at_peak"]
    rows = "".join(
        f'<tr id="category-{name}"><th scope="row">{esc(CATEGORY_LABELS[name])}</th>'
        f"<td>{badge_bytes(at_peak['by_category'][name])}</td>{exact_cell(at_peak['by_category'][name])}</tr>"
        for name in CATEGORIES
    )
    return (
        '<section id="at-peak"><h2>Categories at the peak</h2>'
        f"<p>At the peak: {esc(place_text(at_peak['phase'], at_peak['module']))} (the innermost module "
        "call running).</p>"
        "<table><thead><tr><th>Category</th><th>Live bytes at the peak</th><th>Exact</th></tr></thead>"
        f"<tbody>{rows}"
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
    """Indices into ``by_module`` of the calls ranked by the bytes they allocated *themselves* (nested
    calls excluded, views-3.md 5), largest first, and of those whose own bytes are unknown.

    A partial call ranks by its known part (shown as ``≥``); ties keep call order. Unknown calls are
    never ranked (an unknown is not a small number).
    """
    return ranked_by_own(report["by_module"], "allocated", limit)


def _own_cell(own: Own) -> str:
    """A call's own bytes with its status: a lower bound reads ``≥``, unknown is a word."""
    if own.value is None:
        return '<td><span class="badge unavailable">unavailable</span> unknown</td>'
    status = "partial" if own.partial else "complete"
    shown = f"{'≥ ' if own.partial else ''}{quantity(own.value, 'bytes')}"
    return f'<td><span class="badge {status}">{status}</span> {esc(shown)}</td>'


def _modules(report: Mapping[str, Any]) -> str:
    calls = report["by_module"]
    ranked, unknown = top_modules(report)
    allocated = own_bytes(calls, "allocated")
    saved = own_bytes(calls, "activations_saved")
    rows = "".join(
        f'<tr><td class="num">{rank}</td><td>{esc(calls[i]["path"] or "(root)")}</td>'
        f'<td class="num">{number(calls[i]["call_index"])}</td><td>{esc(calls[i]["module_type"])}</td>'
        f"{_own_cell(allocated[i])}{_own_cell(saved[i])}<td>{badge_bytes(calls[i]['allocated'])}</td>"
        f"<td>{badge_bytes(calls[i]['peak_inside'])}</td></tr>"
        for rank, i in enumerate(ranked, start=1)
    )
    table = (
        f"<table><caption>Top {len(ranked)} of {number(len(calls))} module calls by the bytes they allocated "
        "themselves (nested calls excluded)</caption><thead><tr><th>Rank</th><th>Module</th><th>Call</th>"
        "<th>Type</th><th>Own allocated</th><th>Own saved for backward</th>"
        "<th>Allocated with nested calls</th>"
        f"<th>Peak inside</th></tr></thead><tbody>{rows}</tbody></table>"
        if ranked
        else "<p>No module call has known own bytes.</p>"
    )
    missing = "".join(f"<li>{esc(call_name(calls[i]))}: own bytes unknown</li>" for i in unknown)
    missing_block = (
        f"<h3>Unranked: own bytes unknown ({len(unknown)})</h3><p class=note>Their figures are not complete, "
        f"or do not nest by module path (a module called outside its parent's forward).</p><ul>{missing}</ul>"
        if unknown
        else ""
    )
    return (
        '<section id="modules"><h2>Module calls: the bytes each created</h2>'
        f"<figure>{module_bars_svg(report)}<figcaption>Each bar is the bytes one module call created itself, "
        "stacked by what autograd saved for backward (live until backward consumes them) and the rest; hover "
        f"a segment for its category, module and bytes ({esc(NO_SHAPES)}). The ledger does not record which "
        "call's storages were live at the peak itself.</figcaption></figure>"
        f"{table}{missing_block}</section>"
    )


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


def _delta(entry: Mapping[str, Any]) -> str:
    """A MetricDiff in bytes in the page style (``+2.125 KiB (+1.6 %)``), or why there is none."""
    if entry["delta"] is None:
        if entry["status"] == "partial":
            return "delta unknown (a side is a lower bound)"
        return "delta unknown (requires two complete measurements with equal labels)"
    before = entry["before"]["value"] if entry.get("before") else None
    return change(entry["delta"], "bytes", before)


def _comparison(diff: Mapping[str, Any]) -> str:
    def row(ident: str, label: str, entry: Mapping[str, Any]) -> str:
        return (
            f'<tr id="{ident}"><th scope="row">{esc(label)}</th><td>{badge_bytes(entry["before"])}</td>'
            f"<td>{badge_bytes(entry['after'])}</td><td>{esc(_delta(entry))}</td></tr>"
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


def _series(report: Mapping[str, Any]) -> dict[str, Any]:
    """What the page's script reads of one timeline: events, phases, bytes per drawn category."""
    points = report["timeline"]
    by_category = report["at_peak"]["by_category"]
    drawn = [name for name in CATEGORIES if by_category[name]["status"] != "unavailable"]
    return {
        "events": [point["event"] for point in points],
        "phases": [point["phase"] for point in points],
        "drawn": drawn,
        "categories": {name: [point["by_category"][name] for point in points] for name in drawn},
        "peak": peak_index(points) or 0,
    }


def _figure(report: Mapping[str, Any], key: str, title: str, top: int | None) -> str:
    svg = timeline_svg(report, title=title, standalone=False, prefix=key, top=top)
    controls = (
        '<div class="memory-toolbar" role="toolbar" aria-label="Timeline zoom">'
        '<button type="button" data-zoom="in" disabled>Zoom in</button>'
        '<button type="button" data-zoom="out" disabled>Zoom out</button>'
        '<button type="button" data-zoom="reset" disabled>Reset zoom</button>'
        f'<span class="note">{esc(ZOOM_NOTE)}</span></div>'
        if report["timeline"]
        else ""
    )
    return (
        f'<figure class="memory-figure" data-timeline="{key}">{controls}{svg}'
        '<p class="memory-readout note" aria-live="polite"></p></figure>'
    )


def render_memory(
    report: Mapping[str, Any],
    *,
    title: str,
    diff: Mapping[str, Any] | None = None,
    before: Mapping[str, Any] | None = None,
) -> str:
    """The HTML page of a validated MemoryReport; with ``diff`` (and its ``before``) the comparison too:
    both timelines one above the other on one bytes axis."""
    if before is not None:
        top = max(timeline_top(before), timeline_top(report))
        figures = _figure(before, "before", f"Before: {title}", top) + _figure(
            report, "after", f"After: {title}", top
        )
        heading = "Live bytes over the workload, before and after (one bytes axis)"
        series = {"before": _series(before), "after": _series(report)}
    else:
        figures = _figure(report, "after", title, None)
        heading = "Live bytes over the workload"
        series = {"after": _series(report)}
    series["labels"] = dict(CATEGORY_LABELS)
    body = (
        f'{_context(report)}<section id="timeline"><h2>{heading}</h2>{figures}</section>'
        f"{_summary(report)}{_at_peak(report)}{_by_phase(report)}"
        + (_comparison(diff) if diff is not None else "")
        + f"{_modules(report)}{_allocator(report)}{_diagnostics(report)}"
        + (_diagnostics(before, "before-", "Before diagnostics") if before is not None else "")
        + '<section id="not-mean"><h2>What these numbers do not mean</h2>'
        f'<p class="note">{esc(NOT_MEANING)}</p></section>'
    )
    data = f'<script id="memory-data" type="application/json">{script_json(series)}</script>'
    return page(title, body, css=_EXTRA_CSS, script=asset("memory.js"), data=data)
