"""The pure builders of measure_generation (generation.md 2) on hand-written by_step values."""

from __future__ import annotations

import pytest

from tests.report.generation_reports import flop_report
from torchscan.measure.generation_steps import (
    add_step_rooflines,
    context_lengths,
    fit_line,
    mean_result,
    step_bound,
    sum_results,
)
from torchscan.report.schema import metric_result


def _flops(status, value):
    return metric_result(status, value, unit="FLOPs", scope="step", method="m")


def _bytes(status, value):
    return metric_result(status, value, unit="bytes", scope="step", method="b")


def test_context_lengths_with_and_without_cache():
    assert context_lengths([16, 1, 1], use_cache=True) == [16, 17, 18]
    assert context_lengths([16, 17, 18], use_cache=False) == [16, 17, 18]
    assert context_lengths([16, None, 1], use_cache=True) == [16, None, None]  # unknown from there on
    assert context_lengths([16, None, 18], use_cache=False) == [16, None, 18]


def test_sums_and_means_follow_the_statuses():
    parts = [_flops("complete", 10), _flops("partial", 4)]
    total = sum_results(parts, "flops", "decode")
    assert (total["status"], total["known_value"], total["scope"]) == ("partial", 14, "decode")
    assert mean_result(parts, "flops", "decode_per_token")["known_value"] == 7
    assert mean_result([_flops("complete", 3), _flops("complete", 4)], "flops", "x")["value"] == 3.5
    unknown = [_flops("complete", 10), metric_result("unavailable", unit="FLOPs", scope="step", method="m")]
    assert sum_results(unknown, "flops", "decode")["status"] == "unavailable"
    assert sum_results([], "flops", "decode")["value"] == 0  # nothing ran: a complete zero
    assert mean_result([], "flops", "decode_per_token")["status"] == "unavailable"


def test_fit_is_exact_least_squares():
    # y = 2x + 1 with the middle point 3 too high: slope 2, intercept 2, residuals -1, 2, -1
    fit = fit_line([(1, 3), (2, 8), (3, 7)])
    assert fit == {"intercept": 2.0, "slope": 2.0, "max_residual": 2.0}
    with pytest.raises(ValueError):
        fit_line([(5, 1), (5, 2)])
    with pytest.raises(ValueError):
        fit_line([(5, 1)])


@pytest.mark.parametrize(
    ("flops", "moved", "bound"),
    [
        (_flops("complete", 100), _bytes("complete", 1000), "memory"),  # 1e-10 s < 1e-8 s
        (_flops("complete", 10**5), _bytes("complete", 1000), "compute"),  # 1e-7 s > 1e-8 s
        (_flops("complete", 10**4), _bytes("complete", 1000), "compute"),  # equal: compute
        (_flops("partial", 10**5), _bytes("complete", 1000), "compute"),  # a lower bound already above
        (_flops("partial", 100), _bytes("complete", 1000), None),  # the rest could be above
        (_flops("complete", 100), _bytes("partial", 1000), "memory"),
        (_flops("complete", 10**5), _bytes("partial", 1000), None),
    ],
)
def test_bound_decides_only_what_the_inputs_decide(flops, moved, bound):
    assert step_bound(flops, moved, 1e12, 1e11) == bound


def test_partial_flops_never_give_a_complete_roofline():
    steps = [
        {
            "index": 0,
            "phase": "prefill",
            "input_tokens": 4,
            "context_tokens": 4,
            "flops": _flops("partial", 100),
            "operator_bytes": _bytes("complete", 1000),
            "attention_kv_bytes": _bytes("complete", 64),
        }
    ]
    notes = add_step_rooflines(steps, {"name": "x", "peak_flops_per_second": 1e12})  # no bandwidth
    step = steps[0]
    assert step["arithmetic_intensity"]["status"] == "partial"  # 0.1 FLOPs/byte at least
    assert step["arithmetic_intensity"]["known_value"] == 0.1
    assert step["roofline_seconds"]["status"] == "unavailable" and step["bound"] is None
    assert [n["code"] for n in notes] == ["roofline_needs_bandwidth"]
    notes = add_step_rooflines(
        steps, {"name": "x", "peak_flops_per_second": 1e12, "memory_bandwidth_bytes_per_second": 1e11}
    )
    assert steps[0]["roofline_seconds"]["status"] == "partial" and notes == []


def test_the_hand_written_flop_report_is_a_valid_flop_report():
    from torchscan.report.validate.operators import validate_flop_report

    validate_flop_report(flop_report())
