"""Added and removed layer calls of ``torchscan compare`` as subtree roots (issue 23 item 3, CLI part).

A ReportDiff lists every added or removed call, so cutting BERT from 12 layers to 6 lists 102
removed calls. People think in blocks: here each removed (added) call whose parent call was not
removed (added) too is a *root*, printed once with its module type, the number of removed (added)
calls below it and their parameters; the calls below it are not listed again. Reads the two
reports and their diff only (no torch).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from torchscan.views.common.diagnostic_groups import escape_control


def _key(entry: Mapping[str, Any]) -> tuple[str, int]:
    return entry["path"], entry["call_index"]


def _below(path: str, root: str) -> bool:
    return root == "" or path.startswith(root + ".")


def subtree_roots(entries: Sequence[Mapping[str, Any]]) -> list[tuple[Mapping[str, Any], int]]:
    """``(root entry, number of entries below it)``, in the diff's order.

    An entry is below a root when its path is inside the root's path (``encoder.layer.6.attention``
    inside ``encoder.layer.6``). Shallow paths are visited first, so a root is found before what it
    contains whatever order the diff lists them in.
    """
    depth = [-1 if entry["path"] == "" else entry["path"].count(".") for entry in entries]
    roots: list[int] = []
    counts: dict[int, int] = {}
    for index in sorted(range(len(entries)), key=lambda i: (depth[i], i)):
        path = entries[index]["path"]
        owner = next(
            (r for r in roots if path != entries[r]["path"] and _below(path, entries[r]["path"])), None
        )
        if owner is None:
            roots.append(index)
            counts[index] = 0
        else:
            counts[owner] += 1
    return [(entries[index], counts[index]) for index in sorted(roots)]


def _params(layers: Sequence[Mapping[str, Any]], path: str) -> int:
    """Parameters first attributed to the calls at ``path`` and inside it (each tensor once)."""
    return sum(
        layer["parameters"]["trainable"] + layer["parameters"]["frozen"]
        for layer in layers
        if layer["path"] == path or _below(layer["path"], path)
    )


def root_lines(
    diff: Mapping[str, Any], before: Mapping[str, Any], after: Mapping[str, Any], limit: int = 20
) -> list[str]:
    """The ``layer calls: ...`` summary and one line per added or removed root."""
    layers = diff["layers"]
    added, removed, changed = layers["added"], layers["removed"], layers["changed"]
    lines = [f"layer calls: {len(added)} added, {len(removed)} removed, {len(changed)} changed"]
    for label, entries, report in (("added", added, after), ("removed", removed, before)):
        if not entries:
            continue
        types = {(layer["path"], layer["call_index"]): layer["type"] for layer in report.get("layers", ())}
        roots = subtree_roots(entries)
        lines.append(f"  {label}: {len(roots)} subtree(s) holding {len(entries)} call(s):")
        for root, below in roots[:limit]:
            name = f"{root['path'] or '(root)'}#{root['call_index']}"
            kind = types.get(_key(root))
            text = f"    {name}" + (f" {kind}" if kind else "")
            details = []
            if below:
                details.append(f"+{below} call(s) inside")
            params = _params(report.get("layers", ()), root["path"]) if root["call_index"] == 0 else 0
            if params:
                details.append(f"{params:,} params")
            lines.append(escape_control(text + (f" ({'; '.join(details)})" if details else "")))
        if len(roots) > limit:
            lines.append(f"    ... {len(roots) - limit} more {label} subtree(s) (see --json)")
    return lines
