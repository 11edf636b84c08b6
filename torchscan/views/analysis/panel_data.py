"""Precomputed panel texts shared by the static explorer markup and the page's lazy renderer.

Every number the page shows in a map heading, rail card, ranking or top-N row is worded here once
(Python formatting), so a panel drawn by the script on first selection reads exactly like one
written into the document.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from torchscan.views.common.number_style import quantity, share, status_measure
from torchscan.views.common.page_parts import badge_parts
from torchscan.views.common.text import (
    delta_text,
    long_text,
    missing_delta_text,
    path_label,
)
from torchscan.views.comparison.delta_words import short_delta, short_measure, short_text

RAIL_WORDS = {"unknown": "not complete", "small": "too small to label", "zero": "complete zero"}
TOP_N = 15
RANKED = 10


def share_text(value: float, total: Mapping[str, Any] | None) -> str:
    """``12.3 %`` of a complete total; ``≤ 12.3 %`` of a partial one (its known part is a lower bound)."""
    if total is None or total["status"] == "unavailable" or not total["known_value"]:
        return "unknown"
    try:  # floats: a huge ratio is inf, not an error; a by-type sum may be an int beyond float range
        ratio = float(value) / float(total["known_value"])
    except OverflowError:
        return "beyond the float range"
    if not math.isfinite(ratio * 100):
        return "beyond the float range"
    text = share(ratio)
    return text if total["status"] == "complete" else f"≤ {text}"


def change_words(entry: Mapping[str, Any]) -> str:
    """A total's change after minus before: signed delta, withheld reason or why it is unknown."""
    if entry.get("withheld"):
        return f"unavailable · {entry['withheld']}"
    if entry.get("delta") is None:
        return missing_delta_text(entry)
    unit = (entry.get("after") or entry.get("before") or {}).get("unit", "")
    return delta_text(entry["delta"], unit)


def change_short(change: Mapping[str, Any]) -> str:
    """A total's change in page units with its relative size (``-11.20 GFLOPs (-50.0 %)``), or why none."""
    if change.get("withheld") or change.get("delta") is None:
        return change_words(change)
    before, after = change.get("before"), change.get("after")
    unit = (after or before or {}).get("unit", "")
    base = before["value"] if before is not None and before["status"] == "complete" else None
    return short_delta(change["delta"], unit, base)


def card_change(change: Mapping[str, Any]) -> str:
    """``Before 22.40 GFLOPs → after 11.20 GFLOPs · Δ -11.20 GFLOPs (-50.0 %)``: page units, relative change.

    The exact values stay in the appendix's comparison table; a withheld or unknown change says why.
    """
    before, after = change.get("before"), change.get("after")
    return f"Before {short_measure(before)} → after {short_measure(after)} · Δ {change_short(change)}"


RAIL_NOTE_END = "deliberately unscaled, not sized by cost"


def rail_note(node: Mapping[str, Any]) -> str:
    """Why a rail card's module is not drawn at its size; ``""`` for a complete value (the card's text
    says it, and the rail's summary says cards are unscaled)."""
    if node["direct"] is not None and node["direct"]["status"] == "partial":
        value = quantity(node["direct"]["known_value"], node["direct"]["unit"])
        return f"at least {value}, full value unknown · {RAIL_NOTE_END}"
    if node["direct"] is not None and node["direct"]["status"] == "unavailable":
        return f"unknown · {RAIL_NOTE_END}"
    return ""


def _complete_calls(group: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    order = {node["id"]: k for k, node in enumerate(group["nodes"])}
    rows = []
    for node in group["nodes"]:
        for call in node["calls"]:
            if call["in_group"] and call["result"]["status"] == "complete":
                # Ties rank in forward (call) order: layer.0, layer.1, …, layer.10, never as text.
                key = (-call["result"]["value"], call["index"], call["call_index"])
                rows.append((*key, order[node["id"]], call, node))
    rows.sort(key=lambda item: item[:3])
    return rows


def top_change(group: Mapping[str, Any], node: Mapping[str, Any], call: Mapping[str, Any]) -> dict[str, str]:
    """Before and Δ cells of a top-N row: the same call (path, call index) in the baseline."""
    match = [c for c in node["before_calls"] if c["call_index"] == call["call_index"] and c["in_group"]]
    after = call["result"]["value"]
    if node["change"] == "added" or not any(
        c["call_index"] == call["call_index"] for c in node["before_calls"]
    ):
        return {"before": "not called", "delta": f"{short_delta(after, group['unit'], None)} · added"}
    if not match:
        return {"before": "another method", "delta": "not comparable (measured under another method)"}
    before = match[0]["result"]
    if before["status"] != "complete":
        return {"before": short_measure(before), "delta": "delta unknown (baseline not complete)"}
    return {
        "before": short_measure(before),
        "delta": short_delta(after - before["value"], group["unit"], before["value"]),
    }


def _type_sums(group: Mapping[str, Any], field: str) -> dict[str, dict[str, Any]]:
    """Per module type: in-group calls, known sum, incomplete calls and first (forward) position."""
    types: dict[str, dict[str, Any]] = {}
    for position, node in enumerate(group["nodes"]):
        for call in node[field]:
            if not call["in_group"]:
                continue
            entry = types.setdefault(
                node["type"], {"calls": 0, "known": 0, "incomplete": 0, "first": position}
            )
            entry["calls"] += 1
            result = call["result"]
            if result["status"] != "complete":
                entry["incomplete"] += 1
            entry["known"] += result["known_value"] or 0
    return types


def _type_change(
    after: Mapping[str, Any] | None, before: Mapping[str, Any] | None, unit: str
) -> dict[str, str]:
    """Before and Δ cells of a by-type row; a type one side never called contributes an exact 0."""
    if before is None:
        before_text = "not called"
    elif before["incomplete"]:
        before_text = f"≥ {quantity(before['known'], unit)}"
    else:
        before_text = quantity(before["known"], unit)
    if (after or {}).get("incomplete") or (before or {}).get("incomplete"):
        return {"before": before_text, "delta": "delta unknown (a side is not complete)"}
    now, then = (after or {}).get("known", 0), (before or {}).get("known", 0)
    return {"before": before_text, "delta": short_delta(now - then, unit, then if before else None)}


def by_type(group: Mapping[str, Any], total: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """Own values summed per module type, largest first (issue 23): where a model's cost sits by kind.

    Like the table's folded rows, identical calls add up into one line with their count. Only calls
    in this group count; a type with an incomplete call reads as a lower bound (``≥``), and a type
    whose calls are all unknown is listed last as unknown, never as zero. When comparing, each row
    also gives the baseline's sum and the change, and types only the baseline called are listed.
    """
    types = _type_sums(group, "calls")
    before = _type_sums(group, "before_calls") if group["comparison"] else {}
    unit = group["unit"]
    empty = {"calls": 0, "known": 0, "incomplete": 0, "first": 0}
    rows = []
    order = sorted(
        set(types) | set(before),
        key=lambda t: (
            t not in types,
            types.get(t, empty)["incomplete"] == types.get(t, empty)["calls"],
            -types.get(t, empty)["known"],
            (types.get(t) or before[t])["first"],
        ),
    )
    for name in order:
        entry = types.get(name)
        if entry is None:
            text, share, calls = "not called", "—", 0
        elif entry["incomplete"] == entry["calls"] and not entry["known"]:
            text, share, calls = "unknown", "unknown", entry["calls"]
        else:
            known, calls = entry["known"], entry["calls"]
            value = quantity(known, unit)
            text = value if not entry["incomplete"] else f"≥ {value} · {entry['incomplete']} incomplete"
            share = share_text(known, total)
            if entry["incomplete"] and share.startswith("≤ "):
                share = "unknown"  # a lower bound over a lower bound bounds nothing
            elif entry["incomplete"] and share[:1].isdigit():
                share = "≥ " + share
        row: dict[str, Any] = {"type": name, "calls": calls, "text": text, "share": share}
        if group["comparison"]:
            row.update(_type_change(entry, before.get(name), unit))
        rows.append(row)
    return rows


def attach_panel_texts(view_map: dict[str, Any], comparing: bool) -> None:
    """Add ``heading``, ``rails[].text/note``, ``ranking``, ``top`` to groups; totals wording to the view."""
    total = view_map["total"]
    view_map["total_parts"] = list(badge_parts(total, with_exact=True))
    entry = view_map["comparison_delta"]
    view_map["change_text"] = change_short(entry) if comparing and entry is not None else None
    for group in view_map["groups"]:
        nodes = {node["id"]: node for node in group["nodes"]}
        scale = (
            " Structure scale: widths show shape only, not cost (nothing known to size)."
            if group["scale"] == "structure"
            else ""
        )
        group["heading"] = (
            f"{group['label']} · known total {status_measure(group['nodes'][0]['subtotal'])}{scale}"
        )
        for card in group["rails"]:
            node = nodes[card["node"]]
            tile = node.get("tile")
            if card["kind"] == "small" and tile is not None:
                # the tile's own value line, which the map had no room for (also its zoomed text)
                full = tile.get("full", tile["value"])
                card["text"] = full if isinstance(full, str) else full[0]
            else:
                card["text"] = short_text(node["direct"] or node["subtotal"])
            card["note"] = rail_note(node)
        rows = _complete_calls(group)
        largest = -rows[0][0] if rows else 0
        group["ranking"] = []
        for _, _, _, _, call, _ in rows[:RANKED]:
            fraction = call["result"]["value"] / largest if largest else 0
            group["ranking"].append(
                {"index": call["index"], "fraction": f"{fraction:.6f}", "percent": share(fraction)}
            )
        group["top"] = [
            {
                "index": call["index"],
                "order": position,
                "rank": rank,
                "call": f"{path_label(node['path'])} · call #{call['call_index']}",
                "type": node["type"],
                "value": call["result"]["value"],
                "text": short_text(call["result"]),
                "share": share_text(call["result"]["value"], total),
            }
            for rank, (_, _, _, position, call, node) in enumerate(rows[:TOP_N], start=1)
        ]
        if comparing:
            for row, (_, _, _, _, call, node) in zip(group["top"], rows[:TOP_N], strict=True):
                row.update(top_change(group, node, call))
        group["by_type"] = by_type(group, total)
        group["complete_calls"] = len(rows)
        for node in group["nodes"]:
            node["direct_display"] = long_text(node["direct"]) if node["direct"] is not None else None
