"""Rows for modules that never ran as a module call, and shares of inclusive estimates (views-3.md 1).

Hooks only see module calls. A module whose forward never runs — ``MultiheadAttention.out_proj``
(its weights are read by a native kernel), every child of a ``TransformerEncoderLayer`` on PyTorch's
fused fast path, an unused attribute — would otherwise hold parameters that no row shows. Here,
after the forward, each such module gets a row marked ``called: False`` holding its own parameters
and buffers (first-attributed, like every row), so that own parameters over all rows sum to the
model total, always.

Which: a whole not-called subtree gets rows when it holds tensors or sits inside a call that owns
its subtree (a fused native call rebuilds all its parts); a parameterless module that merely never
ran gets none. Placement: a not-called module sits in the call tree under the calls of its nearest
ancestor that did run — one row per such call, right after that call's own subtree, in module
order (a whole not-called subtree keeps its shape). A module that never ran but whose descendants
did (a ``ModuleList``) stays a structural ancestor without a row unless it holds tensors of its own.

Shares: a built-in handler that owns its subtree with one inclusive estimate also says how that
estimate splits along the module tree (formulas/attention_shares.py). Each part lands on the row of
its module within the owner's call (called or not), as ``attribution``; when the rows do not match
the split one to one, nothing is attributed and the owner keeps its single inclusive number.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from torchscan.analysis.crawl.hooks import CallRecord, CallRecorder, ModuleInfo
from torchscan.report.schema import (
    ESTIMATE_FIELDS,
    FIELD_UNITS,
    MODULE_FORMULA_METHOD,
    NOT_CALLED_KIND,
    LayerReport,
    MetricResult,
    ValueMeta,
    metric_result,
)

NOT_CALLED: ValueMeta = {"kind": NOT_CALLED_KIND}


def not_called_calls() -> MetricResult:
    """A not-called row's ``calls``: the hook observed none (complete zero)."""
    return metric_result("complete", 0, unit="calls", scope="module_call", method="pytorch_hook")


def _ancestors(path: str) -> Iterable[str]:
    while path:
        path = path.rpartition(".")[0]
        yield path


def _subtree_ends(records: Sequence[CallRecord]) -> list[int]:
    """For each call, the index of the last call made during it (calls nest: a contiguous block)."""
    end = list(range(len(records)))
    for index in range(len(records) - 1, -1, -1):
        parent = records[index].parent
        if parent >= 0 and end[index] > end[parent]:
            end[parent] = end[index]
    return end


def _pending(recorder: CallRecorder, records: Sequence[CallRecord]) -> dict[str, list[ModuleInfo]]:
    """Not-called modules that get rows, grouped by their nearest called ancestor, in module order.

    A whole not-called subtree gets rows when some module in it holds tensors of its own, or when it
    sits inside a call that owns its subtree's estimates (a fused native call: every part is
    rebuilt, dropouts included, to carry its share); a parameterless module that merely never ran
    elsewhere (an unused dropout) gets none. A module that never ran but whose descendants did
    gets a row only for tensors of its own.
    """
    called = {record.path for record in records}
    owned = {  # calls inside an owned region (a record with neither field has no owner: no dict built)
        record.path
        for record in records
        if (record.metric_owners or record.metric_ownership) and _owners(record)
    }
    active = set(called)  # paths that ran, or hold a module that ran
    for path in called:
        for ancestor in _ancestors(path):
            if ancestor in active:
                break
            active.add(ancestor)
    pending: dict[str, list[ModuleInfo]] = {}
    group: list[ModuleInfo] = []  # the not-called subtree being gathered (contiguous in pre-order)
    anchor: str | None = None

    def close() -> None:
        if group and anchor is not None and (anchor in owned or any(i.params or i.buffers for i in group)):
            pending.setdefault(anchor, []).extend(group)
        group.clear()

    for info in recorder.infos:  # pre-order: a not-called parent precedes its children
        if info.path in called:
            continue
        parent = info.path.rpartition(".")[0]
        if info.path in active:  # a structural ancestor of calls (ModuleList): only its own tensors
            if info.params or info.buffers:
                close()
                anchor = next((a for a in _ancestors(info.path) if a in called), None)
                group.append(info)
                close()
            continue
        if parent in active:  # the root of a not-called subtree
            close()
            anchor = next((a for a in _ancestors(info.path) if a in called), None)
        group.append(info)
    close()
    return pending


def _owners(anchor: CallRecord) -> dict[str, dict[str, Any]]:
    """What covers work done inside the anchor call: the anchor's owners, and the anchor itself for
    the fields it owns for its subtree (so a not-called row reads as covered, like a called one)."""
    owners = dict(anchor.metric_owners or {})
    for name, scope in (anchor.metric_ownership or {}).items():
        if scope == "subtree" and name not in owners:
            owners[name] = {"path": anchor.path, "call_index": anchor.call_index}
    return {name: owners[name] for name in ESTIMATE_FIELDS if name in owners}


def _row(recorder: CallRecorder, info: ModuleInfo, anchor: CallRecord) -> LayerReport:
    parameters, buffers = recorder.attribute(info.params, info.buffers)
    row: LayerReport = {
        "path": info.path,
        "call_index": anchor.call_index,
        "name": info.path.rpartition(".")[2],
        "depth": info.depth,
        "type": info.type_name,
        "input": {"args": [], "kwargs": {}},
        "output": NOT_CALLED,
        "parameters": parameters,
        "buffers": buffers,
        "metrics": {"calls": not_called_calls()},
        "called": False,
    }
    owners = _owners(anchor)
    if owners:
        row["metric_owners"] = owners  # type: ignore[typeddict-item]
    return row


def with_not_called_rows(
    recorder: CallRecorder, records: Sequence[CallRecord], layers: list[LayerReport]
) -> list[LayerReport]:
    """``layers`` (one per record) with the not-called rows inserted, then every share attributed."""
    pending = _pending(recorder, records)
    owners = [i for i, record in enumerate(records) if record.shares]
    if not pending and not owners:
        return layers
    ends = _subtree_ends(records)
    after: dict[int, list[int]] = {}  # record index -> anchors whose rows follow it, innermost first
    for index, record in enumerate(records):
        if record.path in pending:
            after.setdefault(ends[index], []).append(index)
    merged: list[LayerReport] = []
    anchored: dict[int, list[LayerReport]] = {}  # anchor record index -> its not-called rows
    for index, layer in enumerate(layers):
        merged.append(layer)
        for anchor in sorted(after.get(index, ()), reverse=True):
            record = records[anchor]
            rows = [_row(recorder, info, record) for info in pending[record.path]]
            anchored[anchor] = rows
            merged.extend(rows)
    for owner in owners:
        _attribute_shares(records, layers, ends, anchored, owner)
    return merged


def _attribute_shares(
    records: Sequence[CallRecord],
    layers: list[LayerReport],
    ends: list[int],
    anchored: dict[int, list[LayerReport]],
    owner: int,
) -> None:
    """Put each part of the owner's split on the one row of its module within the owner's call."""
    shares = records[owner].shares or []
    block: dict[str, list[LayerReport]] = {}
    for index in range(owner, ends[owner] + 1):
        block.setdefault(records[index].path, []).append(layers[index])
        for row in anchored.get(index, ()):
            block.setdefault(row["path"], []).append(row)
    targets: list[tuple[LayerReport, dict[str, int]]] = []
    for position, (path, values) in enumerate(shares):
        rows = [layers[owner]] if position == 0 else block.get(path, [])
        if len(rows) != 1 or (position > 0 and rows[0] is layers[owner]):
            return  # a part without exactly one row: keep the single inclusive number
        targets.append((rows[0], values))
    for row, values in targets:
        row["attribution"] = {
            name: metric_result(
                "complete", value, unit=FIELD_UNITS[name], scope="module_call", method=MODULE_FORMULA_METHOD
            )
            for name, value in values.items()
        }
