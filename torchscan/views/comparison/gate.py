"""Before/after presentation rules (render.md 5): label compatibility and the execution gate.

``compare_reports`` supplies the diff; this module only decides what a view may show. The gate
is presentation only: when the two analyses did not run under the same inputs and context, compute
deltas are withheld (storage totals keep theirs) and the reasons are stated.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from torchscan.report.compare import compare_reports

STORAGE_TOTALS = (
    "parameters",
    "trainable_parameters",
    "frozen_parameters",
    "parameter_bytes",
    "buffer_elements",
    "buffer_bytes",
)
GATED_CONTEXT_KEYS = (
    "torch_version",
    "torchscan_version",
    "python_version",
    "execution_mode",
    "devices",
    "dtypes",
)


def _without_source(inputs: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in inputs.items() if key != "source"}


def source_note(before: Mapping[str, Any], after: Mapping[str, Any]) -> str | None:
    """The note shown when the inputs differ only in ``source`` (generated versus provided).

    ``input_shape=`` generates inputs and ``args=`` provides them; with identical shapes, dtypes,
    devices and structure the analyses observed the same shapes, so their deltas stay comparable.
    The values themselves were never recorded, so the note cannot say they were equal.
    """
    first, second = before["inputs"].get("source"), after["inputs"].get("source")
    if first == second or _without_source(before["inputs"]) != _without_source(after["inputs"]):
        return None
    return (
        f"Inputs differ only in source (before {first}, after {second}): identical shapes, dtypes and "
        "devices, so deltas are compared; input values are not recorded and may differ."
    )


def gate_reasons(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """Why compute deltas of two analyses are not comparable; empty when they are.

    Inputs that differ only in ``source`` do not gate (see ``source_note``).
    """
    reasons = []
    if _without_source(before["inputs"]) != _without_source(after["inputs"]):
        reasons.append("input metadata differs")
    for key in GATED_CONTEXT_KEYS:
        if key not in before["context"] or key not in after["context"]:
            reasons.append(f"{key} context is missing")
        elif before["context"][key] != after["context"][key]:
            reasons.append(f"{key} differs")
    if before["context"].get("analysis_mode", "full") != after["context"].get("analysis_mode", "full"):
        reasons.append("analysis_mode differs")
    return reasons


def _check_labels(entry: Mapping[str, Any], where: str) -> None:
    sides = [entry.get("before"), entry.get("after")]
    if not all(isinstance(side, Mapping) and side["known_value"] is not None for side in sides):
        return
    for field in ("method", "unit", "scope"):
        if sides[0][field] != sides[1][field]:  # type: ignore[index]
            raise ValueError(f"{where}: incompatible {field} between before and after")


def checked_diff(before: Mapping[str, Any], after: Mapping[str, Any], gate: Sequence[str]) -> dict[str, Any]:
    """``compare_reports(before, after)`` after label checks, with the gate applied.

    Raises ``ValueError`` containing ``incompatible <field>`` when a total or a matched call metric
    holds a number on both sides under different method, unit or scope.
    """
    diff: dict[str, Any] = copy.deepcopy(dict(compare_reports(before, after)))
    for name, entry in diff["totals"].items():
        _check_labels(entry, f"totals.{name}")
    for change in diff["layers"]["changed"]:
        for name, entry in change["metrics"].items():
            _check_labels(entry, f"layers[{change['path']!r}#{change['call_index']}].metrics.{name}")
    if gate:
        withheld = "not comparable: " + "; ".join(gate)
        for name, entry in diff["totals"].items():
            if name not in STORAGE_TOTALS:
                entry.update(delta=None, status="unavailable", withheld=withheld)
        for change in diff["layers"]["changed"]:
            for entry in change["metrics"].values():
                entry.update(delta=None, status="unavailable", withheld=withheld)
    return diff
