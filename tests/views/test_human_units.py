"""Issue 23 item 5: human units in views (views/common/text.py), never e-notation."""

from __future__ import annotations

import re

import pytest

from torchscan.views.common.text import (
    duration,
    fixed,
    human,
    human_delta,
    human_result,
    percent,
    relative,
    scientific,
)

E_NOTATION = re.compile(r"\d[eE][+-]?\d")


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (0.000149641, "seconds", "149.6 µs"),
        (0.0123456, "seconds", "12.35 ms"),
        (2.5, "seconds", "2.5 s"),
        (12345.6, "seconds", "12,346 s"),
        (4e-9, "seconds", "4 ns"),
        (0.198953, "ratio", "19.9 %"),
        (1.98953e10, "FLOPs/s", "19.9 GFLOP/s"),
        (3.2e12, "FLOPs/s", "3.2 TFLOP/s"),
        (22_403_652_352, "FLOPs", "22.4 GFLOPs"),
        (999, "FLOPs", "999 FLOPs"),
        (170_507.4, "samples/s", "170,507 samples/s"),
        (1.705e5, "items/s", "170,500 items/s"),
        (3 * 1024**2, "bytes", "3 MiB"),
        (512, "bytes", "512 B"),
        (3e-5, "elements", "0.00003 elements"),
    ],
)
def test_human(value: float, unit: str, text: str) -> None:
    assert human(value, unit) == text
    assert not E_NOTATION.search(text)


def test_deltas_carry_sign_and_percent() -> None:
    assert human_delta(-3.96022e-06, "seconds", 0.000149641) == "-3.96 µs (-2.65 %)"
    assert human_delta(-11_200_742_400, "FLOPs", 22_403_652_352) == "-11.2 GFLOPs (-50 %)"
    assert human_delta(5, "FLOPs") == "+5 FLOPs"
    assert human_delta(5, "FLOPs", 0) == "+5 FLOPs"
    assert relative(0, 7) == "0 %"
    assert relative(1, None) is None


def test_fixed_never_uses_e_notation() -> None:
    for value in (1e-12, 1.5e-7, 1e20, 123456789.123, -0.000042):
        assert not E_NOTATION.search(fixed(value)), fixed(value)
    assert fixed(1e17) == "100,000,000,000,000,000"
    assert (
        fixed(1e20) == "1 × 10²⁰" and fixed(-1.7e308) == "-1.7 × 10³⁰⁸" and fixed(5e-324) == "4.941 × 10⁻³²⁴"
    )
    assert scientific(123456, 4) == "1.235 × 10⁵"
    assert fixed(0) == "0" and fixed(float("inf")) == "beyond the float range"
    assert duration(0) == "0 ns" and percent(1) == "100 %"


def test_results_keep_their_status() -> None:
    def result(status: str, value: float | None, known: float | None) -> dict:
        return {"status": status, "value": value, "known_value": known, "unit": "seconds"}

    assert human_result(result("complete", 0.5, 0.5)) == "500 ms"
    assert human_result(result("partial", None, 0.25)) == "at least 250 ms (lower bound; full value unknown)"
    assert human_result(result("unavailable", None, None)) == "unknown"
    assert human_result(None) == "unknown"


def test_analysis_roofline_in_human_units() -> None:
    import json

    import torch

    from torchscan import crawl_module
    from torchscan.views.common.roofline_svg import _ratio_text, _tick, roofline_section

    assert [_tick(p) for p in (-8, -2, 0, 3, 11, 17, 18, 400)] == [
        "10⁻⁸",
        "0.01",
        "1",
        "1 k",
        "100 G",
        "100 P",
        "10¹⁸",
        "10⁴⁰⁰",
    ]
    assert _ratio_text(100, 50) == "2" and _ratio_text(1.7e308, 5e-324) == "3.44 × 10⁶³¹"
    hardware = {"name": "stated", "peak_flops_per_second": 1e11, "memory_bandwidth_bytes_per_second": 2e10}
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
    report = json.loads(json.dumps(crawl_module(model, input_shape=(8,), hardware=hardware)))
    html = roofline_section(report)
    # the page style (views-3.md 5): four significant digits
    assert "peak 100.0 GFLOP/s, bandwidth 20.00 GB/s" in html and "stated peak 100.0 GFLOP/s" in html
    assert not E_NOTATION.search(html.replace('"', " ")) and ">1e" not in html


def test_prefixes_are_chosen_after_rounding() -> None:
    from torchscan.views.common.text import compact

    assert compact(999_600) == "1M" and compact(1.5e15) == "1,500T" and compact(1234) == "1.23K"
    assert compact(999) == "999" and compact(0.5) == "0.5" and compact(0.00001) == "0.00001"
    assert human(999_600, "FLOPs") == "1 MFLOPs" and human(999, "FLOPs") == "999 FLOPs"
    assert human(1.5e18, "FLOPs") == "1,500 PFLOPs"
