"""Strip plots of raw timing blocks on benchmark pages (issue 15 item 4), on hand-built reports."""

from __future__ import annotations

import statistics
import xml.etree.ElementTree as ET

import pytest
from view_parse import parse_html
from view_reports import benchmark_comparison, benchmark_report, m

from torchscan.views.common.strip_svg import NOISY_RATIO, block_averages, is_noisy, quantile
from torchscan.views.render import render_report

TIMER = "torch.utils.benchmark.Timer"
SVG_NS = "{http://www.w3.org/2000/svg}"


def noisy_report() -> dict:
    # Blocks of p = 4 calls: 0.04, 0.04, 0.08, 0.4, 0.04 s -> per-call 0.01, 0.01, 0.02, 0.1, 0.01 s.
    # Sorted 0.01 0.01 0.01 0.02 0.1: median 0.01, Q1 (rank 1) 0.01, Q3 (rank 3) 0.02, IQR 0.01 = 100 %.
    # Throughput 8 images × 20 calls / 0.6 s = 266.7 images/s; 8 / median = 800 images/s.
    report = benchmark_report(profile=False)
    report["measurement"] = {
        "number_per_run": 4,
        "raw_times_seconds": [0.04, 0.04, 0.08, 0.4, 0.04],
        "measured_calls": 20,
    }
    report["totals"]["latency"] = m("complete", 0.01, "seconds", TIMER, "warmed_block_average")
    report["totals"]["latency_iqr"] = m("complete", 0.01, "seconds", TIMER, "warmed_block_average")
    report["totals"]["throughput"] = m("complete", 8 * 20 / 0.6, "images/s", TIMER, "warmed_blocks")
    return report


def strip_svgs(html: str) -> list[ET.Element]:
    root = parse_html(html)
    assert not root.find_all("script")
    start = 0
    out = []
    while (i := html.find('<svg class="strip-plot"', start)) >= 0:
        end = html.index("</svg>", i) + len("</svg>")
        out.append(ET.fromstring(html[i:end]))
        start = end
    return out


def test_quantiles_match_linear_interpolation() -> None:
    values = [0.3, 0.1, 0.7, 0.2, 0.9, 0.4]
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")  # NumPy's default rule
    assert quantile(values, 0.25) == pytest.approx(q1) and quantile(values, 0.75) == pytest.approx(q3)
    assert quantile(values, 0.5) == pytest.approx(q2) == pytest.approx(0.35)
    assert block_averages({"number_per_run": 4, "raw_times_seconds": [0.04, 0.4]}) == [0.01, 0.1]
    assert (
        block_averages({}) == [] and block_averages({"number_per_run": 2, "raw_times_seconds": [1, -1]}) == []
    )


def test_latency_page_plots_every_block() -> None:
    html = render_report(noisy_report())
    (svg,) = strip_svgs(html)
    dots = svg.findall(f".//{SVG_NS}circle")
    assert len(dots) == 5 and [d.get("data-block") for d in dots] == ["0", "1", "2", "3", "4"]
    assert len(svg.findall(f".//{SVG_NS}line[@data-median]")) == 1
    assert len(svg.findall(f".//{SVG_NS}rect[@data-iqr]")) == 1
    assert svg.get("width") == "900" and int(svg.get("height")) > 0
    text = " ".join(parse_html(html).text().split())
    assert "noisy This run: the IQR of the block averages is 100.0 % of their median (above 10.0 %)" in text
    assert "not a significance test" in text
    assert "Throughput 266.7 images/s is work units × measured calls ÷ total block time" in text
    assert "(800 images/s)" in text
    assert is_noisy(block_averages(noisy_report()["measurement"])) and NOISY_RATIO == 0.10


def test_steady_run_has_no_label_or_note() -> None:
    html = render_report(benchmark_report())  # five equal blocks: IQR 0; 8 / 0.5 s = 16 = throughput
    assert len(strip_svgs(html)) == 1
    text = " ".join(parse_html(html).text().split())
    assert "noisy" not in text and "total block time" not in text


def test_comparison_page_shows_both_distributions() -> None:
    before = noisy_report()
    after = benchmark_report(latency=0.005, iqr=0.0, profile=False)
    after["totals"]["latency_iqr"] = m("complete", 0.0, "seconds", TIMER, "warmed_block_average")
    html = render_report(benchmark_comparison(before, after))
    (svg,) = strip_svgs(html)
    rows = svg.findall(f"{SVG_NS}g")
    assert [r.get("data-run") for r in rows] == ["Baseline", "Candidate"]
    assert [len(r.findall(f"{SVG_NS}circle")) for r in rows] == [5, 5]
    # One shared scale: the candidate's 5 ms median sits left of the baseline's 10 ms median.
    medians = [float(r.find(f"{SVG_NS}line").get("x1")) for r in rows]  # type: ignore[union-attr]
    assert medians[1] < medians[0]
    text = " ".join(parse_html(html).text().split())
    assert "noisy Baseline" in text and "noisy Candidate" not in text


def test_no_blocks_no_plot() -> None:
    report = benchmark_report(profile=False)
    report["measurement"] = {}
    html = render_report(report)
    assert not strip_svgs(html) and "No raw timing blocks were recorded" in html


def test_blocks_near_the_float_limit_still_render() -> None:
    report = benchmark_report(profile=False)
    report["measurement"] = {
        "number_per_run": 1,
        "raw_times_seconds": [1.7e308, 1.0e308],
        "measured_calls": 2,
    }
    html = render_report(report)
    (svg,) = strip_svgs(html)
    assert len(svg.findall(f".//{SVG_NS}circle")) == 2 and "beyond the float range" in html
