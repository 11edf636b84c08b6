"""Validation and option errors of render_report (render.md 1, 7.1-7.2)."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest
from view_reports import benchmark_report, m, tiny_report

from torchscan.report.validate import load_report, validate_analysis_report
from torchscan.views.render import render_report


@pytest.mark.parametrize("fmt", ["pdf", None, [], "HTML"])
def test_bad_format(fmt: Any) -> None:
    with pytest.raises(ValueError, match="format"):
        render_report(tiny_report(), format=fmt)


# Issue 15 makes "operator_flops" a view and None the "most complete view" default.
@pytest.mark.parametrize("metric", ["operator_flops_self", "calls", 3, "", b"macs"])
def test_bad_metric(metric: Any) -> None:
    with pytest.raises(ValueError, match="metric"):
        render_report(tiny_report(), metric=metric)


@pytest.mark.parametrize("title", [None, 5, "bad\x00title"])
def test_bad_title(title: Any) -> None:
    with pytest.raises(ValueError, match="title"):
        render_report(tiny_report(), title=title)


def test_before_schema_version() -> None:
    with pytest.raises(ValueError, match="schema_version"):
        render_report(tiny_report(), before={"schema_version": 5})


def test_cycle_in_inputs() -> None:
    report = tiny_report()
    report["inputs"]["self"] = report["inputs"]
    with pytest.raises(ValueError, match="acyclic"):
        render_report(report)


def _flop_report() -> dict[str, Any]:
    return copy.deepcopy(tiny_report()["operator_flops"])


def _report_diff() -> dict[str, Any]:
    return {"schema_version": 1, "totals": {}, "layers": {"added": [], "removed": [], "changed": []}}


def test_a_standalone_flop_report_renders() -> None:
    # views-3.md 4 amends render.md 1.1, which refused a standalone FlopReport.
    page = render_report(_flop_report())
    assert "<h1>TorchScan analysis</h1>" in page and 'id="operators"' in page
    assert render_report(_flop_report(), format="svg").startswith("<svg")


@pytest.mark.parametrize(
    "candidate",
    [
        _report_diff(),
        {"peak_bytes": 10, "status": "complete", "device": "cpu"},
        {"layers": [], "totals": {}},
        {**tiny_report(), "schema_version": 2},
        {**tiny_report(), "schema_version": True},
        {**tiny_report(), "schema_version": 1.0},
        [],
        "report",
        None,
    ],
)
def test_rejected_kinds(candidate: Any) -> None:
    with pytest.raises(ValueError):
        render_report(candidate)
    with pytest.raises(ValueError):
        render_report(candidate, format="svg")


def test_benchmark_svg_and_before_rejected() -> None:
    with pytest.raises(ValueError, match="format"):
        render_report(benchmark_report(), format="svg")
    with pytest.raises(ValueError, match="before"):
        render_report(benchmark_report(), before=tiny_report())


def _set(path: str, value: Any):
    def mutate(report: dict[str, Any]) -> None:
        target: Any = report
        keys = path.split("/")
        for key in keys[:-1]:
            target = target[int(key)] if isinstance(target, list) else target[key]
        last = keys[-1]
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value

    return mutate


def _delete(path: str):
    def mutate(report: dict[str, Any]) -> None:
        keys = path.split("/")
        target: Any = report
        for key in keys[:-1]:
            target = target[int(key)] if isinstance(target, list) else target[key]
        del target[keys[-1]]

    return mutate


def _duplicate(report: dict[str, Any]) -> None:
    report["layers"].append(copy.deepcopy(report["layers"][1]))


def _int_key(report: dict[str, Any]) -> None:
    report["inputs"][3] = "x"


def _bad_owner(report: dict[str, Any]) -> None:
    report["layers"][1]["metric_owners"] = {"macs": {"path": "nowhere", "call_index": 0}}


def _covered_with_value(report: dict[str, Any]) -> None:
    report["layers"][1]["metric_owners"] = {"macs": {"path": "", "call_index": 0}}


def _bad_ownership(report: dict[str, Any]) -> None:
    report["layers"][0]["metric_ownership"] = {"macs": "everything"}


CASES = [
    ("nan", _set("inputs/x", math.nan), "finite number", "inputs.x"),
    ("object", _set("inputs/x", object()), "finite number", "inputs.x"),
    ("tuple", _set("inputs/x", (1, 2)), "finite number", "inputs.x"),
    ("int key", _int_key, "string", "inputs"),
    ("nul", _set("layers/1/type", "Lin\x00ear"), "invalid text", "layers[1].type"),
    ("surrogate", _set("context/model_type", "\ud800"), "invalid text", "context.model_type"),
    ("fffe", _set("layers/1/name", "\ufffe"), "invalid text", "layers[1].name"),
    ("layers dict", _set("layers", {}), "layers", "layers"),
    ("diagnostics dict", _set("diagnostics", {}), "diagnostics", "diagnostics"),
    ("context list", _set("context", []), "must be an object", "context"),
    ("inputs list", _set("inputs", []), "must be an object", "inputs"),
    (
        "bogus status",
        _set("layers/1/metrics/macs/status", "bogus"),
        "invalid status",
        "layers[1].metrics.macs.status",
    ),
    (
        "complete 1/2",
        _set("layers/1/metrics/macs", {**m("complete", 1, "MACs"), "known_value": 2}),
        "invariant",
        "layers[1].metrics.macs",
    ),
    (
        "partial 1/1",
        _set("layers/1/metrics/macs", {**m("partial", 1, "MACs"), "value": 1}),
        "invariant",
        "layers[1].metrics.macs.value",
    ),
    (
        "unavailable 0",
        _set("layers/1/metrics/macs", {**m("unavailable", None, "MACs"), "value": 0}),
        "invariant",
        "layers[1].metrics.macs",
    ),
    (
        "bool value",
        _set("layers/1/metrics/macs", {**m("complete", 1, "MACs"), "value": True, "known_value": True}),
        "finite number",
        "layers[1].metrics.macs.value",
    ),
    ("inf", _set("totals/macs/value", math.inf), "finite number", "totals.macs.value"),
    (
        "missing value key",
        _delete("layers/1/metrics/macs/value"),
        "invariant",
        "layers[1].metrics.macs.value",
    ),
    ("unit type", _set("layers/1/metrics/macs/unit", 3), "must be a string", "layers[1].metrics.macs.unit"),
    ("duplicate call", _duplicate, "duplicate layer call", "layers[4]"),
    ("call_index", _set("layers/2/call_index", -1), "nonnegative integer", "layers[2].call_index"),
    ("depth bool", _set("layers/2/depth", True), "nonnegative integer", "layers[2].depth"),
    ("bad path", _set("layers/2/path", "bad..path"), "empty module component", "layers[2].path"),
    (
        "shared int",
        _set("layers/1/parameters/shared", 1),
        "shared must be a boolean",
        "layers[1].parameters.shared",
    ),
    (
        "buffers shared",
        _set("layers/1/buffers/shared", None),
        "shared must be a boolean",
        "layers[1].buffers.shared",
    ),
    (
        "trainable",
        _set("layers/1/parameters/trainable", -3),
        "nonnegative integer",
        "layers[1].parameters.trainable",
    ),
    (
        "operator schema",
        _set("operator_flops/schema_version", 2),
        "operator schema_version",
        "operator_flops",
    ),
    (
        "by_module",
        _set("operator_flops/by_module/Sequential", -1),
        "nonnegative integer",
        "operator_flops.by_module",
    ),
    (
        "ignored reason",
        _set("operator_flops/ignored_operators/aten.t/reason", 0),
        "reason must be a string",
        "operator_flops.ignored_operators",
    ),
    (
        "severity",
        _set("diagnostics", [{"code": "c", "severity": "fatal", "metric": "m", "message": "x"}]),
        "invalid severity",
        "diagnostics[0].severity",
    ),
    (
        "diag path",
        _set("diagnostics", [{"code": "c", "severity": "error", "metric": "m", "message": "x", "path": 1}]),
        "must be a string",
        "diagnostics[0].path",
    ),
    ("operator total", _set("operator_flops/total/value", 7), "invariant", "operator_flops.total"),
    (
        "mismatched operator total",
        _set("totals/operator_flops", m("complete", 1, method="x", scope="workload")),
        "must match",
        "totals.operator_flops",
    ),
    (
        "devices int",
        _set("context/devices", 1),
        "context.devices must be a list of strings",
        "context.devices",
    ),
    (
        "devices list",
        _set("context/devices", [1]),
        "context.devices must be a list of strings",
        "context.devices",
    ),
    (
        "dtypes str",
        _set("context/dtypes", "cpu"),
        "context.dtypes must be a list of strings",
        "context.dtypes",
    ),
    (
        "negative cost",
        _set("layers/1/metrics/macs", {**m("complete", 1, "MACs"), "value": -1, "known_value": -1}),
        "negative additive cost",
        "layers[1].metrics.macs.known_value",
    ),
    ("bad owner", _bad_owner, "names no layer call", "layers[1].metric_owners.macs"),
    ("covered value", _covered_with_value, "covered call carries no value", "layers[1].metric_owners.macs"),
    ("bad ownership", _bad_ownership, "module_call or subtree", "layers[0].metric_ownership.macs"),
]


@pytest.mark.parametrize(("name", "mutate", "phrase", "location"), CASES, ids=[c[0] for c in CASES])
def test_validation_names_location(name: str, mutate, phrase: str, location: str) -> None:
    report = tiny_report()
    mutate(report)
    with pytest.raises(ValueError, match=phrase) as caught:
        render_report(report)
    assert location in str(caught.value)
    with pytest.raises(ValueError, match=phrase):
        render_report(tiny_report(), before=report)


def test_deep_nesting_is_rejected_without_recursion_error() -> None:
    report = tiny_report()
    deep: Any = {}
    report["inputs"]["deep"] = deep
    for _ in range(5000):
        deep["x"] = {}
        deep = deep["x"]
    with pytest.raises(ValueError, match="acyclic"):
        render_report(report)


def test_before_errors_name_before() -> None:
    before = tiny_report()
    before["layers"][1]["metrics"]["macs"]["status"] = "bogus"
    with pytest.raises(ValueError, match=r"before\.layers\[1\]\.metrics\.macs\.status"):
        validate_analysis_report(before, "before")


def test_load_report_refuses_nan_and_checks() -> None:
    import json

    text = json.dumps(tiny_report())
    assert load_report(text) == tiny_report()
    with pytest.raises(ValueError, match="finite number"):
        load_report(text.replace('"value": 56', '"value": NaN', 1))
    with pytest.raises(ValueError, match="JSON"):
        load_report("{")
