"""The explorer's roofline chart and the benchmark page's utilization rows (training-and-hardware.md 3)."""

from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET

import pytest
from torch import nn
from view_parse import parse_html
from view_reports import benchmark_report

from torchscan import crawl_module
from torchscan.report.schema import metric_result
from torchscan.views.common.roofline_svg import roofline_section
from torchscan.views.render import render_report

NS = "{http://www.w3.org/2000/svg}"
FACTS = {"name": "test <b>&", "peak_flops_per_second": 100.0, "memory_bandwidth_bytes_per_second": 50.0}


def _report(hardware=FACTS):
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Dropout())
    return json.loads(json.dumps(crawl_module(model, (2, 4), hardware=hardware)))


def _svg(html: str) -> ET.Element:
    start = html.index('<svg xmlns="http://www.w3.org/2000/svg" class="roofline"')
    return ET.fromstring(html[start : html.index("</svg>", start) + len("</svg>")])


def test_chart_draws_one_point_per_call_on_the_stated_roof() -> None:
    report = _report()
    html = render_report(report)
    root = parse_html(html)
    assert root.by_id("roofline") is not None
    svg = _svg(html)
    circles = svg.findall(f"{NS}circle")
    # Linear and ReLU have positive intensities; Dropout in eval moves data but does no FLOPs (zero
    # intensity: a log axis has no place for it, so it is counted in the note instead)
    assert len(circles) == 2
    titles = sorted(circle.find(f"{NS}title").text for circle in circles)
    assert titles[0].startswith("0 #0 (Linear): intensity 0.414 FLOPs/byte")  # 48 / 116
    assert "roofline time 2.320 s (model, not measured)" in titles[0]  # max(48/100, 116/50)
    assert titles[1].startswith("1 #0 (ReLU): intensity 0.125 FLOPs/byte")  # 6 / 48
    assert len(svg.findall(f"{NS}polyline")) == 1  # the roof: stated bandwidth slope, then the peak
    text = " ".join(root.by_id("roofline").text().split())
    assert "1 call(s) with an unavailable or zero intensity are not drawn" in text
    assert "never a measurement" in text and "no device table" in text
    assert "test <b>&" in text and "test <b>&" not in html  # the stated name is escaped
    assert len(root.find_all("script")) == 2  # the chart adds no script (CSP unchanged)


def test_no_chart_without_hardware() -> None:
    report = json.loads(json.dumps(crawl_module(nn.Linear(4, 3), (2, 4))))
    assert roofline_section(report) == ""
    assert parse_html(render_report(report)).by_id("roofline") is None


def test_without_bandwidth_points_claim_no_height() -> None:
    report = _report({"name": "peak only", "peak_flops_per_second": 100.0})
    svg = _svg(render_report(report))
    assert not svg.findall(f"{NS}polyline")  # no slope can be drawn without a stated bandwidth
    heights = {circle.get("cy") for circle in svg.findall(f"{NS}circle")}
    assert len(heights) == 1  # a strip along the intensity axis
    assert "no bandwidth stated" in svg.find(f"{NS}title").text


def test_partial_points_are_hollow_and_hostile_types_escaped() -> None:
    report = _report()
    layer = next(layer for layer in report["layers"] if layer["path"] == "0")
    layer["type"] = "<script>alert(1)</script>"
    layer["metrics"]["module_flops"] = metric_result(
        "partial", known_value=48, unit="FLOPs", scope="module_call", method="torchscan_module_formula"
    )
    html = render_report(report)
    assert "<script>alert(1)" not in html
    circle = next(c for c in _svg(html).findall(f"{NS}circle") if "alert" in c.find(f"{NS}title").text)
    assert circle.get("fill") == "none"
    assert "intensity ≥ 0.414" in circle.find(f"{NS}title").text


def _with_hardware(report):
    report = copy.deepcopy(report)
    report["context"]["hardware"] = {"name": "stated <gpu>", "peak_flops_per_second": 1e9}
    labels = {"scope": "warmed_block_average"}
    report["totals"]["achieved_flops_per_second"] = metric_result(
        "complete", 96.0, unit="FLOPs/s", method="operator_flops_over_block_average_latency", **labels
    )
    report["totals"]["model_flops_utilization"] = metric_result(
        "partial", known_value=9.6e-8, unit="ratio", method="achieved_flops_over_stated_peak", **labels
    )
    report["totals"]["hardware_flops_utilization"] = metric_result(
        "unavailable", unit="ratio", method="achieved_flops_over_stated_peak", **labels
    )
    return report


def test_benchmark_page_shows_utilization_with_status() -> None:
    page = parse_html(render_report(_with_hardware(benchmark_report())))
    section = page.by_id("hardware")
    assert section is not None
    text = " ".join(section.text().split())
    assert "stated <gpu>" in text and "Stated peak: 1.000 GFLOP/s" in text  # issue 23: G/T FLOP/s
    rows = [" ".join(row.text().split()) for row in section.find_all("tr")[1:]]
    assert len(rows) == 3
    assert "complete" in rows[0] and "96" in rows[0]
    assert "partial" in rows[1] and "Model FLOPs utilization" in rows[1]
    # 9.6e-8 as a lower bound: more than nothing at the page's one percentage precision, no e-notation
    assert "> 0.0 % (lower bound" in rows[1]
    assert "unavailable" in rows[2]
    assert "never guesses" in text


@pytest.mark.parametrize("hardware", [False, True])
def test_benchmark_page_hardware_section_only_when_stated(hardware: bool) -> None:
    report = _with_hardware(benchmark_report()) if hardware else benchmark_report()
    assert (parse_html(render_report(report)).by_id("hardware") is not None) is hardware


def test_large_values_do_not_break_the_axes() -> None:
    facts = {"name": "big", "peak_flops_per_second": 1e15, "memory_bandwidth_bytes_per_second": 3e12}
    report = json.loads(json.dumps(crawl_module(nn.Conv2d(3, 8, 3), (3, 32, 32), hardware=facts)))
    svg = _svg(render_report(report))
    (circle,) = svg.findall(f"{NS}circle")
    assert 0 <= float(circle.get("cx")) <= 720 and 0 <= float(circle.get("cy")) <= 360
