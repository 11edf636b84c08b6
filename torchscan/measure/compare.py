"""``compare_benchmarks``: a checked before/after comparison of two benchmark reports (workloads.md 6).

Pure with respect to the reports and free of torch: it runs no workload, only the caller's ``check``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, cast

from torchscan.report.diff import metric_diff
from torchscan.report.schema import SCHEMA_VERSION, MetricDiff
from torchscan.report.validate import COMPATIBLE_CONTEXT_KEYS, validate_benchmark_report
from torchscan.report.workload_schema import (
    BenchmarkComparison,
    BenchmarkReport,
    ContextChange,
    LatencyChange,
)


def compare_benchmarks(before: Any, after: Any, *, check: Callable[[], object]) -> BenchmarkComparison:
    """Compare two benchmark reports of the same configuration, gated by the caller's output ``check``.

    ``check`` runs exactly once, after validation: ``None``/``True`` means passed, ``False`` or an
    ``AssertionError`` means failed (every delta is then withheld, measurements kept); other
    exceptions propagate. ``totals`` holds one MetricDiff per metric name (a delta only for complete,
    identically labelled sides); ``latency_change`` labels the latency delta against the larger IQR;
    ``context_changes`` lists allowed settings that differ (threads, warmup, ...).

    What this does NOT mean: the IQR label describes the spread seen in these two runs only, it is no
    significance test and cannot see thermal drift or run order; a passing check shows the caller's
    declared equivalence, not task accuracy; faster timing is no memory saving (nor the reverse); RSS
    and allocator or tensor peaks are never summed.

    Raises ``TypeError`` (``check`` not callable), ``ValueError`` (invalid or incompatible reports,
    non-boolean check result), before calling ``check`` where possible.
    """
    if not callable(check):
        raise TypeError("check must be callable")
    validate_benchmark_report(before, "before")
    validate_benchmark_report(after, "after")
    _check_compatible(before, after)
    totals = {
        name: metric_diff(before["totals"].get(name), after["totals"].get(name), name)
        for name in sorted(set(before["totals"]) | set(after["totals"]))
    }
    passed = _run_check(check)
    if not passed:  # a failed check withholds every delta but keeps both measurements
        totals = {
            name: {"status": "unavailable", "delta": None, "before": diff["before"], "after": diff["after"]}
            for name, diff in totals.items()
        }
    return {
        "schema_version": SCHEMA_VERSION,
        "report_type": "benchmark_comparison",
        "before": cast(BenchmarkReport, copy.deepcopy(before)),
        "after": cast(BenchmarkReport, copy.deepcopy(after)),
        "totals": totals,
        "output_check": "passed" if passed else "failed",
        "latency_change": latency_change(totals, before, after),
        "context_changes": context_changes(before["context"], after["context"]),
    }


def latency_change(totals: dict[str, MetricDiff], before: Any, after: Any) -> LatencyChange:
    """``faster``/``slower`` when ``|delta|`` exceeds the larger IQR, ``within_variability`` otherwise.

    ``unavailable`` when the latency delta is withheld or either IQR is not complete. A descriptive
    label for these two runs, never a significance test.
    """
    entry = totals.get("latency")
    delta = None if entry is None else entry["delta"]
    iqr_before = before["totals"].get("latency_iqr")
    iqr_after = after["totals"].get("latency_iqr")
    if delta is None or iqr_before is None or iqr_after is None:
        return "unavailable"
    if iqr_before["status"] != "complete" or iqr_after["status"] != "complete":
        return "unavailable"
    if abs(delta) <= max(iqr_before["value"], iqr_after["value"]):
        return "within_variability"
    return "faster" if delta < 0 else "slower"


def context_changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, ContextChange]:
    """Every context key (sorted) whose values differ; an absent key reads as ``None``."""
    changes: dict[str, ContextChange] = {}
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        if old != new:
            changes[key] = {"before": copy.deepcopy(old), "after": copy.deepcopy(new)}
    return changes


def _run_check(check: Callable[[], object]) -> bool:
    try:
        outcome = check()
    except AssertionError:
        return False
    if outcome is None or outcome is True:
        return True
    if outcome is False:
        return False
    raise ValueError(
        "check must return None/True (outputs equivalent) or False (not equivalent), "
        f"got {type(outcome).__name__}"
    )


def _check_compatible(before: Any, after: Any) -> None:
    missing = object()
    for key in COMPATIBLE_CONTEXT_KEYS:
        old = before["context"].get(key, missing)
        new = after["context"].get(key, missing)
        if old is missing or new is missing or old != new:
            raise ValueError(f"Benchmark contexts differ or are missing: {key}.")
    if before["context"]["inputs_source"] != "caller_supplied" or before["inputs"] != after["inputs"]:
        raise ValueError(
            "Benchmark comparisons need equal caller-supplied input metadata (pass the same inputs= "
            "description to both runs)."
        )
