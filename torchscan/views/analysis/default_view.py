"""Which view the explorer opens on: the most complete compute view of the report (issue 15).

A transformer whose modules lack formulas has a mostly hatched Module FLOPs map but complete
operator counts per call; opening on the view with the fewest gaps shows where the cost is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from torchscan.views.analysis.geometry import COMPUTE_VIEWS, VIEW_TOTALS, call_value, parent_of
from torchscan.views.analysis.row_values import is_called

STATUS_RANK = {"complete": 2, "partial": 1, "unavailable": 0}


def containers(paths: Iterable[str]) -> set[str]:
    """Every proper ancestor of ``paths``: a call with any descendant call is a container, also when
    the modules between them never ran (the root of ``blocks.0`` when ``blocks`` is a ModuleList)."""
    found: set[str] = set()
    for path in paths:
        parent = parent_of(path)
        while parent is not None and parent not in found:
            found.add(parent)
            parent = parent_of(parent)
    return found


def most_complete_view(report: Mapping[str, Any]) -> str:
    """The compute view whose evidence is most complete; the default of ``render_report``.

    Ranks the compute views by the status of their model total (complete, partial, unavailable),
    then by how few calls are incomplete: a call counts against a view when its own value is
    partial or unavailable, or when it is a leaf with no value at all (a container without a
    formula is structure, not a gap). Ties keep ``VIEWS`` order, so Module FLOPs win when both FLOPs
    views are equally complete. With no known compute value at all (structure mode), the
    attributed-parameters view. "Most complete" says nothing about accuracy.
    """
    layers = report["layers"]
    parents = containers(layer["path"] for layer in layers)
    best: tuple[tuple[int, float], str] | None = None
    known = False
    for view in COMPUTE_VIEWS:
        total = report["totals"].get(VIEW_TOTALS[view])
        rank = STATUS_RANK[total["status"]] if total else 0
        known = known or rank > 0
        gaps = 0
        for layer in layers:
            value, owner = call_value(layer, view)
            if owner is not None:
                continue
            if value is None:  # a module that never ran (views-3.md 1) is no gap of its own
                gaps += layer["path"] not in parents and is_called(layer)
            elif value["status"] != "complete":
                gaps += 1
        score = (rank, -gaps / len(layers) if layers else 0.0)
        if best is None or score > best[0]:
            best = (score, view)
    if best is None or not known:
        return "parameters"
    return best[1]
