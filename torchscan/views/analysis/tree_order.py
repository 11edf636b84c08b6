"""Order of the module tree in every view (issue 23): forward (call) order, numeric-aware ties.

Paths are dotted module names (``""`` is the root). Siblings are shown in the order their branches
first ran; node ids keep the numeric-aware path order so they stay stable whatever ran first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def parent_of(path: str) -> str | None:
    """Dotted parent path (``""`` is the root's path; the root has no parent)."""
    if path == "":
        return None
    return path.rsplit(".", 1)[0] if "." in path else ""


def path_order(path: str) -> tuple[tuple[int, int, str], ...]:
    """Numeric-aware sort key: siblings ``0, 1, 2, …, 10`` in number order, names by code point.

    Components compare one by one, so an ancestor precedes its descendants and the sorted order is
    a pre-order walk; an all-ASCII-digit component sorts by value before any name.
    """
    if path == "":
        return ()
    return tuple(
        (0, int(part), part) if part.isascii() and part.isdigit() else (1, 0, part)
        for part in path.split(".")
    )


def all_paths(reports: Iterable[Mapping[str, Any] | None]) -> list[str]:
    """Every layer path and all dotted ancestors, plus the root, in numeric-aware order."""
    paths = {""}
    for report in reports:
        if report is None:
            continue
        for layer in report["layers"]:
            path: str | None = layer["path"]
            while path is not None and path not in paths:
                paths.add(path)
                path = parent_of(path)
    return sorted(paths, key=path_order)


def first_calls(report: Mapping[str, Any] | None) -> dict[str, int]:
    """Each path's forward position: the smallest layer index in its subtree (itself or a descendant).

    Layers are recorded in call order, and a subtree's first call is where the branch begins in the
    forward pass, whether a report lists a parent before or after its children.
    """
    first: dict[str, int] = {}
    for index, layer in enumerate(report["layers"] if report is not None else ()):
        path: str | None = layer["path"]
        while path is not None and path not in first:
            first[path] = index
            path = parent_of(path)
    return first


def call_ordered(siblings: Sequence[str], after: Mapping[str, int], before: Mapping[str, int]) -> list[str]:
    """Siblings in forward (call) order (issue 23): the after report's order, baseline-only paths merged.

    A path only in the baseline (a removed branch) goes right after the sibling that preceded it in
    the baseline's forward order, so ``layer.5`` is followed by the removed ``layer.6 … layer.11``.
    Numeric-aware path order breaks the (impossible for distinct layers) ties and orders paths that
    neither report ordered.
    """
    ordered = sorted((p for p in siblings if p in after), key=lambda p: (after[p], path_order(p)))
    missing = sorted(
        (p for p in siblings if p not in after), key=lambda p: (before.get(p, -1), path_order(p))
    )
    by_before = sorted((p for p in siblings if p in before), key=lambda p: (before[p], path_order(p)))
    for path in missing:
        position = 0
        if path in before:
            earlier = by_before[: by_before.index(path)]
            placed = [p for p in earlier if p in ordered]
            if placed:
                position = ordered.index(placed[-1]) + 1
        ordered.insert(position, path)
    return ordered


__all__ = ["all_paths", "call_ordered", "first_calls", "parent_of", "path_order"]
