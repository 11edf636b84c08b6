"""Static SVG snapshot of one metric view (render.md 4): searchable text, no script, no images.

It draws the same maps as the HTML explorer (identical tile geometry), plus total cards, rail cards,
an inspector for the default selection, the comparison summary, suggestions and the evidence block.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from torchscan.views.analysis.evidence import build_data, input_line
from torchscan.views.analysis.geometry import VIEW_TOTALS
from torchscan.views.analysis.map_svg import BAR_KEY, CANVAS, draw_map, map_height
from torchscan.views.analysis.panel_data import RAIL_WORDS, card_change
from torchscan.views.common.diagnostic_groups import informational_line, metric_label, summarize_diagnostics
from torchscan.views.common.diagnostic_html import diagnostics_heading
from torchscan.views.common.number_style import status_measure
from torchscan.views.common.page_parts import context_value
from torchscan.views.common.text import delta_text, esc, missing_delta_text, path_label

LINE = 18
MARGIN = 10
# Average glyph width of system-ui as a fraction of the font size, rounded up: text is wrapped to
# this estimate so no line runs past the canvas (views-3.md 5: the snapshot is never clipped).
GLYPH = 0.62
RAIL_WIDTH, RAIL_COLUMNS, RAIL_FONT = 214, 4, 11


def columns(x: float, size: int, width: float = CANVAS - MARGIN) -> int:
    """How many characters of ``size`` px text fit between ``x`` and ``width``."""
    return max(int((width - x) / (GLYPH * size)), 8)


def wrap(text: str, chars: int) -> list[str]:
    """``text`` in lines of at most ``chars`` characters (long words are split), never empty."""
    return textwrap.wrap(text, chars, break_long_words=True, break_on_hyphens=False) or [""]


class _Canvas:
    """Accumulates SVG fragments top to bottom; every text line fits the canvas width."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.y = 10

    def text(self, text: str, *, x: int = MARGIN, size: int = 13, weight: str = "normal") -> None:
        """One paragraph, wrapped to the canvas width (each line a ``<text>``, searchable)."""
        for line in wrap(text, columns(x, size)):
            self.y += LINE if size >= 13 else LINE - 2
            self.parts.append(
                f'<text x="{x}" y="{self.y}" font-size="{size}" font-weight="{weight}">{esc(line)}</text>'
            )

    def raw(self, fragment: str, height: int) -> None:
        self.parts.append(fragment)
        self.y += height


def _inspector(canvas: _Canvas, data: Mapping[str, Any], group: Mapping[str, Any], node_id: str) -> None:
    node = next(n for n in group["nodes"] if n["id"] == node_id)
    start = len(canvas.parts)
    canvas.text(f"Inspector: {path_label(node['path'])} ({node['type'] or 'structural'})", weight="bold")
    canvas.text(f"Derived subtree subtotal: {status_measure(node['subtotal'])}")
    canvas.text(f"Own value: {status_measure(node['direct']) if node['direct'] else 'no direct estimate'}")
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


def _rail_cards(canvas: _Canvas, group: Mapping[str, Any]) -> None:
    """Equal-size rail cards, four per row; their words wrap inside the card, which grows to hold them."""
    nodes = {n["id"]: n for n in group["nodes"]}
    chars = columns(0, RAIL_FONT, RAIL_WIDTH - 12)
    cards = []
    for card in group["rails"]:
        node = nodes[card["node"]]
        lines = wrap(f"{path_label(node['path'])} · {RAIL_WORDS[card['kind']]}", chars)
        lines += wrap(f"{card['text']} · not sized by cost", chars)
        cards.append((node, card, lines))
    height = 10 + max((len(lines) for _, _, lines in cards), default=0) * 15
    for position, (node, card, lines) in enumerate(cards):
        column, row = position % RAIL_COLUMNS, position // RAIL_COLUMNS
        x, y = MARGIN + column * (RAIL_WIDTH + 8), canvas.y + 6 + row * (height + 6)
        dash = ' stroke-dasharray="4 2"' if card["kind"] == "unknown" else ""
        texts = "".join(
            f'<text x="{x + 6}" y="{y + 15 + k * 15}" font-size="{RAIL_FONT}">{esc(line)}</text>'
            for k, line in enumerate(lines)
        )
        canvas.parts.append(
            f'<a id="rail-{group["id"]}-{node["id"]}" tabindex="0" href="#rail-{group["id"]}-{node["id"]}">'
            f'<rect x="{x}" y="{y}" width="{RAIL_WIDTH}" height="{height}" fill="#f2f2f2" '
            f'stroke="#555"{dash}/>'
            f"{texts}</a>"
        )
    if cards:
        canvas.y += 6 + ((len(cards) + RAIL_COLUMNS - 1) // RAIL_COLUMNS) * (height + 6)


def _evidence(canvas: _Canvas, report: Mapping[str, Any], before: Mapping[str, Any] | None) -> None:
    """Inputs, context and the diagnostics count as text: the same count and words as the HTML page."""
    canvas.y += 8
    canvas.parts.append('<g id="svg-evidence">')
    canvas.text("Inputs and context", weight="bold")
    for name, source in (("", report), ("Before ", before)):
        if source is None:
            continue
        canvas.text(
            f"{name}inputs ({source['inputs'].get('source', 'unknown')}): {input_line(source)}", x=20, size=12
        )
        for key in sorted(source["context"]):
            canvas.text(f"{name}{key}: {context_value(source['context'][key])}", x=20, size=12)
    summary = summarize_diagnostics(report)
    canvas.text(diagnostics_heading(summary), x=20, weight="bold")
    for group in summary["groups"]:
        subject = f" · {group['subject']}" if group["subject"] else ""
        where = (
            f" · e.g. {', '.join(path_label(p) for p in group['example_paths'])}"
            if group["example_paths"]
            else ""
        )
        action = f" · resolve with {group['action']}" if group["action"] else ""
        count = f"{group['count']} diagnostic(s)"
        canvas.text(
            f"{group['code']}{subject} · {metric_label(group)} · {count}{where}{action}", x=30, size=12
        )
    line = informational_line(summary, "summary(..., receptive_field=True) or --receptive-field shows them")
    if line:
        canvas.text(line, x=30, size=12)
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
    """The standalone SVG document for validated reports.

    Tooltips repeat only what is drawn (a tile's description); every line is wrapped to the canvas
    and the canvas grows down with its content, so nothing is clipped (views-3.md 5).
    """
    data = build_data(report, before, diff, gate)
    view_map = data["maps"][metric]
    canvas = _Canvas()
    canvas.text(title, size=18, weight="bold")
    canvas.text(f"Model: {report['context'].get('model_type', 'unknown')} · view: {view_map['label']}")
    total = view_map["total"]
    canvas.text(f"{view_map['label']} model total: {status_measure(total)}", weight="bold")
    canvas.text(f"Unique parameters: {status_measure(report['totals'].get('parameters'))}")
    canvas.text(
        f"Operator-dispatch FLOPs (inclusive count, never summed over modules): "
        f"{status_measure(report['totals'].get('operator_flops'))}"
    )
    canvas.text("This is the module hierarchy of executed calls, not a computational graph.")
    if diff is not None:  # the paired bars' key (issue 23), as in the explorer
        y = canvas.y + 8
        canvas.raw(
            f'<g id="bar-legend"><rect x="10" y="{y}" width="28" height="7" class="bar-before" '
            f'fill="#6b6b6b"/><text x="44" y="{y + 8}" font-size="12">before (baseline)</text>'
            f'<rect x="160" y="{y}" width="28" height="7" class="bar-after" fill="#111111"/>'
            f'<text x="194" y="{y + 8}" font-size="12">after</text></g>',
            LINE - 8,
        )
        canvas.text(BAR_KEY, size=12)
    selected_done = False
    for group in view_map["groups"]:
        canvas.y += 8
        heading = f"{group['label']} · known total {status_measure(group['nodes'][0]['subtotal'])}"
        if group["scale"] == "structure":
            heading += " · structure map: unscaled, widths show shape only"
        canvas.parts.append(f'<g id="panel-{group["id"]}">')
        canvas.text(heading, weight="bold")
        fragment = draw_map(group, interactive=False, selected=group["default"])
        fragment = fragment.replace("<svg ", f'<svg x="0" y="{canvas.y + 6}" ', 1)
        canvas.raw(fragment, map_height(group) + 10)
        _rail_cards(canvas, group)
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
                f"Before {status_measure(entry.get('before'))} · after "
                f"{status_measure(entry.get('after'))} · change {change}"
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
    _evidence(canvas, report, before)
    height = canvas.y + 20
    description = (
        f"TorchScan snapshot of {view_map['label']}: {status_measure(total)}. Unknown values are never "
        "drawn as zero; hatched tiles are lower bounds."
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-labelledby="svg-title svg-description" '
        f'width="{CANVAS}" height="{height}" viewBox="0 0 {CANVAS} {height}" '
        'font-family="system-ui, sans-serif">'
        f'<title id="svg-title">{esc(title)}</title><desc id="svg-description">{esc(description)}</desc>'
        f'<rect width="{CANVAS}" height="{height}" fill="#ffffff"/>{"".join(canvas.parts)}</svg>\n'
    )
