"""Check a saved GenerationReport (generation.md 2) before anything reads it; never imports torch.

Every failure is a ``ValueError`` whose message starts with the location (``steps[3].flops.unit``),
like the other validators'. Beyond shapes it checks the report's own arithmetic where it is exact:
step phases and indices, phase step counts, and that the known step values plus ``outside_steps``
add up exactly to the counting pass's totals (generation.md 1).
"""

from __future__ import annotations

from typing import Any

from torchscan.report.generation_schema import (
    CONTEXT_KEYS,
    FIT_KEYS,
    FIT_METRICS,
    GENERATION_REPORT,
    PHASES,
    STEP_METRICS,
    STEP_UNITS,
    TIMING_NAMES,
)
from torchscan.report.hardware import ANALYSIS_FIGURES, check_saved_figures, check_saved_hardware
from torchscan.report.validate.core import (
    check_diagnostics,
    check_metric_result,
    child,
    fail,
    is_count,
    is_number,
    report_root,
    require_list,
    require_object,
)
from torchscan.report.validate.operators import validate_operator_report

_TEXT_OR_NULL = ("device", "cache_class", "attention_implementation")
_COUNT_OR_NULL = ("batch_size", "prompt_tokens", "max_new_tokens")


def _check_costs(parent: dict[str, Any], where: str, scope: str | None) -> None:
    """The three step metrics of ``parent``: valid, their units, and ``scope`` when given."""
    for name in STEP_METRICS:
        location = child(where, name)
        if name not in parent:
            raise fail(location, "is missing")
        result = parent[name]
        check_metric_result(result, location, additive=True)
        if result["unit"] != STEP_UNITS[name]:
            raise fail(child(location, "unit"), f"must be {STEP_UNITS[name]}")
        if scope is not None and result["scope"] != scope:
            raise fail(child(location, "scope"), f"must be {scope}")


def _check_context(context: dict[str, Any], where: str) -> bool:
    """Context keys and their types; returns whether hardware facts were stated."""
    for key in CONTEXT_KEYS:
        if key not in context:
            raise fail(child(where, key), "is missing")
    for key in ("torchscan_version", "torch_version", "model_type"):
        if not isinstance(context[key], str):
            raise fail(child(where, key), "must be a string")
    for key in _TEXT_OR_NULL:
        if context[key] is not None and not isinstance(context[key], str):
            raise fail(child(where, key), "must be a string or null")
    for key in _COUNT_OR_NULL:
        if context[key] is not None and not is_count(context[key]):
            raise fail(child(where, key), "must be a nonnegative integer or null")
    if not isinstance(context["use_cache"], bool):
        raise fail(child(where, "use_cache"), "must be a boolean")
    if context["do_sample"] is not None and not isinstance(context["do_sample"], bool):
        raise fail(child(where, "do_sample"), "must be a boolean or null")
    dtypes = context["dtypes"]
    if not (isinstance(dtypes, list) and all(isinstance(item, str) for item in dtypes)):
        raise fail(child(where, "dtypes"), "must be a list of strings")
    return check_saved_hardware(context, where)


def _check_step(step: Any, position: int, stated: bool, where: str) -> None:
    if not isinstance(step, dict):
        raise fail(where, "must be a step object")
    if step.get("index") != position or not is_count(step.get("index")):
        raise fail(child(where, "index"), f"must be {position} (steps are listed in order)")
    expected = "prefill" if position == 0 else "decode"
    if step.get("phase") != expected:
        raise fail(child(where, "phase"), f"must be {expected} (step 0 is the prefill)")
    for key in ("input_tokens", "context_tokens"):
        if key not in step or (step[key] is not None and not is_count(step[key])):
            raise fail(child(where, key), "must be a nonnegative integer or null")
    _check_costs(step, where, "step")
    for name in (*ANALYSIS_FIGURES, "bound"):
        if stated and name not in step:  # the producer adds all three to every step, or none
            raise fail(child(where, name), "is missing (context.hardware is stated)")
    for name in ANALYSIS_FIGURES:
        if name in step:
            check_metric_result(step[name], child(where, name))
    check_saved_figures(step, ANALYSIS_FIGURES, stated, where)
    if "bound" in step:
        if not stated:
            raise fail(child(where, "bound"), "a hardware figure needs context.hardware (the stated facts)")
        if step["bound"] not in ("compute", "memory", None):
            raise fail(child(where, "bound"), "must be compute, memory or null")


def _check_sums(report: dict[str, Any], steps: list[dict[str, Any]], root: str) -> None:
    """Known step values plus outside_steps equal the counting pass's known totals, exactly."""
    flops = report["operator_flops"]
    for name, total in (("flops", flops["total"]), ("operator_bytes", flops.get("operator_bytes"))):
        if not isinstance(total, dict) or total.get("known_value") is None:
            continue
        parts = [step[name]["known_value"] for step in steps] + [report["outside_steps"][name]["known_value"]]
        if None in parts:
            continue  # an unavailable part: there is no exact sum to check
        if sum(parts) != total["known_value"]:
            raise fail(
                child(child(root, "outside_steps"), name),
                f"step and outside_steps known values must sum exactly to operator_flops' {name}",
            )


def _check_fit(fits: dict[str, Any], where: str) -> None:
    for name in FIT_METRICS:
        location = child(where, name)
        if name not in fits:
            raise fail(location, "is missing")
        fit = fits[name]
        if fit is None:
            continue
        if not isinstance(fit, dict) or sorted(fit) != sorted(FIT_KEYS):
            raise fail(location, "must be null or an object with intercept, slope and max_residual")
        for key in FIT_KEYS:
            if not is_number(fit[key]):
                raise fail(child(location, key), "must be a finite number")
        if fit["max_residual"] < 0:
            raise fail(child(location, "max_residual"), "must be >= 0")


def _check_timing(timing: dict[str, Any], where: str) -> None:
    for name in TIMING_NAMES:
        location = child(where, name)
        check_metric_result(timing.get(name), location, additive=True)
        if timing[name]["unit"] != "seconds":
            raise fail(child(location, "unit"), "must be seconds")
    seconds = require_list(timing, "decode_step_seconds", where)
    for index, value in enumerate(seconds):
        if not is_number(value) or value < 0:
            raise fail(child(child(where, "decode_step_seconds"), index), "must be a finite number >= 0")
    mean = timing["decode_step_mean"]
    if (mean["status"] == "unavailable") != (not seconds):
        raise fail(child(where, "decode_step_mean"), "is unavailable exactly when no decode step was timed")
    if mean["status"] == "complete" and mean["value"] != sum(seconds) / len(seconds):
        location = child(child(where, "decode_step_mean"), "value")
        raise fail(location, "must be the mean of decode_step_seconds")


def validate_generation_report(report: Any, where: str = "report") -> None:
    """Check a saved ``GenerationReport`` (schema 1) completely; raise ``ValueError`` naming the spot."""
    root = report_root(report, where, "a generation report", GENERATION_REPORT)
    stated = _check_context(require_object(report, "context", root), child(root, "context"))
    steps = require_list(report, "steps", root)
    for position, step in enumerate(steps):
        _check_step(step, position, stated, child(child(root, "steps"), position))
    _check_costs(require_object(report, "outside_steps", root), child(root, "outside_steps"), "outside_steps")
    for phase in PHASES:
        totals = require_object(report, phase, root)
        _check_costs(totals, child(root, phase), phase)
        count = sum(1 for step in steps if step["phase"] == phase)
        if totals.get("steps") != count or not is_count(totals.get("steps")):
            raise fail(child(child(root, phase), "steps"), f"must be {count}, the number of {phase} steps")
    means = require_object(report, "decode_per_token", root)
    _check_costs(means, child(root, "decode_per_token"), "decode_per_token")
    _check_fit(require_object(report, "decode_fit", root), child(root, "decode_fit"))
    validate_operator_report(require_object(report, "operator_flops", root), child(root, "operator_flops"))
    _check_sums(report, steps, root)
    if "timing" in report:
        _check_timing(require_object(report, "timing", root), child(root, "timing"))
    check_diagnostics(require_list(report, "diagnostics", root), child(root, "diagnostics"))
