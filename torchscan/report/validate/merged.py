"""Checks of the distributed parts of reports and of merged reports (distributed.md 2-4).

Like ``validate.py`` (both build on ``validate_core``), every failure is a ``ValueError`` naming the
location of the problem, and this module never imports torch.
"""

from __future__ import annotations

from typing import Any

from torchscan.report.schema import COMMUNICATION_METHOD, SCHEMA_VERSION
from torchscan.report.validate.core import (
    check_diagnostics,
    check_json_tree,
    check_metric_result,
    fail,
    is_count,
    require_object,
)

MERGED_TYPES = ("flop", "analysis", "benchmark")


def _child(where: str, key: object) -> str:
    # Unlike ``validate_core.child`` this never quotes a dotted key (``by_operator.c10d.broadcast_``):
    # kept as it was when the validators were split, so every location reads as before.
    if isinstance(key, int):
        return f"{where}[{key}]"
    return f"{where}.{key}" if where else str(key)


def check_distributed_context(context: Any, where: str) -> None:
    """``context.distributed``: backend, world size, rank within it, mesh dimensions or null."""
    if not isinstance(context, dict):
        raise fail(where, "must be an object with backend, world_size, rank and mesh")
    if not isinstance(context.get("backend"), str):
        raise fail(_child(where, "backend"), "must be a string")
    world_size: Any = context.get("world_size")
    rank: Any = context.get("rank")
    if not (is_count(world_size) and world_size >= 1):
        raise fail(_child(where, "world_size"), "must be a positive integer")
    if not (is_count(rank) and rank < world_size):
        raise fail(_child(where, "rank"), "must be an integer in [0, world_size)")
    mesh = context.get("mesh", fail)
    if mesh is None:
        return
    if not isinstance(mesh, list):
        raise fail(_child(where, "mesh"), "must be a list of {name, size} or null")
    for index, dimension in enumerate(mesh):
        location = _child(_child(where, "mesh"), index)
        if not (isinstance(dimension, dict) and isinstance(dimension.get("name"), str)):
            raise fail(location, "must be an object with a string name")
        if not (is_count(dimension.get("size")) and dimension["size"] >= 1):
            raise fail(_child(location, "size"), "must be a positive integer")


def check_communication(communication: Any, where: str) -> None:
    """``communication``: total_bytes (bytes, workload, collective method) and per-operator tallies."""
    if not isinstance(communication, dict):
        raise fail(where, "must be an object with total_bytes and by_operator")
    total: Any = communication.get("total_bytes")
    check_metric_result(total, _child(where, "total_bytes"), additive=True)
    if (total["unit"], total["scope"], total["method"]) != ("bytes", "workload", COMMUNICATION_METHOD):
        expected = f"must have unit bytes, scope workload, method {COMMUNICATION_METHOD}"
        raise fail(_child(where, "total_bytes"), expected)
    entries = require_object(communication, "by_operator", where)
    for name, entry in entries.items():
        location = _child(_child(where, "by_operator"), name)
        if not (isinstance(entry, dict) and is_count(entry.get("calls")) and is_count(entry.get("bytes"))):
            raise fail(location, "must be an object with nonnegative integer calls and bytes")
    if total["known_value"] is not None and total["known_value"] != sum(e["bytes"] for e in entries.values()):
        raise fail(_child(where, "total_bytes"), "must equal the sum of by_operator bytes")


def check_distributed_parts(flops: dict[str, Any], where: str) -> None:
    """The optional distributed keys of a FlopReport: logical_total, communication, context."""
    if "logical_total" in flops:
        logical = flops["logical_total"]
        check_metric_result(logical, _child(where, "logical_total"), additive=True)
        if logical["unit"] != "FLOPs" or logical["scope"] != "global":
            raise fail(_child(where, "logical_total"), "must have unit FLOPs and scope global")
    if "communication" in flops:
        check_communication(flops["communication"], _child(where, "communication"))
    context = flops.get("context")
    if isinstance(context, dict):
        check_context_distributed(context, _child(where, "context"))


def check_context_distributed(context: dict[str, Any], where: str) -> None:
    """``context.distributed`` of any report, when present (absent outside a process group)."""
    if "distributed" in context:
        check_distributed_context(context["distributed"], _child(where, "distributed"))


def validate_merged_report(report: Any, where: str = "report") -> None:
    """Check a saved merged report (``merge_reports``, distributed.md 4)."""
    if not isinstance(report, dict):
        raise fail(where, f"a merged report must be an object, got {type(report).__name__}")
    root = "" if where == "report" else where
    check_json_tree(report, root)
    if type(report.get("schema_version")) is not int or report["schema_version"] != SCHEMA_VERSION:
        raise fail(_child(root, "schema_version"), f"unsupported schema_version; expected {SCHEMA_VERSION}")
    if report.get("report_type") != "merged":
        raise fail(_child(root, "report_type"), "must be 'merged'")
    if report.get("merged_type") not in MERGED_TYPES:
        raise fail(_child(root, "merged_type"), f"must be one of {', '.join(MERGED_TYPES)}")
    world_size: Any = report.get("world_size")
    ranks: Any = report.get("ranks")
    if not (is_count(world_size) and world_size >= 1):
        raise fail(_child(root, "world_size"), "must be a positive integer")
    if not (
        isinstance(ranks, list)
        and ranks
        and all(is_count(rank) and rank < world_size for rank in ranks)
        and ranks == sorted(set(ranks))
    ):
        raise fail(_child(root, "ranks"), "must be distinct ascending integers in [0, world_size)")
    for key in ("totals", "imbalance"):
        for name, result in require_object(report, key, root).items():
            check_metric_result(result, _child(_child(root, key), name))
    per_rank = report.get("per_rank")
    listed = [e.get("rank") if isinstance(e, dict) else None for e in per_rank or ()]
    if not isinstance(per_rank, list) or listed != ranks:
        raise fail(_child(root, "per_rank"), "must hold one {rank, totals} entry per merged rank, in order")
    for index, entry in enumerate(per_rank):
        location = _child(_child(root, "per_rank"), index)
        for name, result in require_object(entry, "totals", location).items():
            check_metric_result(result, _child(_child(location, "totals"), name))
    diagnostics = report.get("diagnostics")
    if not isinstance(diagnostics, list):
        raise fail(_child(root, "diagnostics"), "must be a list")
    check_diagnostics(diagnostics, _child(root, "diagnostics"))
    for index, entry in enumerate(diagnostics):
        if "rank" in entry and entry["rank"] not in ranks:  # a rank's own diagnostic (merge_reports)
            raise fail(_child(_child(_child(root, "diagnostics"), index), "rank"), "names no merged rank")
