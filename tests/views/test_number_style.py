"""The one number style of every page (views-3.md 5, views/common/number_style.py)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchscan.report.schema import NOT_APPLICABLE, metric_result
from torchscan.views.common.number_style import (
    change,
    duration,
    measure,
    measure_status,
    quantity,
    share,
    status_measure,
)

E_NOTATION = re.compile(r"\d[eE][+-]?\d")


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (164_000, "FLOPs", "164.0 kFLOPs"),  # the spec's own example
        (12_785_376, "FLOPs", "12.79 MFLOPs"),
        (999_960, "FLOPs", "1.000 MFLOPs"),  # rounded before the prefix is chosen
        (640, "FLOPs", "640 FLOPs"),
        (0, "FLOPs", "0 FLOPs"),
        (3_200_000_000_000, "FLOPs/s", "3.200 TFLOP/s"),
        (5_450, "elements", "5.450 k elements"),
        (4_935_456, "bytes", "4.707 MiB"),  # 4,935,456 / 1,048,576 = 4.7068
        (3_232, "bytes", "3.156 KiB"),  # 3,232 / 1,024 = 3.15625
        (800, "bytes", "800 B"),
        (0.0209316, "seconds", "20.93 ms"),
        (3.351e-5, "seconds", "33.51 µs"),
        (2.5, "seconds", "2.500 s"),
        (0.322, "FLOPs/byte", "0.322 FLOPs/byte"),
        (0.44312, "ratio", "44.3 %"),
        (1.7e308, "FLOPs", "1.7 × 10³⁰⁸ FLOPs"),
        (170_507.4, "images/s", "170.5 k images/s"),
    ],
)
def test_quantity(value: float, unit: str, text: str) -> None:
    assert quantity(value, unit) == text


def test_one_percentage_precision() -> None:
    assert [share(r) for r in (0.46, 0.443, 1, 0, 1.2)] == ["46.0 %", "44.3 %", "100.0 %", "0.0 %", "120.0 %"]
    # a sliver is not nothing, and almost all is not all
    assert share(9.6e-8) == "< 0.1 %" and share(0.9999993) == "> 99.9 %"
    assert change(-11_200_742_400, "FLOPs", 22_403_652_352) == "-11.20 GFLOPs (-50.0 %)"
    assert change(0, "FLOPs", 7) == "+0 FLOPs (+0.0 %)" and change(5, "FLOPs") == "+5 FLOPs"
    assert duration(0) == "0 s"


def test_results_keep_their_status_and_not_applicable() -> None:
    def result(status: str, value: float | None, method: str = "m") -> dict:
        known = value if status != "unavailable" else None
        return dict(
            metric_result(
                status,
                known if status == "complete" else None,
                known_value=known,
                unit="bytes",
                scope="step",
                method=method,
            )
        )  # type: ignore[arg-type]

    assert measure(result("complete", 2048)) == "2.000 KiB"
    assert measure(result("partial", 2048)) == "≥ 2.000 KiB"
    assert measure(result("unavailable", None)) == "unknown" and measure(None) == "unknown"
    assert measure_status(result("partial", 7)) == "≥ 7 B · partial"
    assert status_measure(result("partial", 7)) == "partial · ≥ 7 B · full value unknown"
    # views-3.md 5: an attention-free model's KV bytes are not applicable, whatever produced them
    absent = result("unavailable", None, method=NOT_APPLICABLE)
    assert measure(absent) == measure_status(absent) == status_measure(absent) == "not applicable"


@given(
    st.floats(min_value=-1e30, max_value=1e30, allow_nan=False, allow_infinity=False),
    st.sampled_from(["FLOPs", "bytes", "seconds", "elements", "FLOPs/s"]),
)
def test_never_e_notation_and_at_most_four_significant_digits(value: float, unit: str) -> None:
    text = quantity(value, unit)
    assert not E_NOTATION.search(text), text
    number = text.split(" ")[0].lstrip("-").replace(",", "")
    if "×" not in text and "." in number:  # a scaled or fractional value: four significant digits at most
        digits = number.replace(".", "").lstrip("0")
        assert len(digits) <= 4, text
