"""validate_scaling_report (attention-and-scaling.md 2) on hand-written reports: exact locations."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.report.scaling_reports import scaling_report
from torchscan.report.validate import load_report, report_kind, validate_report
from torchscan.report.validate.scaling import validate_scaling_report


def test_the_hand_written_report_and_its_fits():
    report = scaling_report()
    fit = report["fits"]["flops"]["seq"]
    # 256·n² + 1,000·n from four of the five points (seq=64 failed): degree 2 with two spare points
    assert (fit["degree"], fit["coefficients"], fit["residuals"]) == (2, [0, 1000, 256], [0, 0, None, 0, 0])
    assert fit["by_operator"]["aten.bmm"]["coefficients"] == [0, 0, 256]
    assert fit["by_module_type"]["MLP"]["coefficients"] == [0, 900]
    # exponent between 128 (4,322,304 FLOPs) and 256 (17,033,216): log(17033216 / 4322304) / log(2)
    assert fit["exponent"] == pytest.approx(1.97848, abs=1e-5)
    assert [d["code"] for d in report["diagnostics"]] == ["scaling_fit_fewer_points"]
    validate_scaling_report(report)


def test_kind_dispatch_and_loading():
    report = scaling_report(latency=True)
    assert report_kind(report) == "scaling"
    assert validate_report(report) == "scaling"
    assert load_report(json.dumps(report)) == json.loads(json.dumps(report))
    grid = scaling_report(axes={"seq": [1, 2, 4], "batch": [1, 2, 3]}, failed_at=None, partial_at=8)
    validate_scaling_report(grid)
    assert grid["fits"]["flops"]["batch"]["status"] == "partial"  # point 8 (seq 4, batch 3) is in both series
    assert grid["fits"]["flops"]["seq"]["status"] == "partial"


def _set(path: list[Any], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(report: dict[str, Any]) -> None:
        target = report
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


def _drop(path: list[Any]) -> Callable[[dict[str, Any]], None]:
    def change(report: dict[str, Any]) -> None:
        target = report
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return change


def _both(numerators: list[int]) -> Callable[[dict[str, Any]], None]:
    """A consistent but wrong polynomial: coefficients and numerators agree, the values do not."""

    def change(report: dict[str, Any]) -> None:
        report["fits"]["flops"]["seq"]["numerators"] = list(numerators)
        report["fits"]["flops"]["seq"]["coefficients"] = list(numerators)

    return change


FIT = ["fits", "flops", "seq"]
BMM = [*FIT, "by_operator", "aten.bmm"]


@pytest.mark.parametrize(
    ("change", "location", "words"),
    [
        (_set(["report_type"], "generation"), "report_type", "must be 'scaling'"),
        (_set(["schema_version"], 2), "schema_version", "unsupported"),
        (_drop(["context", "workload"]), "context.workload", "missing"),
        (_set(["context", "metrics"], ["latency", "flops"]), "context.metrics", "in that order"),
        (_set(["context", "device"], 3), "context.device", "string or null"),
        (_set(["axes"], {}), "axes", "at least one axis"),
        (_set(["axes", "seq"], [16, 8, 64, 128, 256]), "axes.seq[1]", "strictly increasing"),
        (_set(["axes", "seq"], [0, 32, 64, 128, 256]), "axes.seq[0]", "int > 0"),
        (_set(["points", 1, "index"], 7), "points[1].index", "must be 1"),
        (_set(["points", 1, "sizes"], {"seq": 33}), "points[1].sizes", "grid of axes"),
        (_set(["points", 1, "flops", "unit"], "MACs"), "points[1].flops.unit", "must be FLOPs"),
        (_set(["points", 1, "flops", "status"], "finished"), "points[1].flops.status", "invalid status"),
        (_set(["points", 1, "memory_peak"], {}), "points[1].memory_peak", "not a requested metric"),
        (
            _set(["points", 1, "by_operator", "flops", "aten.bmm"], -1),
            "points[1].by_operator.flops['aten.bmm']",
            "nonnegative",
        ),
        (
            _set(["points", 2, "by_operator", "flops"], {"aten.mm": 1}),
            "points[2].by_operator.flops",
            "must be empty",
        ),
        (
            _set(["points", 1, "errors"], {"watts": "RuntimeError"}),
            "points[1].errors.watts",
            "metric or build",
        ),
        (_drop(["points", 4]), "points", "the 5 points"),
        (_drop(["fits", "flops"]), "fits", "one entry per requested metric"),
        (_set([*FIT, "method"], "least_squares"), "fits.flops.seq.method", "exact_rational_interpolation"),
        (_set([*FIT, "status"], "partial"), "fits.flops.seq.status", "must be complete"),
        (_set([*FIT, "points"], [0, 1, 3, 4]), "fits.flops.seq.points", "the series along this axis"),
        (
            _set([*FIT, "coefficients"], [0, 1000, 257]),
            "fits.flops.seq.coefficients[2]",
            "numerators / denominator",
        ),
        (
            _set([*FIT, "coefficients"], [0, 1000.0, 256]),
            "fits.flops.seq.coefficients[1]",
            "numerators / denominator",
        ),
        (_both([0, 1000, 257]), "fits.flops.seq.residuals[0]", "residual must be 0"),
        (_set([*FIT, "residuals"], [0, 0, None, 0, 1]), "fits.flops.seq.residuals[4]", "residual must be 0"),
        (_set([*FIT, "residuals"], [0, 0, 0, 0, 0]), "fits.flops.seq.residuals[2]", "must be null"),
        (_set([*FIT, "residuals"], [0, 0]), "fits.flops.seq.residuals", "one entry per point"),
        (_set([*FIT, "denominator"], 0), "fits.flops.seq.denominator", "int > 0"),
        (_set([*FIT, "degree"], None), "fits.flops.seq", "together or not at all"),
        (_set([*FIT, "exponent"], "two"), "fits.flops.seq.exponent", "finite number"),
        (_set([*FIT, "at"], {"batch": 1}), "fits.flops.seq.at", "largest sizes"),
        (_drop([*FIT, "by_operator", "aten.addmm"]), "fits.flops.seq.by_operator", "one fit per part"),
        (
            _set([*BMM, "coefficients"], [0, 0, 255]),
            "fits.flops.seq.by_operator['aten.bmm'].coefficients[2]",
            "numerators",
        ),
        (
            _set([*BMM, "numerators"], [0, 1, 256]),
            "fits.flops.seq.by_operator['aten.bmm'].coefficients[1]",
            "numerators",
        ),
        (_set(["diagnostics", 0, "severity"], "fatal"), "diagnostics[0].severity", "invalid severity"),
    ],
)
def test_each_broken_rule_names_its_location(change, location, words):
    report = copy.deepcopy(scaling_report())
    change(report)
    with pytest.raises(ValueError) as caught:
        validate_scaling_report(report)
    message = str(caught.value)
    assert message.startswith(f"{location}:") and words in message, message


def test_least_squares_fits_are_checked_to_rounding():
    report = scaling_report(latency=True)
    fit = report["fits"]["latency"]["seq"]
    assert fit["method"] == "least_squares" and "numerators" not in fit
    validate_scaling_report(report)
    broken = copy.deepcopy(report)
    broken["fits"]["latency"]["seq"]["residuals"][0] += 1e-3
    with pytest.raises(ValueError, match=r"^fits.latency.seq.residuals\[0\]: must be the value minus"):
        validate_scaling_report(broken)
    broken = copy.deepcopy(report)
    broken["fits"]["latency"]["seq"]["numerators"] = [1, 2, 3]
    with pytest.raises(ValueError, match="no exact numerators"):
        validate_scaling_report(broken)
    broken = copy.deepcopy(report)
    broken["points"][0]["latency_iqr"]["unit"] = "ms"
    with pytest.raises(ValueError, match=r"^points\[0\].latency_iqr.unit: must be seconds"):
        validate_scaling_report(broken)


def test_a_json_tree_is_required():
    report = scaling_report()
    report["points"][0]["flops"]["value"] = float("nan")
    with pytest.raises(ValueError, match="points"):
        validate_scaling_report(report)
    with pytest.raises(ValueError, match="must be an object"):
        validate_scaling_report([])
