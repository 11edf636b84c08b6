"""The rows of the summary table: call tree, depth limit and folded repeated blocks (issue 15 item 1).

A view model built from a report alone (no torch). Every layer call of the report is *assigned* to
exactly one table row — its own row when shown, else the row of its nearest shown ancestor — so
nothing is dropped and nothing counted twice. A row that holds hidden descendants is *collapsed*.
Each row also knows its call's whole subtree (``subtree``): the inclusive cells (issue 23 item 4:
a ``BertLayer`` row carries its 7,087,872 parameters, as torchinfo shows) sum it.

Repeated identical sibling blocks (``encoder.layer.0`` … ``encoder.layer.11`` with the same
structure, shapes, parameter counts and metric results) fold into one row ``(×12) layer.0 …
layer.11`` that shows *one* of them — every block has exactly the same values, so one block's are
exact for each — and the rows below it show that block's calls. ``layers`` still lists the
corresponding call of every block, for views that join another report on them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# Rows the automatic depth aims for: with the header and footer lines, about 60 lines in all.
ROW_BUDGET = 40


@dataclass
class TableRow:
    """One printed row: the layer calls it shows and the hidden ones it sums (report indices).

    ``layers`` holds one index, or one per block a fold stands for (``fold`` = their number); the
    first is the call whose values the row shows. ``assigned`` is every layer this row stands for
    in the one-row-per-call partition: ``layers`` plus hidden descendants. ``subtree`` is the first
    call and every call it made (shown or hidden): what the inclusive cells sum. ``run`` is the
    number of identical siblings a fold row stands for inside one parent (``(×run)`` in its name).
    """

    layers: list[int]
    assigned: list[int]
    prefix: str  # tree glyphs
    name: str
    depth: int
    fold: int = 1
    collapsed: bool = False
    subtree: list[int] = field(default_factory=list)
    run: int = 1


@dataclass
class _Node:
    index: int
    path: str
    depth: int
    children: list[_Node] = field(default_factory=list)
    signature: int = 0


def _tree(layers: Sequence[Mapping[str, Any]]) -> _Node:
    """Rebuild the call tree: layers come in call-start order, a parent before its children.

    A call's parent is the latest open call whose path is a prefix of its path (depth alone would
    hang ``h.0`` under its preceding sibling ``drop`` when the ``h`` container is never called);
    a call with no such ancestor hangs under the root.
    """
    root = _Node(0, layers[0]["path"], layers[0]["depth"])
    stack = [root]
    for index in range(1, len(layers)):
        layer = layers[index]
        node = _Node(index, layer["path"], layer["depth"])
        while len(stack) > 1 and not node.path.startswith(stack[-1].path + "."):
            stack.pop()
        stack[-1].children.append(node)
        stack.append(node)
    return root


def _relative(path: str, parent: str) -> str:
    """``encoder.layer.0`` under ``encoder`` -> ``layer.0``; other paths stay whole."""
    if parent and path.startswith(parent + "."):
        return path[len(parent) + 1 :]
    return path


def _own_key(layer: Mapping[str, Any]) -> str:
    """What must match for two calls to be 'identical' apart from where they sit."""
    params = layer["parameters"]
    metrics = sorted((name, r["status"], r["known_value"]) for name, r in layer["metrics"].items())
    shares = sorted((name, r["known_value"]) for name, r in layer.get("attribution", {}).items())
    key = [
        layer["type"],
        layer["call_index"] > 0,
        layer["output"],
        params["trainable"],
        params["frozen"],
        params["shared"],
        metrics,
        shares,
    ]
    return json.dumps(key, sort_keys=True, default=str)


def _sign(root: _Node, layers: Sequence[Mapping[str, Any]]) -> None:
    """Give each node an int signature, equal exactly when two subtrees are identical.

    Interned bottom-up (Merkle style), so the whole tree costs one pass however deep it is.
    """
    table: dict[tuple[Any, ...], int] = {}
    order: list[_Node] = []
    pending = [root]
    while pending:  # iterative: a 1,000-deep chain must not hit the recursion limit
        node = pending.pop()
        order.append(node)
        pending.extend(node.children)
    for node in reversed(order):
        key = (
            _own_key(layers[node.index]),
            tuple((_relative(c.path, node.path), c.signature) for c in node.children),
        )
        node.signature = table.setdefault(key, len(table))


def _runs(children: list[list[_Node]], fold: bool) -> list[list[list[_Node]]]:
    """Group sibling positions into runs of identical subtrees (length 1 when not folding)."""
    runs: list[list[list[_Node]]] = []
    for group in children:
        if fold and runs and runs[-1][0][0].signature == group[0].signature:
            runs[-1].append(group)
        else:
            runs.append([group])
    return runs


def _subtree(nodes: list[_Node]) -> list[int]:
    indices: list[int] = []
    pending = list(nodes)
    while pending:
        node = pending.pop()
        indices.append(node.index)
        pending.extend(node.children)
    return sorted(indices)


class RowModel:
    """The call tree of one report, signed once, from which the rows of any depth are built."""

    def __init__(self, layers: Sequence[Mapping[str, Any]], fold: bool = True) -> None:
        self.layers = layers
        self.fold = fold
        self.root = _tree(layers) if layers else None
        self.deepest = max((layer["depth"] for layer in layers), default=0)
        if fold and self.root is not None:
            _sign(self.root, layers)

    def rows(self, max_depth: int) -> list[TableRow]:
        """The rows shown for ``max_depth``; deeper layers are summed into their nearest shown ancestor."""
        if self.root is None:
            return []
        layers, root = self.layers, self.root
        rows: list[TableRow] = []
        # Work items: the corresponding nodes (one per block a fold stands for), the last block of
        # a fold that starts at this row (else None), the number of siblings it folds in one
        # parent, the glyph prefix of its children and its own, and the parent row's path.
        # Depth-first, in call order.
        stack: list[tuple[list[_Node], _Node | None, int, str, str, str]] = [([root], None, 1, "", "", "")]
        while stack:
            nodes, last_sibling, run, child_prefix, prefix, parent = stack.pop()
            first = nodes[0]
            layer = layers[first.index]
            # The root is named by its class as written (``BertModel``, not the lower-cased name).
            name = layer["type"] if first is root else _relative(first.path, parent)
            if layer["call_index"]:
                name += f" #{layer['call_index']}"
            if last_sibling is not None:  # a fold starts here: name its first and last block
                final = _relative(last_sibling.path, parent)
                final_call = layers[last_sibling.index]["call_index"]
                name = f"(×{run}) {name} … {final}" + (f" #{final_call}" if final_call else "")
            indices = [node.index for node in nodes]
            row = TableRow(indices, list(indices), prefix, name, layer["depth"], len(nodes))
            row.subtree = _subtree([first])
            row.run = run
            rows.append(row)
            positions: list[list[_Node]] = []
            for i, child in enumerate(first.children):
                group = [node.children[i] for node in nodes]
                if child.depth <= max_depth:
                    positions.append(group)
                else:  # hidden: this call and everything below it is summed into this row
                    row.assigned.extend(_subtree(group))
                    row.collapsed = True
            if row.collapsed:
                row.assigned.sort()
            runs = _runs(positions, self.fold)
            items = []
            for number, siblings in enumerate(runs):
                last = number == len(runs) - 1
                glyph = "└─ " if last else "├─ "
                below = child_prefix + ("   " if last else "│  ")
                grouped = [node for block in siblings for node in block]
                fold_end = siblings[-1][0] if len(siblings) > 1 else None
                items.append((grouped, fold_end, len(siblings), below, child_prefix + glyph, first.path))
            stack.extend(reversed(items))
        return rows

    def auto_depth(self, budget: int = ROW_BUDGET) -> int:
        """The deepest ``max_depth`` (at least 1) whose table has at most ``budget`` rows.

        Row counts never shrink as the depth grows, so the search stops at the first depth over
        budget (a 1,000-deep chain costs ``budget`` row builds, not 1,000).
        """
        best = 1
        for depth in range(1, self.deepest + 1):
            if len(self.rows(depth)) > budget:
                break
            best = depth
        return best
