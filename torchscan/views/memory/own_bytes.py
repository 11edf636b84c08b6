"""Own bytes of each module call of a MemoryReport: its figures minus those of the calls nested in it.

A MemoryReport's ``by_module`` figures are inclusive (a call's ``allocated`` and
``activations_saved`` include its nested calls'), so ranking them puts every container above its
children. A view that ranks or stacks calls needs each call's *own* bytes. The report lists calls in
the order they started; a call is nested in the latest earlier call whose path is an ancestor of its
own path (``layer1`` holds ``layer1.0.conv1``; the root ``""`` holds every other path). Own bytes are
the call's inclusive bytes minus its nested calls'.

Truth rules: own bytes are complete only when the call and every nested call are complete; a
partial call with complete nested calls gives a lower bound; anything else is unknown. If the
inclusive figures do not nest (a nested sum above its parent: a module called from outside its
parent's ``forward``, which the report cannot show), the call's own bytes are unknown, never a
negative or guessed number. Reads only the validated report; never imports torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

OWN_FIGURES = ("allocated", "activations_saved")


@dataclass(frozen=True)
class Own:
    """One call's own bytes of one figure: ``value`` (``None``: unknown), ``partial`` for a lower bound."""

    value: int | None
    partial: bool = False


def is_ancestor(parent: str, path: str) -> bool:
    """Whether module path ``parent`` holds ``path`` (the root ``""`` holds every other path)."""
    if parent == path:
        return False
    return parent == "" or path.startswith(parent + ".")


def call_parents(calls: Sequence[Mapping[str, Any]]) -> list[int]:
    """Index of the call each call is nested in (``-1`` for none), from start order and paths."""
    parents: list[int] = []
    open_calls: list[int] = []
    for index, call in enumerate(calls):
        while open_calls and not is_ancestor(calls[open_calls[-1]]["path"], call["path"]):
            open_calls.pop()
        parents.append(open_calls[-1] if open_calls else -1)
        open_calls.append(index)
    return parents


def own_bytes(calls: Sequence[Mapping[str, Any]], figure: str) -> list[Own]:
    """Own bytes of ``figure`` (``allocated`` or ``activations_saved``) for every call, in order."""
    parents = call_parents(calls)
    children: list[list[int]] = [[] for _ in calls]
    for index, parent in enumerate(parents):
        if parent >= 0:
            children[parent].append(index)
    out: list[Own] = []
    for index, call in enumerate(calls):
        result = call[figure]
        nested = [calls[child][figure] for child in children[index]]
        if result["known_value"] is None or any(r["status"] != "complete" for r in nested):
            out.append(Own(None))
            continue
        value = result["known_value"] - sum(r["value"] for r in nested)
        if value < 0:  # the figures do not nest by path: unknown, never negative
            out.append(Own(None))
            continue
        out.append(Own(value, partial=result["status"] == "partial"))
    return out


def ranked_by_own(calls: Sequence[Mapping[str, Any]], figure: str, limit: int) -> tuple[list[int], list[int]]:
    """Indices of the calls with known own bytes, largest first (ties in call order), cut to ``limit``,
    and the indices whose own bytes are unknown (never ranked: unknown is not small)."""
    own = own_bytes(calls, figure)
    known = [i for i, entry in enumerate(own) if entry.value is not None]
    known.sort(key=lambda i: (-(own[i].value or 0), i))
    return known[:limit], [i for i, entry in enumerate(own) if entry.value is None]
