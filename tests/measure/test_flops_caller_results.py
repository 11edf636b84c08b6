"""Caller formula results and sums that leave the float range (issue #20, item 10).

A FLOP count is an integer: a caller formula returning ``0.9`` is a bug in the formula, reported as
``unsupported_operator_formula`` (the total becomes partial), never truncated to a complete 0
(formulas.md B.4: an invalid caller result is reported like a formula that cannot describe the call).
Per-call results that each fit a float but whose sum would not are reported the same way, so the
report is always produced and never carries an unrepresentable number.
"""

from __future__ import annotations

import json
import sys

import pytest
import torch
from torch import nn

from torchscan import crawl_module, measure_flops, render_report
from torchscan.report.validate import validate_analysis_report

MAX = int(sys.float_info.max)


def _sin_report(result: object, calls: int = 1) -> dict:
    x = torch.ones(5)
    mapping = {torch.ops.aten.sin: lambda *args, **kwargs: result}
    return measure_flops(lambda: [torch.sin(x) for _ in range(calls)], custom_mapping=mapping)


def _diagnostic(report: dict) -> dict:
    (entry,) = report["diagnostics"]
    assert entry["code"] == "unsupported_operator_formula" and entry["operator"] == "aten.sin"
    return entry


@pytest.mark.parametrize("result", [0.9, 2.5, 1e-300])
def test_non_integral_caller_result_is_reported_not_truncated(result):
    report = _sin_report(result)
    assert report["total"]["status"] == "partial" and report["total"]["known_value"] == 0
    assert repr(result) in _diagnostic(report)["message"]
    assert report["by_operator"] == {}


def test_integral_float_caller_result_counts_exactly():
    report = _sin_report(5.0)
    assert report["total"]["status"] == "complete" and report["total"]["value"] == 5
    assert type(report["total"]["value"]) is int


@pytest.mark.parametrize("result", [True, -1, float("nan"), float("inf"), "5", MAX + 1])
def test_other_invalid_caller_results_stay_reported(result):
    report = _sin_report(result)
    assert report["total"]["status"] == "partial"
    _diagnostic(report)


def test_sum_beyond_float_range_gives_a_partial_report_not_an_error():
    # each call returns MAX (a float fits it); two calls would sum to 2 * MAX, beyond the range
    report = _sin_report(MAX, calls=3)
    assert report["total"]["status"] == "partial" and report["total"]["known_value"] == MAX
    assert report["by_operator"] == {"aten.sin": MAX}
    assert "float range" in _diagnostic(report)["message"]
    json.dumps(report, allow_nan=False)  # every number is representable


def test_crawl_module_sum_beyond_float_range_gives_a_valid_report():
    model = nn.Sequential(nn.Tanh(), nn.Tanh(), nn.Tanh())
    mapping = {torch.ops.aten.tanh: lambda *args, **kwargs: MAX}
    report = crawl_module(model, (3,), custom_mapping=mapping)
    operator = report["totals"]["operator_flops"]
    assert operator["status"] == "partial" and operator["known_value"] == MAX
    validate_analysis_report(json.loads(json.dumps(report, allow_nan=False)))
    render_report(report)


def test_handler_estimates_summing_beyond_float_range_give_an_unavailable_total():
    from torchscan import ModuleHandler

    handlers = {nn.Tanh: ModuleHandler(lambda call: {"module_flops": MAX, "macs": float(MAX), "dmas": 1})}
    report = crawl_module(nn.Sequential(nn.Tanh(), nn.Tanh()), (3,), custom_modules=handlers)
    totals = report["totals"]
    assert totals["module_flops"]["status"] == "unavailable" and totals["macs"]["status"] == "unavailable"
    assert totals["dmas"]["status"] == "complete" and totals["dmas"]["value"] == 2
    codes = {(d["code"], d["metric"]) for d in report["diagnostics"]}
    assert {("total_out_of_range", "module_flops"), ("total_out_of_range", "macs")} <= codes
    assert [layer["metrics"]["module_flops"]["value"] for layer in report["layers"][1:]] == [MAX, MAX]
    validate_analysis_report(json.loads(json.dumps(report, allow_nan=False)))
    render_report(report)
