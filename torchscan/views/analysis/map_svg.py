"""Icicle drawing of one metric group, identical in the HTML explorer and the SVG snapshot.

Rows are module depths; a tile's width is its share of the group's known total (or shape only on
a structure-scale map). Drawing constants follow render.md 2 so every ``rect[data-tile]`` has the
same coordinates in both formats. Colour never carries meaning alone: partial tiles are hatched
and every tile names its status in words.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscan.views.analysis.geometry import NO_CONTRIBUTION
from torchscan.views.analysis.tile_text import candidates, fit_label, fit_value, value_text
from torchscan.views.common.text import esc, long_text, neutral
from torchscan.views.comparison.delta_words import short_delta

CANVAS = 900
INNER = 892
LEFT = 4
ROW = 58
ROW_COMPARING = 76
BAR_HEIGHT = 7
PALETTE = ("#2f6db5", "#3f86c9", "#5b9bd5", "#7fb1e0", "#9fc4e8", "#bcd6ef")
NEUTRAL = "#c8c8c8"
NO_VALUE_WORDS = "no recorded value"
BAR_KEY = (
    "both bars of every tile share one scale per map; Δ is the branch subtotal after minus before "
    "(a removed branch is -before, an added one +after)"
)


def row_height(group: Mapping[str, Any]) -> int:
    """58 px per depth row, 76 when comparing (room for paired bars)."""
    return ROW_COMPARING if group["comparison"] else ROW


def map_height(group: Mapping[str, Any]) -> int:
    """Canvas height for the group's deepest row."""
    return LEFT + (group["max_depth"] + 1) * row_height(group)


def tile_box(group: Mapping[str, Any], x: float, width: float, depth: int) -> tuple[str, str, str, str]:
    """``(x, y, width, height)`` strings with three decimals (render.md 2, Geometry)."""
    row = row_height(group)
    pixels = width * INNER
    gap = min(1.5, pixels / 5)
    return (
        f"{LEFT + x * INNER:.3f}",
        f"{LEFT + depth * row:.3f}",
        f"{max(pixels - gap, 0):.3f}",
        f"{row - 6:.3f}",
    )


def node_label(node: Mapping[str, Any]) -> str:
    """Short tile label: last path component, ``×N calls`` for repeats, added/removed marker."""
    label = node["label"]
    count = max(len(node["calls"]), len(node["before_calls"]))
    if count > 1 and not node.get("not_called"):
        label += f" ×{count} calls"
    if node["change"] != "matched":
        label += f" · {node['change']}"
    return label


def calls_text(node: Mapping[str, Any], calls: int) -> str:
    """``3 calls``, or ``not called`` for a module that never ran (views-3.md 1)."""
    if node.get("not_called"):
        return "not called (the module never ran as a module call)"
    return f"{calls} call{'s' if calls != 1 else ''}"


def is_neutral(group: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """Structure-scale tiles and tiles without any known value are neutral grey."""
    return group["scale"] == "structure" or not (node["known"] or node["before_known"])


def describe(group: Mapping[str, Any], node: Mapping[str, Any], types: str = "") -> str:
    """The tile's accessible description (render.md 3.2): never raw call JSON."""
    calls = max(len(node["calls"]), len(node["before_calls"]))
    parts = [
        f"{'(root)' if node['path'] == '' else neutral(node['path'])}, "
        f"{neutral(node['type'] or 'structural')}"
    ]
    parts.append(calls_text(node, calls) + ".")
    if group["scale"] == "structure":
        parts.append("structural · unscaled: width shows shape only, not cost.")
    parts.append(f"Derived subtree subtotal: {node['display']}.")
    if node["covered"]:
        parts.append("Own calls are covered by an ancestor's inclusive estimate.")
    elif node["direct"] is None:
        parts.append("Own value: no direct estimate.")
    else:
        parts.append(f"Own value: {long_text(node['direct'])}.")
    parts.append(f"Method: {neutral(group['method'])}. Scope: {neutral(group['scope'])}.")
    if group["comparison"]:
        parts.append(f"Before: {node['before_display']}.")
        if node["delta"] is not None:
            parts.append(f"Complete comparable delta: {node['delta_display'].removeprefix('complete · ')}.")
        elif node["delta_reason"] == NO_CONTRIBUTION:
            parts.append(f"No delta: {NO_VALUE_WORDS} in this group on either side.")
        else:
            parts.append(f"Delta unknown: {node['delta_reason']}.")
        if node["change"] != "matched":
            parts.append(f"This module was {node['change']}.")
    return " ".join(parts)


def tile_delta(group: Mapping[str, Any], node: Mapping[str, Any]) -> str:
    """A tile's change line: ``Δ -11.20 GFLOPs (-50.0 %) · complete``, or why there is none.

    The delta is the branch's subtotal after minus before (a removed branch reads -before, an added
    one +after); "delta unknown" is left for a side that is not complete or not comparable.
    """
    if node["delta"] is not None:
        before = node["before_subtotal"]
        base = before["value"] if before is not None and before["status"] == "complete" else None
        return f"Δ {short_delta(node['delta'], group['unit'], base)} · complete"
    if node["delta_reason"] == NO_CONTRIBUTION:
        return NO_VALUE_WORDS
    return "delta unknown"


def delta_candidates(text: str) -> list[str]:
    """A tile's change line, then shorter forms: without ``· complete``, then without the share.

    explorer.js ``deltaCandidates`` applies the same rule when zooming.
    """
    shorter = text.removesuffix(" · complete")
    candidates = [text, shorter, shorter.split(" (")[0]]
    return list(dict.fromkeys(candidates))


def _fill(group: Mapping[str, Any], node: Mapping[str, Any]) -> str:
    return NEUTRAL if is_neutral(group, node) else PALETTE[min(node["depth"], len(PALETTE) - 1)]


def tile_drawing(group: Mapping[str, Any], node: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a tile draws, precomputed once so the page's script draws lazily with identical geometry.

    ``None`` when the node has no rectangle (zero width on a known-scale map: reached via the rail).
    Texts are already fitted to the tile (tile_text.py); ``full`` keeps the unfitted value and change
    lines so the script fits them again when zooming, with the same rule (only when a text was cut
    or shortened: otherwise a wider tile shows the same; the script words the label itself, as
    :func:`node_label`). Bars are pixel lengths on the group's common scale.
    """
    if node["width"] <= 0 and group["scale"] == "known":
        return None
    x, y, w, h = tile_box(group, node["x"], node["width"], node["depth"])
    pixels = float(w)
    fill = _fill(group, node)
    label = node_label(node)
    value = value_text(group["scale"], node, group["nodes"][0]["subtotal"])
    drawing: dict[str, Any] = {
        "box": [x, y, w, h],
        "fill": fill,
        "ink": "#ffffff" if fill in PALETTE[:3] else "#111111",
        "hatched": group["scale"] == "known" and node["status"] == "partial",
        "label": fit_label(label, pixels),
        "value": fit_value(candidates(value), pixels),
        "bars": None,
        "delta": "",
        "own": None,
        "full": [value, ""],
    }
    if group["comparison"]:
        scale = INNER / (group["layout_total"] or 1) if group["scale"] == "known" else 0.0
        drawing["bars"] = [
            f"{min(known * scale, pixels) if scale else 0.0:.3f}"
            for known in (node["before_known"], node["known"])
        ]
        delta = tile_delta(group, node)
        drawing["delta"] = fit_value(delta_candidates(delta), pixels)  # a change is never cut into a stump
        drawing["full"][1] = delta
    if node["children"] and node["direct_width"] > 0:
        drawing["own"] = list(tile_box(group, node["direct_x"], node["direct_width"], node["depth"] + 1))
    full = drawing["full"]
    if drawing["label"] == label and drawing["value"] == full[0] and drawing["delta"] == full[1]:
        del drawing["full"]  # every text fits whole, so a wider (zoomed) tile shows the same: not embedded
    elif not full[1]:
        drawing["full"] = full[0]  # no change line: the value line alone (shorter in the embedded data)
    return drawing


def attach_tiles(group: dict[str, Any]) -> None:
    """Store each node's ``tile`` drawing (render.md 3.9 node key ``tile``)."""
    for node in group["nodes"]:
        node["tile"] = tile_drawing(group, node)


def draw_map(
    group: Mapping[str, Any],
    *,
    interactive: bool,
    selected: str,
    titles: Mapping[str, str] | None = None,
) -> str:
    """One ``<svg class="module-map">`` for a group: tiles, own slots, hatched partial overlays.

    ``interactive`` tiles carry the explorer's data attributes and link to the hierarchy; static
    tiles (SVG snapshot) get ``static-`` ids and a ``<title>`` with the call evidence. The page's
    script draws the same markup from ``node["tile"]`` (explorer.js ``drawMap``); keep them in step.
    """
    gid = group["id"]
    hatch = f"hatch-{gid}"
    height = map_height(group)
    row = row_height(group)
    out = [
        f'<svg class="module-map" xmlns="http://www.w3.org/2000/svg" role="group" data-group-id="{gid}" '
        f'aria-label="{esc(group["label"])} module map" viewBox="0 0 {CANVAS} {height}" '
        f'width="{CANVAS}" height="{height}">',
        f'<defs><pattern id="{hatch}" width="8" height="8" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="8" height="8" fill="#ffffff" fill-opacity="0.25"/>'
        '<line x1="0" y1="0" x2="0" y2="8" stroke="#1a1a1a" stroke-width="3" stroke-opacity="0.55"/>'
        "</pattern></defs>",
    ]
    for node in group["nodes"]:
        tile = node["tile"] if "tile" in node else tile_drawing(group, node)
        if tile is None:
            continue
        x, y, w, h = tile["box"]
        nid = node["id"]
        description = describe(group, node)
        neutral_tile = "true" if is_neutral(group, node) else "false"
        current = ' aria-current="true"' if nid == selected else ""
        if interactive:
            expanded = ' aria-expanded="true"' if node["children"] else ""
            out.append(
                f'<a data-map-node="" data-node-id="{nid}" data-group-id="{gid}" '
                f'data-parent="{node["parent"] or ""}" '
                f'data-depth="{node["depth"]}" data-neutral="{neutral_tile}" tabindex="0" id="{gid}-{nid}" '
                f'href="#module-{nid}" aria-label="{esc(description)}"{current}{expanded}>'
                f"<title>{esc(short_title(node))}</title>"
            )
        else:
            evidence = (titles or {}).get(nid, "")
            out.append(
                f'<a id="static-{gid}-{nid}" tabindex="0" href="#static-{gid}-{nid}" '
                f'data-neutral="{neutral_tile}" '
                f'aria-label="{esc(description)}"{current}><title>{esc(description + evidence)}</title>'
            )
        fill = tile["fill"]
        out.append(
            f'<rect data-tile="" x="{x}" y="{y}" width="{w}" height="{h}" fill="{fill}" class="tile"/>'
        )
        if tile["hatched"]:
            out.append(
                f'<rect data-overlay="partial" x="{x}" y="{y}" width="{w}" height="{h}" '
                f'fill="url(#{hatch})"/>'
            )
        left = float(x) + 4
        colour = tile["ink"]
        if tile["label"]:
            out.append(
                f'<text x="{left:.3f}" y="{float(y) + 16:.3f}" fill="{colour}">{esc(tile["label"])}</text>'
            )
        if tile["value"]:
            out.append(
                f'<text x="{left:.3f}" y="{float(y) + 32:.3f}" fill="{colour}" class="v">'
                f"{esc(tile['value'])}</text>"
            )
        if tile["bars"] is not None:
            for index, (bar, length) in enumerate(zip(("before", "after"), tile["bars"], strict=True)):
                out.append(
                    f'<rect data-bar="{bar}" x="{float(x):.3f}" y="{float(y) + 38 + index * 9:.3f}" '
                    f'width="{length}" height="{BAR_HEIGHT}" class="bar-{bar}"/>'
                )
            if tile["delta"]:
                out.append(
                    f'<text x="{left:.3f}" y="{float(y) + row - 10:.3f}" fill="{colour}">'
                    f"{esc(tile['delta'])}</text>"
                )
        out.append("</a>")
        if tile["own"] is not None:
            ox, oy, ow, oh = tile["own"]
            out.append(
                f'<g data-own-node="{nid}" data-group-id="{gid}" class="own-slot"><rect x="{ox}" y="{oy}" '
                f'width="{ow}" '
                f'height="{oh}" fill="{fill}" fill-opacity="0.45" stroke="#555" stroke-dasharray="3 2"/>'
                + (
                    f'<text x="{float(ox) + 4:.3f}" y="{float(oy) + 16:.3f}">own</text>'
                    if float(ow) > 30
                    else ""
                )
                + "</g>"
            )
    out.append("</svg>")
    return "".join(out)


def short_title(node: Mapping[str, Any]) -> str:
    """Hover tooltip of an explorer tile: path and subtotal (the ``aria-label`` has the full text)."""
    return f"{'(root)' if node['path'] == '' else neutral(node['path'])}: {node['display']}"
