"""metric_result(..., known_value=) and the float-range bound on numbers (issue #11, items 1 and 3)."""

from __future__ import annotations

import pytest

import torchscan
from torchscan.report.schema import MAX_NUMBER, metric_result

LABELS = {"unit": "FLOPs", "scope": "module_call", "method": "m"}


def test_partial_with_known_value_keyword():
    result = torchscan.metric_result("partial", known_value=7, **LABELS)
    assert result == {"status": "partial", "value": None, "known_value": 7, **LABELS}
    # The positional spelling stays equivalent.
    assert result == metric_result("partial", 7, **LABELS)


def test_complete_accepts_equal_known_value_only():
    assert metric_result("complete", 5, known_value=5, **LABELS)["known_value"] == 5
    for bad in (4, None, True):
        with pytest.raises(ValueError, match="known_value == value"):
            metric_result("complete", 5, known_value=bad, **LABELS)


@pytest.mark.parametrize(
    ("status", "value", "known"),
    [("unavailable", None, 3), ("partial", 3, 3), ("partial", None, None)],
)
def test_known_value_rejections(status, value, known):
    with pytest.raises((ValueError, TypeError)):
        metric_result(status, value, known_value=known, **LABELS)


def test_partial_known_value_is_checked_like_any_number():
    with pytest.raises(ValueError, match="known_value must be >= 0"):
        metric_result("partial", known_value=-1, **LABELS)


@pytest.mark.parametrize("number", [10**400, MAX_NUMBER + 1, 2**1024])
def test_ints_beyond_the_float_range_are_rejected(number):
    with pytest.raises(ValueError, match="finite"):
        metric_result("complete", number, **LABELS)
    with pytest.raises(ValueError, match="finite"):
        metric_result("partial", known_value=-number, signed=True, **LABELS)


def test_largest_representable_int_is_accepted():
    assert metric_result("complete", MAX_NUMBER, **LABELS)["value"] == MAX_NUMBER
    assert float(MAX_NUMBER) > 1e308


@pytest.mark.parametrize("signed", ["no", "", 0, 1, None])
def test_signed_must_be_a_bool(signed):
    # issue #20 item 10: a truthy "no" must not quietly allow negative numbers
    with pytest.raises(TypeError, match="signed"):
        metric_result("complete", 1, signed=signed, **LABELS)
