"""render_report on a GenerationReport (generation.md 3): offline SVG and HTML, escaped, deterministic."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from tests.report.generation_reports import flop_report, generation_report
from torchscan import render_report
from torchscan.views.generation.page import noisy_words, step_rows, summary_text

SVG = "{http://www.w3.org/2000/svg}"


def _roundtrip(report):
    return json.loads(json.dumps(report))


def test_svg_draws_every_step_and_marks_the_prefill():
    report = _roundtrip(generation_report())
    page = render_report(report, format="svg", title="Steps")
    root = ET.fromstring(page)
    panels = root.findall(f"{SVG}g")
    # FLOPs; operator bytes and K/V bytes (one bytes axis); then per decode fit (views-3.md 5): the
    # decode steps alone with the fitted line, and the residuals
    assert [p.get("class") for p in panels] == [
        "panel",
        "panel",
        "panel zoom",
        "panel residuals",
        "panel zoom",
        "panel residuals",
    ]
    assert [p.get("data-unit") for p in panels] == ["FLOPs", "bytes", "FLOPs", "FLOPs", "bytes", "bytes"]
    squares = [len(p.findall(f".//{SVG}rect[@class='prefill']")) for p in panels]
    circles = [len(p.findall(f".//{SVG}circle")) for p in panels]
    assert squares == [1, 2, 0, 0, 0, 0] and circles == [2, 4, 2, 2, 2, 2]
    assert all(c.get("fill") != "none" for c in root.iter(f"{SVG}circle"))  # all complete: filled
    zoom_ticks = [t.text for t in panels[2].findall(f"{SVG}text")][1:4]
    assert zoom_ticks == ["110 FLOPs", "115 FLOPs", "120 FLOPs"]  # the decode FLOPs' own range, labelled
    assert len(panels[2].findall(f"{SVG}line[@class='fit']")) == 1  # the least-squares line
    # decode FLOPs 110 at context 5 and 120 at 6: the line 60 + 10 x context leaves residuals 0
    residuals = [c.find(f"{SVG}title").text for c in panels[3].findall(f"{SVG}circle")]  # type: ignore[union-attr]
    assert residuals == [f"step {k} (decode): operator FLOPs residual 0 FLOPs" for k in (1, 2)]
    assert "prefill" in "".join(t.text or "" for t in root.iter(f"{SVG}text"))
    assert "context tokens" in page and root.find(f"{SVG}title").text == "Steps"  # type: ignore[union-attr]


def test_partial_is_hollow_and_unavailable_is_not_drawn():
    report = generation_report(hardware=False)
    report["steps"][2]["flops"] = {**report["steps"][2]["flops"], "status": "partial", "value": None}
    report["steps"][1]["attention_kv_bytes"] = {
        **report["steps"][1]["attention_kv_bytes"],
        "status": "unavailable",
        "value": None,
        "known_value": None,
    }
    root = ET.fromstring(render_report(_roundtrip(report), format="svg"))
    first, second, zoom = root.findall(f"{SVG}g")
    hollow = [c for c in first.findall(f".//{SVG}circle") if c.get("fill") == "none"]
    assert len(hollow) == 1 and "≥" in hollow[0].find(f"{SVG}title").text
    assert len(second.findall(f".//{SVG}circle")) == 3  # one K/V value unavailable: not drawn
    assert len(zoom.findall(f".//{SVG}circle")) == 2
    assert "1 unavailable value(s) not drawn" in ET.tostring(root, encoding="unicode")


def test_html_page_is_offline_escaped_and_deterministic():
    report = _roundtrip(generation_report(model_type="<script>alert(1)</script>"))
    page = render_report(report, title="gen & <b>")
    assert page == render_report(report, title="gen & <b>")
    assert "<script" not in page and "&lt;script&gt;" in page
    assert "gen &amp; &lt;b&gt;" in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "<svg" in page and "Steps (one per top-level model call)" in page
    assert "not a prediction" in page


def test_step_rows_and_summary_text():
    report = generation_report()
    assert step_rows(report) == [
        ["0", "prefill", "4", "1K", "800", "256", "memory"],
        ["1", "decode", "5", "110", "500", "320", "memory"],
        ["2", "decode", "6", "120", "520", "384", "memory"],
    ]
    text = summary_text(report, "demo")
    assert "decode fit: FLOPs ≈ 60 + 10 × context" in text
    no_hardware = generation_report(hardware=False)
    assert step_rows(no_hardware)[0][-1] == "-"


def test_unknown_context_lengths_fall_back_to_the_step_index():
    from tests.report.generation_reports import context
    from torchscan.measure.generation import build_report

    flops = flop_report([(None, 1000, 800, 256), (None, 110, 500, 320)])
    report = _roundtrip(build_report(flops, context(), None))  # type: ignore[arg-type]
    assert [s["context_tokens"] for s in report["steps"]] == [None, None]
    assert report["decode_fit"]["flops"] is None
    assert "step index" in render_report(report, format="svg")
    assert step_rows(report)[0][2] == "unknown"


def test_noisy_label_follows_the_latency_rule():
    assert noisy_words([1.0, 1.0, 1.0, 1.0]) == ""
    assert noisy_words([1.0, 1.0, 2.0, 2.0]).startswith("noisy")  # IQR 1 of median 1.5: 67 %
    report = generation_report()
    seconds = {"status": "complete", "value": 0.5, "known_value": 0.5, "unit": "seconds", "method": "m"}
    report["timing"] = {
        "time_to_first_token": {**seconds, "scope": "first_token"},
        "decode_step_mean": {**seconds, "value": 1.5, "known_value": 1.5, "scope": "decode_step_mean"},
        "decode_step_iqr": {**seconds, "scope": "decode_step"},
        "decode_step_seconds": [1.0, 1.0, 2.0, 2.0],
    }
    report = _roundtrip(report)
    assert '<span class="badge warning">noisy</span>' in render_report(report)
    text = summary_text(report, "demo")
    assert "first token 500 ms" in text and "  noisy: the IQR" in text  # issue 23: ms, not 0.5 s


def test_options_that_do_not_apply_are_refused():
    report = generation_report()
    with pytest.raises(ValueError, match="before="):
        render_report(report, before=report)
    with pytest.raises(ValueError, match="metric="):
        render_report(report, metric="module_flops")
    report["steps"][0]["phase"] = "decode"
    with pytest.raises(ValueError, match=r"steps\[0\]\.phase"):
        render_report(report)


def test_a_report_without_steps_still_renders():
    from tests.report.generation_reports import context
    from torchscan.measure.generation import build_report

    flops = flop_report([])
    report = _roundtrip(build_report(flops, context(), None))  # type: ignore[arg-type]
    root = ET.fromstring(render_report(report, format="svg"))
    assert root.findall(f".//{SVG}circle") == [] and root.findall(f".//{SVG}rect[@class='prefill']") == []
    assert "no_steps" in render_report(report)
    assert summary_text(report, "idle").count("\n") >= 2
