"""The offline HTML module cost explorer for one AnalysisReport, optionally against a baseline.

One self-contained document (render.md 3): summary cards, six metric views switched by radio
buttons (CSS only, so they work without script), an icicle map per metric group, a rail of cards
for what the map cannot size, rankings of complete calls only, an inspector, and a closed appendix
with every exact piece of evidence. The one script enhances keyboard navigation and selection; it
is a constant package file whose SHA-256 is the only script the Content-Security-Policy allows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from torchscan.views.analysis.evidence import build_data, input_line
from torchscan.views.analysis.geometry import COMPUTE_VIEWS, VIEWS
from torchscan.views.analysis.map_svg import BAR_KEY, calls_text, draw_map
from torchscan.views.analysis.panel_data import RAIL_WORDS, card_change
from torchscan.views.common.diagnostic_html import diagnostic_groups_section
from torchscan.views.common.embed import encode
from torchscan.views.common.html_appendix import appendix, badge_measure
from torchscan.views.common.method_note import method_note
from torchscan.views.common.number_style import share
from torchscan.views.common.page_parts import badge, exact
from torchscan.views.common.page_shell import asset, script_csp
from torchscan.views.common.roofline_svg import roofline_section
from torchscan.views.common.text import esc, path_label, script_json

EMPTY_RANKING = "<tr><td colspan=4>No complete calls in this group.</td></tr>"
# The rail list starts open only when short; a transformer's 150 unsizable modules stay one line.
RAIL_OPEN_LIMIT = 12
# Above this many layer calls, panels other than the initial view are drawn by the page's script
# when first selected (from the embedded data), which keeps a BERT-base page under 1.5 MB.
LAZY_LAYER_LIMIT = 100
TOP_COLUMNS = (("rank", "Rank"), ("order", "Module call"), ("type", "Type"), ("value", "Value"))
TOP_SORTED = ' aria-sort="ascending"'
# The paired bars' key (issue 23); explorer-draw.js writes the same markup for lazily drawn panels.
BAR_LEGEND = (
    '<p class="bar-legend"><span class="swatch bar-before"></span> before (baseline) '
    f'<span class="swatch bar-after"></span> after · {BAR_KEY}</p>'
)
# The search box (views-3.md 6): disabled in markup like the toolbar; the script enables it, fills
# its suggestions with every module path of the report and jumps to the path typed.
SEARCH = (
    '<div class="module-search" role="search"><label for="module-search">Find a module path</label> '
    '<input type="search" id="module-search" list="module-paths" autocomplete="off" spellcheck="false" '
    'placeholder="e.g. layer3.0.conv1 (Enter jumps to it)" disabled>'
    '<datalist id="module-paths"></datalist> <span id="module-search-status" class="note" role="status" '
    'aria-live="polite"></span></div>'
)
# Diagnostics about a metric nobody asked for (issue 23 item 1) are listed apart, never as warnings.
INFORMATIONAL_HEADING = "Not requested (informational)"
LAZY_NOTE = (
    "This view is drawn by the page's script when selected, to keep large reports small. Without "
    "script, the appendix below holds every value: the module hierarchy and each call's exact evidence."
)


@cache
def explorer_script() -> str:
    """The page's one script: both constant assets in one strict function (their shared scope)."""
    return '(function () {\n"use strict";\n' + asset("explorer.js") + asset("explorer-draw.js") + "})();\n"


def content_security_policy(script: str) -> str:
    """The explorer's CSP: nothing external, only the packaged script by hash (render.md 3.8)."""
    return script_csp(script)


def _card(
    title: str,
    value: Mapping[str, Any] | None,
    note: str,
    change: Mapping[str, Any] | None,
    method_text: str | None = None,
) -> str:
    method = esc(value["method"]) if value else "not recorded"
    if method_text:  # what the method label means (issue 23 item 7, views/common/method_note.py)
        method += f'</p><p class="card-method method-note">{esc(method_text)}'

    comparison = ""
    if change is not None:
        comparison = f'<p class="card-change">{esc(card_change(change))}</p>'
    exact_line = f'<p class="card-exact">Exact: {esc(exact(value))}</p>' if value is not None else ""
    return (
        f'<div class="card"><h2>{esc(title)}</h2><p class="metric-value">{badge(value)}</p>'
        f"{exact_line}{comparison}"
        f'<p class="card-method">Method: {method}</p><p class="card-note">{esc(note)}</p></div>'
    )


def _context_line(report: Mapping[str, Any]) -> str:
    context = report["context"]
    inputs = report["inputs"]
    shapes = input_line(report)
    devices = ", ".join(context.get("devices", [])) or "unknown"
    dtypes = ", ".join(context.get("dtypes", [])) or "unknown"
    mode = context.get("analysis_mode", "full")
    return (
        f'<p class="context-line">Inputs ({esc(inputs.get("source", "unknown"))}): {esc(shapes)} · '
        f"Devices: {esc(devices)} · Dtypes: {esc(dtypes)} · Analysis mode: {esc(mode)} · "
        f"torch {esc(context.get('torch_version', '?'))} · TorchScan "
        f"{esc(context.get('torchscan_version', '?'))}</p>"
    )


def _rail(group: Mapping[str, Any], nodes: Mapping[str, Mapping[str, Any]]) -> str:
    if not group["rails"]:
        return ""
    cards = []
    for card in group["rails"]:
        node = nodes[card["node"]]
        kinds = " ".join(node["rail"])
        cards.append(
            f'<a class="rail-card {kinds}" data-node-id="{node["id"]}" data-group-id="{group["id"]}" '
            f'href="#module-{node["id"]}"><span class="rail-path">{esc(path_label(node["path"]))}</span>'
            f'<span class="rail-kind">{esc(RAIL_WORDS[card["kind"]])}</span>'
            f'<span class="rail-value">{esc(card["text"])}</span>'
            + (f'<span class="rail-note">{esc(card["note"])}</span>' if card["note"] else "")
            + "</a>"
        )
    counts = {kind: sum(card["kind"] == kind for card in group["rails"]) for kind in RAIL_WORDS}
    kinds = ", ".join(f"{n} {RAIL_WORDS[kind]}" for kind, n in counts.items() if n)
    opened = " open" if len(cards) <= RAIL_OPEN_LIMIT else ""
    return (
        f'<div class="rail-group" data-group-id="{group["id"]}"><details class="rail-list"{opened}>'
        f"<summary>{esc(group['label'])}: {len(cards)} module{'s' if len(cards) != 1 else ''} the map "
        f"cannot size ({kinds}; cards are deliberately unscaled, not sized by cost)</summary>"
        f'<div class="rail-cards">{"".join(cards)}</div></details></div>'
    )


def _ranking(group: Mapping[str, Any], view: str, total: Mapping[str, Any] | None) -> str:
    calls = {call["index"]: call for node in group["nodes"] for call in node["calls"] if call["in_group"]}
    unranked = [
        call
        for node in group["nodes"]
        for call in node["calls"]
        if call["in_group"] and call["result"]["status"] != "complete"
    ]
    rows = []
    for rank, row in enumerate(group["ranking"], start=1):
        call = calls[row["index"]]
        shared = ""
        if view not in COMPUTE_VIEWS and call["shared"]:
            shared = "<br><small>shared tensors are accounted to an earlier call</small>"
        rows.append(
            f'<tr><td>{rank}</td><td><a href="#call-{call["index"]}">{esc(call["label"])}</a>{shared}</td>'
            f'<td>{badge_measure(call["result"])} <progress max="1" value="{row["fraction"]}">'
            f"{row['percent']} of the largest complete "
            f"call</progress></td><td>{esc(call['result']['method'])}</td></tr>"
        )
    missing = "".join(
        f'<li><a href="#call-{call["index"]}">{esc(call["label"])}</a>: {esc(call["display"])}</li>'
        for call in unranked
    )
    table = (
        f"<table><caption>Top complete calls in {esc(group['label'])} (ranks restart in each method group; "
        "bars compare with the largest complete call, not a share of the total)</caption>"
        "<thead><tr><th>Rank</th><th>Call</th><th>Value</th><th>Method</th></tr></thead>"
        f"<tbody>{''.join(rows) or EMPTY_RANKING}</tbody></table>"
    )
    return (
        f'<div class="ranking-group"><p>Authoritative model total: {badge(total, with_exact=True)}</p>{table}'
        f"<details><summary>Unranked incomplete or absent measurements ({len(unranked)})</summary>"
        f"<ul>{missing}</ul></details></div>"
    )


def top_table(group: Mapping[str, Any]) -> str:
    """Sortable top-N table of a group's complete calls, with each call's share of the model total.

    When comparing, each row also reads the same call's baseline value and its change (issue 23).
    """
    if not group["top"]:
        return ""
    comparing = group["comparison"]
    body = "".join(
        f'<tr data-rank="{row["rank"]}" data-order="{row["order"]}" data-type="{esc(row["type"])}">'
        f'<td>{row["rank"]}</td><td><a href="#call-{row["index"]}">{esc(row["call"])}</a></td>'
        f"<td>{esc(row['type'])}</td><td>{esc(row['text'])}</td><td>{esc(row['share'])}</td>"
        + (f"<td>{esc(row['before'])}</td><td>{esc(row['delta'])}</td>" if comparing else "")
        + "</tr>"
        for row in group["top"]
    )
    headers = "".join(
        f'<th{TOP_SORTED if key == "rank" else ""}><button type="button" data-sort="{key}" disabled>'
        f"{label}</button></th>"
        for key, label in TOP_COLUMNS
    )
    extra = "<th>Before</th><th>Δ (after minus before)</th>" if comparing else ""
    return (
        f'<table class="top-layers" data-group-id="{group["id"]}"><caption>Top {len(group["top"])} of '
        f"{group['complete_calls']} complete calls in {esc(group['label'])} by own value, with the share "
        "of the authoritative model total (sortable; incomplete calls are listed under Rankings)</caption>"
        f"<thead><tr>{headers}<th>% of model total</th>{extra}</tr></thead><tbody>{body}</tbody></table>"
    )


def type_table(group: Mapping[str, Any]) -> str:
    """The "by module type" aggregate shown above the top-N table (issue 23)."""
    if not group["by_type"]:
        return ""
    comparing = group["comparison"]
    body = "".join(
        f"<tr><td>{esc(row['type'] or 'structural')}</td><td>{row['calls']}</td><td>{esc(row['text'])}</td>"
        f"<td>{esc(row['share'])}</td>"
        + (f"<td>{esc(row['before'])}</td><td>{esc(row['delta'])}</td>" if comparing else "")
        + "</tr>"
        for row in group["by_type"]
    )
    extra = "<th>Before</th><th>Δ (after minus before)</th>" if comparing else ""
    return (
        f'<table class="by-type" data-group-id="{group["id"]}"><caption>By module type in '
        f"{esc(group['label'])}: own values of every call of a type added up, largest first (a type "
        "with an incomplete call is a lower bound)</caption><thead><tr><th>Module type</th><th>Calls</th>"
        f"<th>Own value, all calls</th><th>% of model total</th>{extra}</tr></thead>"
        f"<tbody>{body}</tbody></table>"
    )


def inspector(data: Mapping[str, Any], view: str, group: Mapping[str, Any], node: Mapping[str, Any]) -> str:
    """Static inspector markup for one node; the script rebuilds the same structure on selection."""
    comparing = data["before"] is not None
    calls = node["calls"]
    count = len(calls) or len(node["before_calls"])
    parts = [
        f'<h3 tabindex="-1">{esc(path_label(node["path"]))}</h3>',
        f'<p class="inspector-type">{esc(node["type"] or "structural module (not called)")} · '
        + (
            calls_text(node, count)
            + (f" (×{count} calls)" if count > 1 and not node.get("not_called") else "")
        )
        + "</p>",
        f'<p>Subtotal: <span class="metric-value">{badge_measure(node["subtotal"])}</span></p>',
        '<p class="note">Derived from this path and its descendants (derived_recorded_subtotal, '
        "observed_subtree), not a new measurement.</p>",
    ]
    if node["covered"]:
        parts.append("<p>Own calls are covered by an ancestor's inclusive estimate.</p>")
    elif node["direct"] is None:
        parts.append("<p>Own value: no direct estimate.</p>")
    else:
        parts.append(f"<p>Own value: {badge_measure(node['direct'])}</p>")
    if node["shapes"]:
        parts.append(f"<p>First call: {esc(node['shapes'])}</p>")
    largest = max(
        (c["result"]["value"] for c in calls if c["in_group"] and c["result"]["status"] == "complete"),
        default=0,
    )
    for call in calls:
        bar = ""
        if call["in_group"] and call["result"]["status"] == "complete":
            fraction = call["result"]["value"] / largest if largest else 0
            bar = f' <progress max="1" value="{fraction:.6f}">{share(fraction)}</progress>'
        extra = f"<br>{esc(call['attribution'])}" if "attribution" in call else ""
        parts.append(
            f'<div class="call-card"><a href="#call-{call["index"]}">{esc(call["label"])}</a><br>'
            f"{esc(call['display'])}{bar}{extra}<br>{esc(call['shapes'])}</div>"
        )
    if node["change"] == "removed":
        for call in node["before_calls"]:
            parts.append(
                f'<div class="call-card"><a href="#before-call-{call["index"]}">Before: '
                f"{esc(call['label'])}</a>"
                f"<br>{esc(call['display'])}<br>{esc(call['shapes'])}</div>"
            )
    if count > 1:
        parts.append("<p class=note>The schema cannot tie a child call to a parent call.</p>")
    parts.append(
        f"<p>Method: {esc(group['method'])}<br>Scope: {esc(group['scope'])}<br>Unit: {esc(group['unit'])}</p>"
    )
    diags = [d for d in data["diagnostics"] if d.get("path") == node["path"]]
    for heading, informational in (("Diagnostics", False), (INFORMATIONAL_HEADING, True)):
        items = "".join(
            f'<li><a href="#diagnostic-{d["index"]}">{esc(d["code"])}</a> [{esc(d["metric"])}]: '
            f"{esc(d['message'])}</li>"
            for d in diags
            if bool(d.get("informational")) == informational
        )
        if items:
            parts.append(f"<h4>{heading}</h4><ul>{items}</ul>")
    if comparing:
        parts.append(
            f"<p>Before: {esc(node['before_display'])}<br>After: {esc(node['display'])}<br>"
            f"Delta: {esc(node['delta_display'])}</p>"
        )
        before_diags = [d for d in data["before_diagnostics"] if d.get("path") in (node["path"], None)]
        items = "".join(
            f'<li><a href="#before-diagnostic-{d["index"]}">'
            f"{'Global' if d.get('path') is None else 'This path'}: "
            f"{esc(d['code'])}</a> {esc(d['message'])}</li>"
            for d in before_diags
        )
        parts.append(f"<h4>Before diagnostics</h4><ul>{items or '<li>None recorded.</li>'}</ul>")
    indexes = {c["index"] for c in calls}
    for suggestion in data["suggestions"]:
        if suggestion["target"].get("index") in indexes and suggestion["view"] == view:
            parts.append(f"<p class=experiment>Experiment to try: {esc(suggestion['experiment'])}</p>")
    return "".join(parts)


def _panel(data: Mapping[str, Any], view: str, lazy: bool) -> str:
    view_map = data["maps"][view]
    initial = view_map["initial_node"]
    if lazy:
        return (
            f'<div class="metric-panel" data-view="{view}" data-initial-node="{initial}" data-lazy="true">'
            f'<p class="note lazy-note">{esc(LAZY_NOTE)}</p></div>'
        )
    maps, rails, rankings, tops = [], [], [], []
    for group in view_map["groups"]:
        nodes = {node["id"]: node for node in group["nodes"]}
        maps.append(
            f'<section class="map-group" aria-labelledby="title-{group["id"]}"><h4 id="title-{group["id"]}">'
            f"{esc(group['heading'])}</h4>"
            f'<div class="map-scroll">{draw_map(group, interactive=True, selected=group["default"])}'
            "</div></section>"
        )
        rails.append(_rail(group, nodes))
        rankings.append(_ranking(group, view, view_map["total"]))
        tops.append(type_table(group) + top_table(group))
    first = view_map["groups"][0]
    selected = next((n for n in first["nodes"] if n["id"] == initial), first["nodes"][0])
    rail_html = "".join(rails) or "<p>Every module with a value is drawn at its size.</p>"
    delta = ""
    if data["before"] is not None and view_map["comparison_delta"] is not None:
        delta = f" · change {esc(view_map['change_text'])}"
    return (
        f'<div class="metric-panel" data-view="{view}" data-initial-node="{initial}">'
        f'<div class="map-column"><h3 class="panel-title">{esc(view_map["label"])} by module</h3>'
        '<p class="note">This is the module hierarchy of executed calls, not a computational graph. Tile '
        "width is "
        "the known recorded value of a module and its descendants within one method group; hatched tiles "
        "are lower "
        "bounds and grey tiles are unknown or unscaled.</p>"
        f"<p>Authoritative model total: {badge(view_map['total'], with_exact=True)}{delta}</p>"
        '<div class="toolbar" role="toolbar" aria-label="Map controls">'
        '<button type="button" data-action="collapse" disabled>Collapse branch</button>'
        '<button type="button" data-action="zoom" disabled>Zoom into branch</button>'
        '<button type="button" data-action="up" disabled>Parent module</button>'
        '<button type="button" data-action="reset" disabled>Reset map</button></div>'
        f"{BAR_LEGEND if data['before'] is not None else ''}"
        f"{''.join(maps)}"
        '<div class="rail" aria-label="Modules the map cannot size"><h4>Rail: unknown, tiny and zero '
        "modules</h4>"
        f"{rail_html}</div>"
        f'<section class="top" aria-label="Largest calls">{"".join(tops)}</section>'
        '<details class="ranking"><summary>Rankings of complete '
        f"calls</summary>{''.join(rankings)}</details></div>"
        '<aside data-inspector="" aria-live="polite" '
        f'aria-label="Inspector">{inspector(data, view, first, selected)}'
        "</aside></div>"
    )


def render_explorer(
    report: Mapping[str, Any],
    before: Mapping[str, Any] | None,
    diff: Mapping[str, Any] | None,
    gate: Sequence[str],
    *,
    title: str,
    metric: str,
) -> str:
    """The whole explorer document for validated reports (render.md 3)."""
    data = build_data(report, before, diff, gate)
    script = explorer_script()
    lazy = len(report["layers"]) + len((before or {"layers": []})["layers"]) > LAZY_LAYER_LIMIT
    totals = report["totals"]
    radios = "".join(
        f'<input type="radio" name="view" id="view-{view}" '
        f'value="{view}"{" checked" if view == metric else ""}>'
        f'<label for="view-{view}">{esc(data["maps"][view]["label"])}</label>'
        for view in VIEWS
    )
    panels = "".join(_panel(data, view, lazy and view != metric) for view in VIEWS)
    changes = diff["totals"] if diff is not None else {}
    cards = (
        _card(
            "Module-formula FLOPs",
            totals.get("module_flops"),
            "Sum of per-module formulas.",
            changes.get("module_flops"),
        )
        + _card(
            "Unique parameters",
            totals.get("parameters"),
            "Every registered tensor counted once.",
            changes.get("parameters"),
        )
        + _card(
            "Operator-dispatch FLOPs",
            totals.get("operator_flops"),
            "Counted from dispatched operators: a separate method, never added to module FLOPs.",
            changes.get("operator_flops"),
            method_note(report),
        )
    )
    model_type = report["context"].get("model_type", "unknown model type")
    notes = "".join(f'<p class="comparison-note">{esc(note)}</p>' for note in data["comparison_notes"])
    node_ids = {node["path"]: node["id"] for node in data["maps"]["parameters"]["groups"][0]["nodes"]}
    notes += diagnostic_groups_section(report, node_ids)
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{content_security_policy(script)}">'
        f"<title>{esc(title)}</title><style>{asset('explorer.css')}</style></head><body>"
        '<a class="skip" href="#main">Skip to the explorer</a>'
        f'<main id="main"><header><h1>{esc(title)}</h1><p class="model">Model: {esc(model_type)}</p></header>'
        f"{_context_line(report)}"
        f'<section class="cards" aria-label="Model totals">{cards}</section>'
        f"{notes}"
        '<fieldset class="views"><legend>Metric view</legend>'
        f"{radios}{SEARCH}{panels}</fieldset>"
        f"{roofline_section(report)}"  # only with context.hardware (training-and-hardware.md 3)
        f"{appendix(data, report, before)}"
        f'<script id="torchscan-data" type="application/json">{script_json(encode(data))}</script></main>'
        f"<script>{script}</script></body></html>\n"
    )
