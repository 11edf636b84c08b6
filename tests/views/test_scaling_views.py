"""render_report on a ScalingReport: log-log SVG panels and the HTML page, offline, escaped, deterministic."""

from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET

import pytest

from tests.report.scaling_reports import scaling_report
from tests.views.view_parse import parse_html
from tests.views.view_reports import P
from torchscan import render_report
from torchscan.views.scaling.figure import top_parts
from torchscan.views.scaling.page import polynomial_text, summary_text

SVG = "{http://www.w3.org/2000/svg}"


def _roundtrip(report):
    return json.loads(json.dumps(report))


def test_svg_has_a_log_log_panel_per_metric_and_axis_and_a_line_per_top_operator():
    report = _roundtrip(scaling_report(latency=True))
    root = ET.fromstring(render_report(report, format="svg"))
    panels = root.findall(f"{SVG}g")
    assert [(p.get("data-metric"), p.get("data-axis")) for p in panels] == [
        ("flops", "seq"),
        ("latency", "seq"),
    ]
    flops, latency = panels
    # the total and the two operators, largest at the largest size first
    assert top_parts(report, "flops", "seq") == ["aten.bmm", "aten.addmm"]
    assert len(flops.findall(f"{SVG}polyline")) == 3
    labels = [t.text for t in flops.findall(f"{SVG}text")]
    assert {"total", "aten.bmm", "aten.addmm"} <= set(labels)  # names at the line ends, not colour alone
    # seq=64 failed: 3 lines x 1 missing value are not drawn, and the panel says so
    assert len(flops.findall(f"{SVG}circle")) == 3 * 4
    assert "3 unavailable or zero value(s) not drawn" in labels
    assert "seq (log scale)" in labels and "flops against seq · log-log" in labels
    # latency: IQR bars and a dashed least-squares curve, labelled as a fit
    assert len(latency.findall(f"{SVG}line[@class='iqr']")) == 5
    fit = latency.find(f"{SVG}polyline[@class='fit']")
    assert fit is not None and fit.get("stroke-dasharray") and "not exact" in fit.find(f"{SVG}title").text


def test_a_partial_value_is_hollow_with_a_lower_bound_tooltip():
    report = _roundtrip(scaling_report(partial_at=1))
    root = ET.fromstring(render_report(report, format="svg"))
    hollow = [c for c in root.iter(f"{SVG}circle") if c.get("fill") == "none"]
    assert len(hollow) == 3  # the partial point on the total and both operator lines
    assert all(
        "≥" in c.find(f"{SVG}title").text and "lower bound" in c.find(f"{SVG}title").text for c in hollow
    )


def test_html_page_lists_fits_parts_points_and_diagnostics():
    report = _roundtrip(scaling_report())
    page = render_report(report, title="GPT scaling")
    root = parse_html(page)
    assert not root.find_all("script") and page.endswith("</html>\n")
    csp = root.find_all("meta", **{"http-equiv": "Content-Security-Policy"})
    assert csp and "default-src 'none'" in csp[0].attrs["content"]
    text = root.text()
    assert "256·seq² + 1,000·seq" in text and "exact_rational_interpolation" in text
    assert "CausalSelfAttention" in text and "900·seq" in text  # the MLP's module-type fit
    assert "scaling_fit_fewer_points" in text and "no value at seq=64" in text
    assert "flops: RuntimeError" in text  # the failed point's error type in the points table
    assert "promises nothing beyond the largest size" in text
    assert len(root.find_all("svg")) == 1


def test_hostile_names_are_escaped():
    report = scaling_report()
    for point in report["points"]:
        for key in ("by_operator", "by_module_type"):
            parts = point[key]["flops"]
            if parts:
                parts[P] = parts.pop("aten.bmm" if key == "by_operator" else "MLP")
    fits = report["fits"]["flops"]["seq"]
    fits["by_operator"][P] = fits["by_operator"].pop("aten.bmm")
    fits["by_module_type"][P] = fits["by_module_type"].pop("MLP")
    report["context"]["model_type"] = P
    report["diagnostics"][0]["message"] = P
    for document in (render_report(report, title=P), render_report(report, format="svg")):
        assert "<script" not in document and "<img" not in document and 'onerror="' not in document
    root = parse_html(render_report(report, title=P))
    assert root.find_all("title")[0].text() == P
    ET.fromstring(render_report(report, format="svg"))


def test_rendering_is_pure_and_deterministic_and_refuses_other_options():
    report = scaling_report(latency=True)
    kept = copy.deepcopy(report)
    for fmt in ("html", "svg"):
        assert render_report(report, format=fmt) == render_report(report, format=fmt)
    assert report == kept
    with pytest.raises(ValueError, match="before="):
        render_report(report, before=report)
    with pytest.raises(ValueError, match="metric="):
        render_report(report, metric="module_flops")
    broken = copy.deepcopy(report)
    broken["fits"]["flops"]["seq"]["coefficients"][2] = 1
    with pytest.raises(ValueError, match=r"fits.flops.seq.coefficients\[2\]"):
        render_report(broken)


def test_polynomial_words():
    exact = {"status": "complete", "method": "exact_rational_interpolation", "coefficients": [0, 0.5, 0.5]}
    assert polynomial_text({**exact, "numerators": [0, 1, 1], "denominator": 2}, "n") == "1/2·n² + 1/2·n"
    negative = {**exact, "coefficients": [3, -8, 20], "numerators": [3, -8, 20], "denominator": 1}
    assert polynomial_text(negative, "seq") == "20·seq² - 8·seq + 3"
    squares = {"status": "complete", "method": "least_squares", "coefficients": [0.001, 0.0, 2.5e-07]}
    assert polynomial_text(squares, "n") == "≈ 0.00000025·n² + 0.001"
    assert polynomial_text({**exact, "coefficients": None}, "n") == "no polynomial"


def test_summary_text_names_fits_parts_and_failures():
    text = summary_text(scaling_report(), "demo")
    lines = text.split("\n")
    assert lines[0] == "scaling of demo: 5 points (seq 16, 32, 64, 128, 256)"
    assert lines[1] == "flops along seq: complete · exact degree 2: 256·seq² + 1,000·seq · exponent 1.98"
    assert "  aten.bmm: complete · exact degree 2: 256·seq² · exponent 2" in lines
    assert "  [MLP] complete · exact degree 1: 900·seq · exponent 1" in lines
    assert "point seq=64 failed (flops: RuntimeError)" in lines
