"""Stated hardware facts at the float range's edges (issue #20, item 3; training-and-hardware.md 3).

Every finite rate > 0 passes ``check_hardware``. Before the fix, ``peak_flops_per_second=1.7e308``
crashed the roofline SVG (OverflowError), a ``5e-324`` bandwidth made ``crawl_module`` raise after
the model ran (an infinite roofline time) and ``torchscan scan --hardware`` exit 1 with a traceback.
Now a time beyond the float range is unavailable with a diagnostic, and the chart works in logs.
"""

from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from torch import nn

from torchscan import crawl_module
from torchscan.cli import main
from torchscan.measure.hardware import utilization
from torchscan.report.schema import metric_result
from torchscan.report.validate import validate_report
from torchscan.views.render import render_report

TINY, HUGE = 5e-324, 1.7e308
EXTREMES = [
    {"peak_flops_per_second": HUGE, "memory_bandwidth_bytes_per_second": 1e9},
    {"peak_flops_per_second": 1e9, "memory_bandwidth_bytes_per_second": TINY},
    {"peak_flops_per_second": TINY, "memory_bandwidth_bytes_per_second": HUGE},
    {"peak_flops_per_second": HUGE, "memory_bandwidth_bytes_per_second": TINY},
    {"peak_flops_per_second": TINY, "memory_bandwidth_bytes_per_second": TINY},
    {"peak_flops_per_second": HUGE, "memory_bandwidth_bytes_per_second": HUGE},
    {"peak_flops_per_second": TINY},
    {"peak_flops_per_second": HUGE},
]


def _model() -> nn.Module:
    return nn.Sequential(nn.Linear(4, 3), nn.ReLU())


def _roofline_svg(html: str) -> ET.Element:
    start = html.index('<svg xmlns="http://www.w3.org/2000/svg" class="roofline"')
    return ET.fromstring(html[start : html.index("</svg>", start) + len("</svg>")])


@pytest.mark.parametrize("rates", EXTREMES)
def test_extreme_facts_give_a_report_and_a_chart(rates):
    report = json.loads(json.dumps(crawl_module(_model(), (2, 4), hardware={"name": "edge", **rates})))
    validate_report(report)
    svg = _roofline_svg(render_report(report))
    for element in svg.iter():
        for name in ("x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r"):
            if name in element.attrib:
                float(element.attrib[name])  # a finite coordinate, never inf or nan
        assert "inf" not in (element.attrib.get("points") or "") and "nan" not in (element.text or "")
    render_report(report, format="svg")


def test_a_time_beyond_the_float_range_is_unavailable_with_a_diagnostic():
    facts = {"name": "edge", "peak_flops_per_second": 1e9, "memory_bandwidth_bytes_per_second": TINY}
    report = crawl_module(_model(), (2, 4), hardware=facts)
    assert report["totals"]["roofline_seconds"]["status"] == "unavailable"
    # the intensity (module FLOPs ÷ bytes) uses no stated rate, so it stays complete
    assert report["totals"]["arithmetic_intensity"]["status"] == "complete"
    overflow = [d for d in report["diagnostics"] if d["code"] == "roofline_out_of_range"]
    assert {d.get("path") for d in overflow} == {"0", "1", None}  # each call's path, then the total
    assert all(d["metric"] == "roofline_seconds" for d in overflow)
    for layer in report["layers"]:
        if "roofline_seconds" in layer["metrics"]:
            assert layer["metrics"]["roofline_seconds"]["status"] == "unavailable"


def test_a_time_in_range_is_unchanged():
    facts = {"name": "edge", "peak_flops_per_second": HUGE, "memory_bandwidth_bytes_per_second": HUGE}
    report = crawl_module(nn.Linear(4, 3), (2, 4), hardware=facts)
    seconds = report["totals"]["roofline_seconds"]
    assert seconds["status"] == "complete" and 0 < seconds["value"] < 1e-300  # tiny, subnormal-safe
    assert not [d for d in report["diagnostics"] if d["code"] == "roofline_out_of_range"]


def test_any_valid_saved_report_renders_its_roofline():
    facts = {"name": "edge", "peak_flops_per_second": 1e9, "memory_bandwidth_bytes_per_second": 1e9}
    base = json.loads(json.dumps(crawl_module(_model(), (2, 4), hardware=facts)))
    for peak, bandwidth, intensity in [(HUGE, TINY, HUGE), (TINY, HUGE, TINY), (HUGE, HUGE, TINY)]:
        report = copy.deepcopy(base)
        report["context"]["hardware"].update(
            peak_flops_per_second=peak, memory_bandwidth_bytes_per_second=bandwidth
        )
        for layer in report["layers"]:
            if "arithmetic_intensity" in layer["metrics"]:
                layer["metrics"]["arithmetic_intensity"].update(value=intensity, known_value=intensity)
        validate_report(report)
        assert "ridge at" in render_report(report)


def test_utilization_beyond_the_float_range_is_unavailable_with_a_diagnostic():
    flops = metric_result("complete", 1000, unit="FLOPs", scope="workload", method="m")
    latency = metric_result("complete", 1e-3, unit="seconds", scope="warmed_blocks", method="t")
    result, notes = utilization(flops, latency, TINY, "hardware_flops_utilization")
    assert result["status"] == "unavailable"
    assert [(n["code"], n["metric"]) for n in notes] == [
        ("utilization_out_of_range", "hardware_flops_utilization")
    ]


def test_cli_scan_with_a_tiny_bandwidth_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    facts = tmp_path / "hw.json"
    facts.write_text(
        json.dumps({"name": "edge", "peak_flops_per_second": HUGE, "memory_bandwidth_bytes_per_second": TINY})
    )
    html, saved = tmp_path / "out.html", tmp_path / "out.json"
    argv = ["scan", "torch.nn:Linear", "--factory-kwargs", '{"in_features": 4, "out_features": 3}']
    argv += ["--input-shape", "4", "--hardware", str(facts), "--html", str(html), "--json", str(saved)]
    status = main(argv)
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert "Traceback" not in captured.err
    assert 'class="roofline"' in html.read_text()
    report = json.loads(saved.read_text())
    assert report["totals"]["roofline_seconds"]["status"] == "unavailable"
