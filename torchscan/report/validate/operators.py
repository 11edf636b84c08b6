"""Checks of operator FLOP reports and their phases (formulas.md B.3, training-and-hardware.md 1).

A FlopReport is checked standalone (:func:`validate_flop_report`), inside an analysis
report (``operator_flops``) and, for its total and phases, inside a benchmark report. Every failure
is a ``ValueError`` naming the location. This module never imports torch.
"""

from __future__ import annotations

from typing import Any

from torchscan.report.validate.core import (
    check_diagnostics,
    check_json_tree,
    check_metric_result,
    child,
    fail,
    is_count,
    require_list,
    require_object,
)
from torchscan.report.validate.merged import check_distributed_parts
from torchscan.report.validate.steps import check_operator_bytes, check_steps

_PHASES = ("forward", "backward", "optimizer", "recompute")


def check_phases(flops: dict[str, Any], where: str) -> None:
    """``by_phase`` (training-and-hardware.md 1): exactly the four phases, FLOPs results with scope
    ``workload_phase`` and the total's method, whose known values sum exactly to the total's.

    Statuses agree with the total: a complete total has complete phases, a partial total at least one
    partial phase (the phase that held the uncounted operator), an unavailable total no values.
    """
    location = child(where, "by_phase")
    phases = require_object(flops, "by_phase", where)
    if sorted(phases) != sorted(_PHASES):
        raise fail(location, "must have exactly the keys forward, backward, optimizer, recompute")
    total = flops["total"]
    for name in _PHASES:
        check_metric_result(phases[name], child(location, name))
        if phases[name]["unit"] != "FLOPs" or phases[name]["scope"] != "workload_phase":
            raise fail(child(location, name), "must have unit FLOPs and scope workload_phase")
        if phases[name]["method"] != total["method"]:
            raise fail(child(child(location, name), "method"), "must equal the total's method")
    known = [phases[name]["known_value"] for name in _PHASES]
    statuses = {phases[name]["status"] for name in _PHASES}
    if total["known_value"] is None:
        if any(value is not None for value in known):
            raise fail(location, "phases carry no value when the total is unavailable")
        return
    if None in known or sum(known) != total["known_value"]:
        raise fail(location, "phase known values must sum exactly to total.known_value")
    if (total["status"] == "complete") != (statuses == {"complete"}):
        raise fail(location, "phases are all complete exactly when the total is complete")


def validate_operator_report(flops: dict[str, Any], where: str) -> None:
    """Check one FlopReport object (standalone or inside an analysis), distributed parts, operator
    bytes and steps (generation.md 1) included."""
    version = flops.get("schema_version")
    if type(version) is not int or version != 1:
        raise fail(child(where, "schema_version"), "operator schema_version must be the integer 1")
    context = require_object(flops, "context", where)
    if "attention" in context and not isinstance(context["attention"], str):
        raise fail(child(child(where, "context"), "attention"), "must be a string")
    covered = context.get("flop_counter_operators", [])
    if not isinstance(covered, list) or not all(isinstance(name, str) for name in covered):
        raise fail(child(child(where, "context"), "flop_counter_operators"), "must be a list of strings")
    check_metric_result(flops.get("total"), child(where, "total"))
    for key in ("by_module", "by_operator"):
        for label, count in require_object(flops, key, where).items():
            if not is_count(count):
                raise fail(child(child(where, key), label), "must be a nonnegative integer")
    for label, entry in require_object(flops, "ignored_operators", where).items():
        location = child(child(where, "ignored_operators"), label)
        if not isinstance(entry, dict):
            raise fail(location, "must be an object with calls and reason")
        if not is_count(entry.get("calls")):
            raise fail(child(location, "calls"), "calls must be a nonnegative integer")
        if not isinstance(entry.get("reason"), str):
            raise fail(child(location, "reason"), "reason must be a string")
    check_diagnostics(require_list(flops, "diagnostics", where), child(where, "diagnostics"))
    check_phases(flops, where)
    check_operator_bytes(flops, where)
    check_steps(flops, where)
    check_distributed_parts(flops, where)


def validate_flop_report(report: Any, where: str = "report") -> None:
    """Check a saved standalone ``FlopReport`` (``measure_flops``), distributed parts included."""
    if not isinstance(report, dict):
        raise fail(where, f"a FlopReport must be an object, got {type(report).__name__}")
    root = "" if where == "report" else where
    check_json_tree(report, root)
    validate_operator_report(report, root)
    check_distributed_parts(report, root)
