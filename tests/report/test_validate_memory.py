"""The torch-free validator of MemoryReports: a valid report passes, each malformation names its spot."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from torchscan.report.memory_schema import CATEGORIES, METHOD, PHASES
from torchscan.report.schema import metric_result
from torchscan.report.validate import load_report, report_kind, validate_report
from torchscan.report.validate.memory import validate_memory_report


def _bytes(value: int | None, scope: str, status: str = "complete") -> Any:
    return metric_result(status, value, unit="bytes", scope=scope, method=METHOD)  # type: ignore[arg-type]


def valid_report() -> dict[str, Any]:
    """A small hand-made report: baseline 100 bytes of parameters, peak 100 + 40 temporaries."""
    at_peak = {name: _bytes(0, "at_peak") for name in CATEGORIES}
    at_peak["parameters"] = _bytes(100, "at_peak")
    at_peak["temporaries"] = _bytes(40, "at_peak")
    point = {name: 0 for name in CATEGORIES}
    return {
        "schema_version": 1,
        "report_type": "memory",
        "context": {
            "torch_version": "2.14.1",
            "device": "cpu",
            "ledger_device": "cpu",
            "dtypes": ["float32"],
            "method": METHOD,
        },
        "peak": _bytes(140, "workload"),
        "baseline": _bytes(100, "workload_start"),
        "at_peak": {"by_category": at_peak, "phase": "forward", "module": {"path": "", "call_index": 0}},
        "by_phase": {
            "forward": _bytes(140, "workload_phase"),
            "backward": _bytes(None, "workload_phase", "unavailable"),
            "optimizer": _bytes(None, "workload_phase", "unavailable"),
            "recompute": _bytes(None, "workload_phase", "unavailable"),
        },
        "by_module": [
            {
                "path": "",
                "call_index": 0,
                "module_type": "Linear",
                "activations_saved": _bytes(0, "module_call"),
                "allocated": _bytes(40, "module_call"),
                "peak_inside": _bytes(140, "module_call"),
            }
        ],
        "timeline": [
            {"event": 0, "phase": None, "by_category": {**point, "parameters": 100}},
            {"event": 1, "phase": "forward", "by_category": {**point, "parameters": 100, "temporaries": 40}},
        ],
        "timeline_events": 1,
        "allocator": {},
        "diagnostics": [],
    }


def test_valid_report_passes_and_round_trips() -> None:
    report = valid_report()
    validate_memory_report(report)
    assert report_kind(report) == "memory"
    assert validate_report(report) == "memory"
    assert load_report(json.dumps(report)) == report
    assert tuple(report["by_phase"]) == PHASES


def _set(report: dict[str, Any], path: list[Any], value: Any) -> None:
    target = report
    for key in path[:-1]:
        target = target[key]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value


_DELETE = object()

MALFORMED = [
    (["schema_version"], 2, "schema_version"),
    (["report_type"], "memoryx", "report_type"),
    (["context", "method"], "other", "context.method"),
    (["context", "ledger_device"], "tpu", "context.ledger_device"),
    (["context", "dtypes"], ["float32", "bfloat16"], "context.dtypes"),
    (["context", "device"], 3, "context.device"),
    (["peak", "unit"], "MiB", "peak.unit"),
    (["peak", "scope"], "at_peak", "peak.scope"),
    (["baseline", "method"], "x", "baseline.method"),
    (["baseline", "value"], 200, "baseline"),
    (["at_peak", "by_category", "inputs"], _DELETE, "at_peak.by_category"),
    (["at_peak", "by_category", "inputs", "scope"], "workload", "at_peak.by_category.inputs.scope"),
    (["at_peak", "by_category", "temporaries", "value"], 41, "at_peak.by_category.temporaries"),
    (["at_peak", "phase"], "inference", "at_peak.phase"),
    (["at_peak", "module"], {"path": ""}, "at_peak.module.call_index"),
    (["by_phase", "recompute"], _DELETE, "by_phase"),
    (["by_phase", "forward", "scope"], "workload", "by_phase.forward.scope"),
    (["by_module", 0, "module_type"], None, "by_module[0].module_type"),
    (["by_module", 0, "allocated", "scope"], "workload", "by_module[0].allocated.scope"),
    (["timeline", 1, "event"], 0, "timeline[1].event"),
    (["timeline", 1, "event"], 5, "timeline[1].event"),
    (["timeline", 0, "by_category", "gradients"], -1, "timeline[0].by_category.gradients"),
    (["timeline", 0, "phase"], "train", "timeline[0].phase"),
    (["timeline", 1, "phase"], _DELETE, "timeline[1]"),  # found by the fuzz: the view read it
    (["timeline_events"], -1, "timeline_events"),
    (["allocator", "max_allocated_delta"], _bytes(5, "workload"), "allocator.max_allocated_delta.method"),
    (["diagnostics"], [{"code": "x"}], "diagnostics[0].metric"),
]


@pytest.mark.parametrize(("path", "value", "where"), MALFORMED)
def test_malformed_report_names_location(path: list[Any], value: Any, where: str) -> None:
    report = copy.deepcopy(valid_report())
    _set(report, path, value)
    with pytest.raises(ValueError, match="^" + re.escape(where) + ":"):
        validate_memory_report(report)


def test_partial_peak_and_categories_are_accepted() -> None:
    report = valid_report()
    report["peak"] = _bytes(140, "workload", "partial")
    report["at_peak"]["by_category"]["temporaries"] = _bytes(40, "at_peak", "partial")
    validate_memory_report(report)


def test_complete_peak_refuses_partial_category() -> None:
    report = valid_report()
    report["at_peak"]["by_category"]["temporaries"] = _bytes(40, "at_peak", "partial")
    with pytest.raises(ValueError, match=r"^at_peak\.by_category: a complete peak"):
        validate_memory_report(report)


def test_not_an_object_and_duplicate_call() -> None:
    with pytest.raises(ValueError, match=r"^report: a memory report must be an object"):
        validate_memory_report([])
    report = valid_report()
    report["by_module"].append(copy.deepcopy(report["by_module"][0]))
    with pytest.raises(ValueError, match=r"^by_module\[1\]: duplicate module call"):
        validate_memory_report(report)
