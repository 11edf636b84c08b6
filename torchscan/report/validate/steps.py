"""Checks of a FlopReport's operator bytes and steps (generation.md 1).

``operator_bytes`` and ``by_operator_bytes`` (``bytes=True``), ``by_step`` and ``outside_steps``
(``by_step=True``) are optional keys of a FlopReport. When present they are checked here: labels,
the exact key sets of step entries, the exact sums (step known values plus ``outside_steps`` equal
the totals, as ``by_phase`` does), statuses that agree with the totals, and an
``attention_not_fused`` diagnostic wherever KV bytes are unavailable under their own method, an
``attention_kv_not_applicable`` one wherever they are ``not_applicable`` (truth.md 4: no attention
ran there). Never imports torch.
"""

from __future__ import annotations

from typing import Any

from torchscan.report.schema import ATTENTION_KV_METHOD, NOT_APPLICABLE, OPERATOR_BYTES_METHOD
from torchscan.report.validate.core import check_metric_result, child, fail, is_count, require_object

STEP_KEYS = ("attention_kv_bytes", "flops", "index", "input_tokens", "operator_bytes")
OUTSIDE_KEYS = ("attention_kv_bytes", "flops", "operator_bytes")
_BYTE_METHODS = (("operator_bytes", OPERATOR_BYTES_METHOD), ("attention_kv_bytes", ATTENTION_KV_METHOD))


def _check_labelled(result: Any, where: str, unit: str, scope: str, method: str) -> None:
    check_metric_result(result, where)
    if method == ATTENTION_KV_METHOD and result["method"] == NOT_APPLICABLE:
        if result["status"] != "unavailable":
            raise fail(where, "a not_applicable result must be unavailable")
        method = NOT_APPLICABLE
    if result["unit"] != unit or result["scope"] != scope or result["method"] != method:
        raise fail(where, f"must have unit {unit}, scope {scope} and method {method}")


def _check_sum(parts: list[dict[str, Any]], total: dict[str, Any], where: str, name: str) -> None:
    """Known values of ``parts`` sum exactly to ``total``'s; complete exactly when all parts are."""
    known = [part["known_value"] for part in parts]
    if total["known_value"] is None:
        if any(value is not None for value in known):
            raise fail(where, f"steps carry no {name} value when the total is unavailable")
        return
    if None in known or sum(known) != total["known_value"]:
        raise fail(where, f"{name} of steps and outside_steps must sum exactly to the total's known_value")
    if (total["status"] == "complete") != all(part["status"] == "complete" for part in parts):
        raise fail(where, f"{name} of steps and outside_steps are all complete exactly when the total is")


def check_operator_bytes(flops: dict[str, Any], where: str) -> None:
    """``operator_bytes`` (scope ``workload``) and ``by_operator_bytes``, which needs it and sums to it."""
    if "operator_bytes" in flops:
        location = child(where, "operator_bytes")
        _check_labelled(flops["operator_bytes"], location, "bytes", "workload", OPERATOR_BYTES_METHOD)
    if "by_operator_bytes" not in flops:
        return
    location = child(where, "by_operator_bytes")
    if "operator_bytes" not in flops:
        raise fail(location, "needs operator_bytes beside it")
    per_operator = require_object(flops, "by_operator_bytes", where)
    for label, count in per_operator.items():
        if not is_count(count):
            raise fail(child(location, label), "must be a nonnegative integer")
    if list(per_operator) != sorted(per_operator):
        raise fail(location, "must be sorted by operator name")
    known = flops["operator_bytes"]["known_value"]
    if known is not None and sum(per_operator.values()) != known:
        raise fail(location, "must sum exactly to operator_bytes.known_value")


def check_steps(flops: dict[str, Any], where: str) -> None:
    """``by_step`` and ``outside_steps``: both or neither, with ``operator_bytes`` beside them."""
    if "by_step" not in flops and "outside_steps" not in flops:
        return
    for key in ("by_step", "outside_steps", "operator_bytes"):
        if key not in flops:
            raise fail(child(where, key), "is required when by_step or outside_steps is present")
    steps = flops["by_step"]
    location = child(where, "by_step")
    if not isinstance(steps, list):
        raise fail(location, "by_step must be a list")
    method = flops["total"]["method"]
    parts: list[dict[str, Any]] = []
    for index, step in enumerate(steps):
        entry = child(location, index)
        if not isinstance(step, dict) or sorted(step) != list(STEP_KEYS):
            raise fail(entry, f"must be an object with exactly the keys {', '.join(STEP_KEYS)}")
        if type(step["index"]) is not int or step["index"] != index:
            raise fail(child(entry, "index"), f"must be the integer {index}")
        tokens = step["input_tokens"]
        if tokens is not None and not is_count(tokens):
            raise fail(child(entry, "input_tokens"), "must be null or a nonnegative integer")
        _check_parts(step, entry, "step", method)
        parts.append(step)
    outside = require_object(flops, "outside_steps", where)
    outside_location = child(where, "outside_steps")
    if sorted(outside) != list(OUTSIDE_KEYS):
        raise fail(outside_location, f"must have exactly the keys {', '.join(OUTSIDE_KEYS)}")
    _check_parts(outside, outside_location, "outside_steps", method)
    parts.append(outside)
    _check_sum([part["flops"] for part in parts], flops["total"], location, "flops")
    sizes = [part["operator_bytes"] for part in parts]
    _check_sum(sizes, flops["operator_bytes"], location, "operator_bytes")
    kv = [part["attention_kv_bytes"] for part in parts]
    codes = {entry.get("code") for entry in flops["diagnostics"] if isinstance(entry, dict)}
    for method, code in (
        (ATTENTION_KV_METHOD, "attention_not_fused"),
        (NOT_APPLICABLE, "attention_kv_not_applicable"),
    ):
        if any(r["status"] == "unavailable" and r["method"] == method for r in kv) and code not in codes:
            label = "not_applicable" if method == NOT_APPLICABLE else "unavailable"
            raise fail(child(where, "diagnostics"), f"{label} attention_kv_bytes needs {code}")


def _check_parts(part: dict[str, Any], where: str, scope: str, method: str) -> None:
    _check_labelled(part["flops"], child(where, "flops"), "FLOPs", scope, method)
    for key, label in _BYTE_METHODS:
        _check_labelled(part[key], child(where, key), "bytes", scope, label)
