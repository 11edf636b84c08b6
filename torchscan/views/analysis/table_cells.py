"""Cell text of the summary table, from a report's layers and totals only (analysis.md 8).

A row shows its first call (a fold's other blocks have exactly the same values): inclusive cells
sum that call's subtree, own cells read the call alone; a module-formula cell reads a row's
attribution share first (views-3.md 1). Lower bounds read ``≥ X``, unknown values ``unavailable``,
rows inside an ancestor's inclusive estimate without a share ``covered``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from torchscan.views.analysis.row_values import NOT_CALLED_TEXT, is_covered, own_result
from torchscan.views.analysis.table_columns import COSTS, COVERED, PERCENT, plain, si
from torchscan.views.analysis.table_layout import shorten_shape
from torchscan.views.analysis.table_rows import TableRow
from torchscan.views.memory.text import human_bytes

_SHAPE_WIDTH = 28


def shape_text(meta: Mapping[str, Any]) -> str:
    """An input/output description as text: shapes for tensors, the class name of other objects."""
    kind = meta.get("kind")
    if kind in ("tensor", "size") and isinstance(meta.get("shape"), list):
        return ("Size" if kind == "size" else "") + str(list(meta["shape"]))
    if kind == "nested_tensor":
        return "nested"  # ragged: a report never invents a shape for it
    if kind == "scalar":
        return str(meta.get("type", kind))  # "int": what the call got, never its value
    if kind in ("tuple", "list"):
        return "(" + ", ".join(shape_text(item) for item in meta["items"]) + ")"
    if kind == "mapping":
        return "{" + ", ".join(shape_text(item["value"]) for item in meta["items"]) + "}"
    if kind == "none":
        return "None"  # as Python writes it
    if kind == "not_called":
        return NOT_CALLED_TEXT
    if kind == "object" and isinstance(meta.get("type"), str) and meta["type"]:
        return meta["type"].rpartition(".")[2]  # DynamicCache, not "object"
    return str(kind)


def _wrap(text: str, wrap_mode: str) -> str:
    return shorten_shape(text, _SHAPE_WIDTH) if wrap_mode == "mid" else text


def _combine(results: Sequence[Mapping[str, Any]]) -> tuple[str, float] | None:
    """Sum results the way totals do: complete only when every part is; ``None`` when none exist."""
    if not results:
        return None
    known = [r["known_value"] for r in results if r["known_value"] is not None]
    if all(r["status"] == "complete" for r in results):
        return "complete", sum(known)
    return ("partial", sum(known)) if known else ("unavailable", 0)


def _number(status: str, value: float, text: str) -> str:
    if status == "complete":
        return text
    return f"≥ {text}" if status == "partial" else "unavailable"


def _si_cell(combined: tuple[str, float] | None) -> str:
    if combined is None:
        return "-"
    return _number(combined[0], combined[1], si(combined[1], ""))


class Cells:
    """Cell text of one row, from the report's layers and totals only.

    A row shows its first call (a fold's other blocks have exactly the same values): inclusive
    cells sum that call's subtree, own cells read the call alone.
    """

    def __init__(
        self, report: Mapping[str, Any], wrap_mode: str, memory: Mapping[str, Any] | None = None
    ) -> None:
        self.layers = report["layers"]
        self.totals = report["totals"]
        self.wrap_mode = wrap_mode
        # Parameters of modules never called are in the total but at no call: the root (which holds
        # every module) counts them; any other inclusive count may miss some, so it is a lower bound.
        self.uncalled = self.totals["parameters"]["value"] - sum(
            layer["parameters"]["trainable"] + layer["parameters"]["frozen"] for layer in self.layers
        )
        self.saved = (
            {}
            if memory is None
            else {
                (call["path"], call["call_index"]): call["activations_saved"] for call in memory["by_module"]
            }
        )

    def results(self, indices: Sequence[int], name: str) -> list[Mapping[str, Any]]:
        """The calls' own results (attribution shares first, views-3.md 1), absent ones left out."""
        found = (own_result(self.layers[i], name) for i in indices)
        return [r for r in found if r is not None]

    def _cost(self, indices: Sequence[int], metric: str) -> str:
        combined = _combine(self.results(indices, metric))
        if combined is None and is_covered(self.layers[indices[0]], metric):
            return COVERED  # inside an ancestor's inclusive estimate, not attributed to this row
        return _si_cell(combined)

    def cell(self, row: TableRow, column: str) -> str:
        layer = self.layers[row.layers[0]]
        if column == "output_shape":
            return _wrap(shape_text(layer["output"]), self.wrap_mode)
        if column in ("params", "trainable") and row.layers[0] == 0 and self.uncalled:
            return self._root_params(column)
        if column in ("params", "params_self", "trainable"):
            alone = column == "params_self"
            return self._params(
                row.layers[:1] if alone else row.subtree, column, bound=not alone and self.uncalled > 0
            )
        for metric, (inclusive, own) in COSTS.items():
            if column == own:
                return self._cost(row.layers[:1], metric)
            if column == inclusive:
                if metric == "operator_flops_self":  # the report's inclusive figure of the call
                    return self._cost(row.layers[:1], "operator_flops")
                return self._cost(row.subtree, metric)
        if column in PERCENT:
            return self._percent(row, *PERCENT[column])
        if column == "saved_activations":
            return self._saved(row)
        return self._spatial(layer["metrics"].get(column))

    def _params(self, indices: Sequence[int], column: str, bound: bool = False) -> str:
        """Parameters first attributed to these calls (each tensor once, as in the total).

        ``bound``: some module was never called, and it may sit inside these calls' modules, so the
        count is a lower bound (``≥``) and no parameter seen is not proof of none (``unknown``).
        """
        params = [self.layers[i]["parameters"] for i in indices]
        trainable = sum(p["trainable"] for p in params)
        frozen = sum(p["frozen"] for p in params)
        count = trainable + frozen
        if column == "trainable":
            if count == 0:
                return "unknown" if bound else "-"
            return "True" if frozen == 0 else ("False" if trainable == 0 else "Partial")
        shared = " (shared)" if any(p["shared"] for p in params) else ""
        return ("≥ " if bound else "") + f"{count:,}{shared}"

    def _root_params(self, column: str) -> str:
        """The root's inclusive parameters: the model's totals, never-called modules included."""
        trainable = self.totals["trainable_parameters"]["value"]
        frozen = self.totals["frozen_parameters"]["value"]
        if column == "trainable":
            if trainable + frozen == 0:
                return "-"
            return "True" if frozen == 0 else ("False" if trainable == 0 else "Partial")
        return f"{self.totals['parameters']['value']:,}"

    def _saved(self, row: TableRow) -> str:
        """Saved activations of the row's call: the MemoryReport's figure already covers its children.

        A fold row stands for N calls that the analysis found identical; the MemoryReport's run may
        still differ between them, so the cell shows their common value, ``varies`` when they
        differ, and a lower bound when some block's call is missing from that report.
        """
        keys = [(self.layers[i]["path"], self.layers[i]["call_index"]) for i in row.layers]
        found = [self.saved[key] for key in keys if key in self.saved]
        if not found:
            return "-"
        if len({(r["status"], r["known_value"]) for r in found}) > 1:
            return "varies"
        status, value = found[0]["status"], found[0]["known_value"]
        if status == "unavailable" or value is None:
            return "unavailable"
        if status == "complete" and len(found) < len(keys):
            status = "partial"  # a block the report lacks: its figure is unknown
        text = human_bytes(value)
        return text if status == "complete" else f"≥ {text}"

    def _percent(self, row: TableRow, metric: str, total_name: str) -> str:
        if metric == "operator_flops_self":
            combined = _combine(self.results(row.layers[:1], "operator_flops"))
        else:
            combined = _combine(self.results(row.subtree, metric))
        if combined is None:
            return "-"
        total = self.totals.get(total_name)
        status, value = combined
        if status == "unavailable" or total is None or total["status"] != "complete":
            return "unavailable"  # a share of a lower bound is not a share of anything
        if total["value"] == 0:
            return "n/a"
        return _number(status, value, f"{100 * value / total['value']:.2f} %")

    @staticmethod
    def _spatial(result: Mapping[str, Any] | None) -> str:
        if result is None:
            return "-"
        if result["method"] == "not_applicable":
            return "n/a"
        value = result["known_value"]
        text = "" if value is None else plain(value)
        return _number(result["status"], value or 0, text)
