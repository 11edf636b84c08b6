"""The icicle geometry of one explorer map (render.md 2): spans, positions and widths, no recursion."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any


def icicle_layout(
    preorder: Sequence[str], children: Mapping[str, Sequence[str]], nodes: dict[str, dict[str, Any]]
) -> None:
    """Place every node of one map (render.md 2, Geometry): ``x``/``width`` fractions of the root span.

    A node's span is its own weight (the larger known direct value, before or after) plus its
    children's spans; a root span of 0 switches the map to ``structure`` scale (leaves and nodes with
    an own value weigh 1). Writes ``x``, ``width``, ``direct_x``, ``direct_width`` and the working keys
    ``_weight``, ``_span``, ``_scale`` (the caller pops them) and the root's ``layout_total``.
    """

    def own_weight(node: dict[str, Any]) -> float:
        before = (node["before_direct"] or {}).get("known_value") or 0
        return max(node["direct_known"], before)

    weights = {path: own_weight(nodes[path]) for path in preorder}
    # Every weight fits a float (validated), but their sum may not: then lay out float weights
    # scaled by 1/n, whose sum cannot overflow, instead of raising OverflowError or drawing NaN.
    factor: float = 1
    if not sum(float(weight) for weight in weights.values()) <= sys.float_info.max / 2:
        factor = 1 / len(weights)
        weights = {path: float(weight) * factor for path, weight in weights.items()}
    for path in reversed(preorder):
        node = nodes[path]
        node["_weight"] = weights[path]
        node["_span"] = node["_weight"] + sum(nodes[c]["_span"] for c in children[path])
    scale = "known"
    if nodes[""]["_span"] == 0:
        scale = "structure"
        for path in reversed(preorder):
            node = nodes[path]
            has_own = node["direct"] is not None or node["before_direct"] is not None
            node["_weight"] = 1 if (not children[path] or has_own) else 0
            node["_span"] = node["_weight"] + sum(nodes[c]["_span"] for c in children[path])
    total = nodes[""]["_span"] or 1
    nodes[""]["layout_total"] = nodes[""]["_span"] if factor == 1 else min(total / factor, sys.float_info.max)

    # Pre-order placement without recursion, so very deep hierarchies cannot exhaust the stack.
    starts = {"": 0.0}
    for path in preorder:
        node = nodes[path]
        start = starts[path]
        node["_scale"] = scale
        # Twelve significant digits: far finer than a pixel, and 40 % shorter in the embedded data.
        node["x"] = _short(start / total)
        node["width"] = _short(node["_span"] / total)
        node["direct_x"] = node["x"]
        node["direct_width"] = _short(node["_weight"] / total)
        cursor = start + node["_weight"]
        for child in children[path]:
            starts[child] = cursor
            cursor += nodes[child]["_span"]


def _short(fraction: float) -> float:
    return float(f"{fraction:.12g}")
