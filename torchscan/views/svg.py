"""Static SVG snapshot of one metric view (render.md 4): searchable text, no script, no images.

It draws the same maps as the HTML explorer (identical tile geometry), plus total cards, rail cards,
an inspector for the default selection, the comparison summary, suggestions and the evidence block.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from torchscan.views.delta_words import short_text
from torchscan.views.evidence import build_data
from torchscan.views.geometry import VIEW_TOTALS
from torchscan.views.map_svg import BAR_KEY, CANVAS, draw_map, map_height
from torchscan.views.panel_data import card_change
from torchscan.views.text import delta_text, esc, missing_delta_text, path_label, svg_text

LINE = 18


class _Canvas:
    """Accumulates SVG fragments top to bottom."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.y = 10

    def text(
        self, text: str, *, x: int = 10, size: int = 13, weight: str = "normal", attrs: str = ""
    ) -> None:
        self.y += LINE
        self.parts.append(
            f'<text x="{x}" y="{self.y}" font-size="{size}" font-weight="{weight}"{attrs}>{esc(text)}</text>'
        )

    def raw(self, fragment: str, height: int) -> None:
        self.parts.append(fragment)
        self.y += height


def _layer_records(report: Mapping[str, Any] | None, path: str) -> list[Any]:
    if report is None:
        return []
    return [layer for layer in report["layers"] if layer["path"] == path]


def _titles(data: Mapping[str, Any], group: Mapping[str, Any]) -> dict[str, str]:
    titles = {}
    for node in group["nodes"]:
        text = " Call evidence: " + json.dumps(
            _layer_records(data["report"], node["path"]), ensure_ascii=False, sort_keys=True
        )
        if data["before"] is not None:
            text += " Before call evidence: " + json.dumps(
                _layer_records(data["before"], node["path"]), ensure_ascii=False, sort_keys=True
            )
        titles[node["id"]] = text
    return titles


def _inspector(canvas: _Canvas, data: Mapping[str, Any], group: Mapping[str, Any], node_id: str) -> None:
    node = next(n for n in group["nodes"] if n["id"] == node_id)
    start = len(canvas.parts)
    canvas.text(f"Inspector: {path_label(node['path'])} ({node['type'] or 'structural'})", weight="bold")
    canvas.text(f"Derived subtree subtotal: {svg_text(node['subtotal'])}")
    canvas.text(f"Own value: {svg_text(node['direct']) if node['direct'] else 'no direct estimate'}")
    if node["shapes"]:
        canvas.text(f"First call: {node['shapes']}")
    for call in node["calls"]:
        canvas.parts.append(f'<g id="call-{call["index"]}">')
        canvas.text(f"{call['label']}: {call['display']}", x=20)
        if "attribution" in call:
            canvas.text(call["attribution"], x=30)
        canvas.text(call["shapes"], x=30)
        canvas.parts.append("</g>")
    canvas.text(f"Method: {group['method']} · scope {group['scope']} · unit {group['unit']}")
    for entry in data["diagnostics"]:
        if entry.get("path") == node["path"]:
            canvas.text(f"Diagnostic {entry['code']}: {entry['message']}", x=20)
    if data["before"] is not None:
        canvas.text(f"Before: {node['before_display']} · Delta: {node['delta_display']}")
    canvas.parts.insert(start, f'<g id="inspector-{group["id"]}-{node_id}">')
    canvas.parts.append("</g>")


def render_svg(
    report: Mapping[str, Any],
    before: Mapping[str, Any] | None,
    diff: Mapping[str, Any] | None,
    gate: Sequence[str],
    *,
    title: str,
    metric: str,
) -> str:
    """The standalone SVG document for validated reports."""
    data = build_data(report, before, diff, gate)
    view_map = data["maps"][metric]
    canvas = _Canvas()
    canvas.text(title, size=18, weight="bold")
    canvas.text(f"Model: {report['context'].get('model_type', 'unknown')} · view: {view_map['label']}")
    total = view_map["total"]
    canvas.text(f"{view_map['label']} model total: {svg_text(total)}", weight="bold")
    canvas.text(f"Unique parameters: {svg_text(report['totals'].get('parameters'))}")
    canvas.text(
        f"Operator-dispatch FLOPs (inclusive count, never summed over modules): "
        f"{svg_text(report['totals'].get('operator_flops'))}"
    )
    canvas.text("This is the module hierarchy of executed calls, not a computational graph.")
    if diff is not None:  # the paired bars' key (issue 23), as in the explorer
        y = canvas.y + 8
        canvas.raw(
            f'<g id="bar-legend"><rect x="10" y="{y}" width="28" height="7" class="bar-before" '
            f'fill="#6b6b6b"/><text x="44" y="{y + 8}" font-size="12">before (baseline)</text>'
            f'<rect x="160" y="{y}" width="28" height="7" class="bar-after" fill="#111111"/>'
            f'<text x="194" y="{y + 8}" font-size="12">after · {esc(BAR_KEY)}</text></g>',
            LINE,
        )
    selected_done = False
    for group in view_map["groups"]:
        canvas.y += 8
        heading = f"{group['label']} · known total {svg_text(group['nodes'][0]['subtotal'])}"
        if group["scale"] == "structure":
            heading += " · structure map: unscaled, widths show shape only"
        canvas.parts.append(f'<g id="panel-{group["id"]}"><title>{esc(heading)}</title>')
        canvas.text(heading, weight="bold")
        fragment = draw_map(group, interactive=False, selected=group["default"], titles=_titles(data, group))
        fragment = fragment.replace("<svg ", f'<svg x="0" y="{canvas.y + 6}" ', 1)
        canvas.raw(fragment, map_height(group) + 10)
        nodes = {n["id"]: n for n in group["nodes"]}
        for position, card in enumerate(group["rails"]):
            node = nodes[card["node"]]
            column, row = position % 4, position // 4
            x, y = 10 + column * 222, canvas.y + 6 + row * 48
            canvas.parts.append(
                f'<a id="rail-{group["id"]}-{node["id"]}" tabindex="0" '
                f'href="#rail-{group["id"]}-{node["id"]}">'
                f'<rect x="{x}" y="{y}" width="214" height="42" fill="#f2f2f2" stroke="#555"'
                f"{' stroke-dasharray=' + chr(34) + '4 2' + chr(34) if card['kind'] == 'unknown' else ''}/>"
                f'<text x="{x + 6}" y="{y + 16}" font-size="12">{esc(path_label(node["path"]))} · '
                f"{card['kind']}</text>"
                f'<text x="{x + 6}" y="{y + 33}" font-size="11">'
                f"{esc(short_text(node['direct'] or node['subtotal']))} · not sized by cost</text></a>"
            )
        if group["rails"]:
            canvas.y += 6 + ((len(group["rails"]) + 3) // 4) * 48
        canvas.parts.append("</g>")
        if not selected_done and group["known_total"] > 0:
            _inspector(canvas, data, group, group["default"])
            selected_done = True
    if not selected_done and view_map["groups"]:
        _inspector(canvas, data, view_map["groups"][0], view_map["groups"][0]["default"])
    if diff is not None:
        canvas.y += 8
        canvas.text("Before / after comparison", weight="bold")
        if gate:
            canvas.text(f"Compute deltas withheld, not comparable: {'; '.join(gate)}")
        for note in data["comparison_notes"]:
            canvas.text(note)
        entry = diff["totals"].get(VIEW_TOTALS[metric])
        if entry is not None:
            unit = (entry.get("after") or entry.get("before") or {}).get("unit", "")
            change = entry.get("withheld") or (
                delta_text(entry["delta"], unit) if entry["delta"] is not None else missing_delta_text(entry)
            )
            canvas.text(card_change(entry), weight="bold")
            canvas.text(
                f"Before {svg_text(entry.get('before'))} · after {svg_text(entry.get('after'))} · change "
                f"{change}"
            )
        for key, heading in (
            ("added", "Added calls"),
            ("removed", "Removed calls"),
            ("changed", "Changed calls"),
        ):
            canvas.text(f"{heading} ({len(diff['layers'][key])})")
        for entry in data["before_diagnostics"]:
            canvas.parts.append(f'<g id="before-diagnostic-{entry["index"]}">')
            canvas.text(f"Before diagnostic {entry['code']}: {entry['message']}", x=20)
            canvas.parts.append("</g>")
    if data["suggestions"]:
        canvas.y += 8
        canvas.text("Suggestions (recorded fact, experiment to try)", weight="bold")
        for suggestion in data["suggestions"]:
            target = suggestion["href"].removeprefix("#")
            if target.startswith("diagnostic-") or f'id="{target}"' not in "".join(canvas.parts):
                target = "svg-evidence"
            canvas.parts.append(f'<a href="#{target}" tabindex="0">')
            canvas.text(f"Recorded fact: {suggestion['fact']}", x=20, size=12)
            canvas.text(f"Experiment to try: {suggestion['experiment']}", x=20, size=12)
            canvas.parts.append("</a>")
    evidence = {
        "inputs": report["inputs"],
        "context": report["context"],
        "diagnostics": report["diagnostics"],
        "operator_diagnostics": report["operator_flops"]["diagnostics"],
        "before": None
        if before is None
        else {
            "inputs": before["inputs"],
            "context": before["context"],
            "diagnostics": data["before_diagnostics"],
        },
    }
    canvas.y += 8
    canvas.parts.append(
        f'<g id="svg-evidence"><title>{esc(json.dumps(evidence, ensure_ascii=False, sort_keys=True))}</title>'
    )
    canvas.text("Inputs and context", weight="bold")
    context = report["context"]
    for key in sorted(context):
        canvas.text(f"{key}: {json.dumps(context[key], ensure_ascii=False)}", x=20, size=12)
    canvas.text(f"Diagnostics: {len(data['diagnostics'])} (see this block's tooltip for the full list)", x=20)
    canvas.parts.append("</g>")
    height = canvas.y + 20
    description = (
        f"TorchScan snapshot of {view_map['label']}: {svg_text(total)}. Unknown values are never drawn as "
        "zero; "
        "hatched tiles are lower bounds."
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-labelledby="svg-title svg-description" '
        f'width="{CANVAS}" height="{height}" viewBox="0 0 {CANVAS} {height}" '
        'font-family="system-ui, sans-serif">'
        f'<title id="svg-title">{esc(title)}</title><desc id="svg-description">{esc(description)}</desc>'
        f'<rect width="{CANVAS}" height="{height}" fill="#ffffff"/>{"".join(canvas.parts)}</svg>\n'
    )
