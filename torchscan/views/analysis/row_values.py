"""What one report row contributes to a view (views-3.md 1), shared by the table, the explorer and CSV.

A row's *own* value of a module-formula metric is its ``attribution`` when it has one (its share of
an ancestor's inclusive native estimate, or, on that ancestor's row, what is left for its own
frame), else its recorded ``metrics`` entry. Summed over a subtree, own values give the subtree's
inclusive value; summed over all rows, the model total. Rows whose module never ran as a module
call carry ``called: False``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscan.report.schema import COMPUTE_FIELDS, NOT_CALLED_KIND

NOT_CALLED_TEXT = "not called"


def own_result(layer: Mapping[str, Any], metric: str) -> Mapping[str, Any] | None:
    """The row's own result for ``metric``: its attribution share for compute fields, else its metric."""
    if metric in COMPUTE_FIELDS:
        share = layer.get("attribution", {}).get(metric)
        if share is not None:
            return share  # type: ignore[no-any-return]
    return layer["metrics"].get(metric)  # type: ignore[no-any-return]


def is_called(layer: Mapping[str, Any]) -> bool:
    """False for the row of a module that never ran as a module call (``called: false``)."""
    return layer.get("called", True) is not False


def is_covered(layer: Mapping[str, Any], metric: str) -> bool:
    """Whether an ancestor's inclusive estimate holds this row's ``metric`` with no share attributed."""
    return metric in layer.get("metric_owners", {}) and metric not in layer.get("attribution", {})


def not_called_output(meta: Mapping[str, Any]) -> bool:
    """Whether output metadata is the ``not_called`` marker of a not-called row."""
    return meta.get("kind") == NOT_CALLED_KIND
