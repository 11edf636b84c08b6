"""Numbers beyond the float range never crash a reader; overflowing deltas are unavailable (item 1)."""

from __future__ import annotations

import copy
import json

import pytest
import torch
from torch import nn

from torchscan import compare_benchmarks, compare_reports, crawl_module, render_report
from torchscan.measure.latency import measure_latency
from torchscan.report.diff import DELTA_OUT_OF_RANGE, metric_diff
from torchscan.report.schema import MAX_NUMBER, metric_result
from torchscan.report.validate import load_report, validate_benchmark_comparison, validate_report


@pytest.fixture(scope="module")
def analysis():
    return crawl_module(nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2)), (4,))


@pytest.fixture(scope="module")
def benchmark():
    x = torch.ones(4)
    return measure_latency(lambda: x + 1, device="cpu", inputs=x, min_run_time=0.001, min_repeats=2)


def _set(result, number):
    result["value"] = result["known_value"] = number


@pytest.mark.parametrize("number", [10**400, -(10**400), MAX_NUMBER + 1, 2**1024])
def test_validation_rejects_ints_float_cannot_represent(analysis, benchmark, number):
    report = copy.deepcopy(analysis)
    _set(report["totals"]["parameters"], number)
    with pytest.raises(ValueError, match=r"^totals\.parameters\.value: "):
        validate_report(report)
    with pytest.raises(ValueError, match=r"^before\.totals\.parameters\.value: "):
        compare_reports(report, analysis)
    with pytest.raises(ValueError, match=r"totals\.parameters"):
        render_report(report)
    timing = copy.deepcopy(benchmark)
    _set(timing["totals"]["latency"], number)
    with pytest.raises(ValueError, match=r"^before\.totals\.latency\.value: "):
        compare_benchmarks(timing, benchmark, check=lambda: None)
    inputs = copy.deepcopy(analysis)
    inputs["inputs"]["args"][0]["shape"][0] = number  # anywhere in the tree, not only in metrics
    with pytest.raises(ValueError, match=r"inputs\.args\[0\]\.shape\[0\]: .*beyond the float range"):
        validate_report(inputs)


def test_load_report_rejects_out_of_range_literals(analysis):
    text = json.dumps(analysis).replace('"schema_version": 1', '"schema_version": 1, "x": 1e400', 1)
    with pytest.raises(ValueError, match=r"^x: "):
        load_report(text)


def _signed(number):
    return metric_result("complete", number, unit="elements", scope="module_call", method="m", signed=True)


def test_overflowing_delta_is_unavailable_with_a_diagnostic():
    # 1.7e308 - (-1.7e308) = 3.4e308 > max float (~1.797e308): it would be inf, which is not JSON.
    diff = metric_diff(_signed(-1.7e308), _signed(1.7e308), "effective_padding")
    assert diff["status"] == "unavailable" and diff["delta"] is None
    assert diff["diagnostics"] == [
        {
            "code": DELTA_OUT_OF_RANGE,
            "severity": "warning",
            "metric": "effective_padding",
            "message": "The difference of the two complete values is beyond the float range: no delta.",
        }
    ]
    json.dumps(diff, allow_nan=False)
    # Ints: MAX_NUMBER - (-MAX_NUMBER) is an exact int that float() cannot convert.
    assert metric_diff(_signed(-MAX_NUMBER), _signed(MAX_NUMBER), "x")["delta"] is None
    assert metric_diff(_signed(-1), _signed(MAX_NUMBER - 1), "x")["delta"] == MAX_NUMBER


def test_compare_reports_overflowing_total(analysis):
    before, after = copy.deepcopy(analysis), copy.deepcopy(analysis)
    before["totals"]["spread"] = _signed(-1.7e308)
    after["totals"]["spread"] = _signed(1.7e308)
    diff = compare_reports(before, after)
    assert diff["totals"]["spread"]["status"] == "unavailable"
    assert diff["totals"]["spread"]["diagnostics"][0]["code"] == DELTA_OUT_OF_RANGE
    json.dumps(diff, allow_nan=False)
    render_report(after, before=before)  # the comparison view shows it without raising


def test_compare_benchmarks_overflowing_total(benchmark):
    before, after = copy.deepcopy(benchmark), copy.deepcopy(benchmark)
    before["totals"]["spread"] = _signed(-1.7e308)
    after["totals"]["spread"] = _signed(1.7e308)
    comparison = compare_benchmarks(before, after, check=lambda: None)
    assert comparison["totals"]["spread"]["status"] == "unavailable"
    assert comparison["totals"]["spread"]["delta"] is None
    assert len(comparison) == 8
    text = json.dumps(comparison, allow_nan=False)
    validate_benchmark_comparison(json.loads(text))
    assert isinstance(render_report(comparison), str)


def test_views_survive_sums_and_scales_beyond_the_float_range(analysis, benchmark):
    # Each value fits a float; their sum (2 * MAX_NUMBER) and seconds * 1000 do not.
    report = copy.deepcopy(analysis)
    for layer in report["layers"][1:]:
        for name in ("module_flops", "macs", "dmas"):
            _set(layer["metrics"][name], MAX_NUMBER)
    for fmt in ("html", "svg"):
        assert render_report(report, format=fmt)
        assert render_report(report, format=fmt, before=analysis)
    timing = copy.deepcopy(benchmark)
    _set(timing["totals"]["latency"], MAX_NUMBER)
    assert "beyond the float range" in render_report(timing)


def test_cli_delta_names_the_overflow():
    from torchscan.cli.format import delta

    diff = metric_diff(_signed(-1.7e308), _signed(1.7e308), "spread")
    assert delta(diff) == "unknown (difference beyond the float range)"
    assert delta(metric_diff(_signed(1), _signed(3), "spread")) == "+2"
