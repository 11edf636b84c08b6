"""render_report of a MemoryReport (memory.md 4 "Views"): SVG timeline, HTML page, escaping, checks.

Structural checks on hand-written reports that follow the wire schema (tests/views/memory_reports.py):
the SVG parses as XML, the HTML as HTML; the peak marker names its phase and module; unknown figures
are never drawn; hostile module names stay text; equal arguments give equal bytes.
"""

from __future__ import annotations

import copy
import json
import re
import xml.etree.ElementTree as ET

import pytest
from memory_reports import PEAK, bytes_result, memory_report, module_call
from view_parse import parse_html
from view_reports import P

from torchscan.cli.memory import memory_lines
from torchscan.report.schema import metric_result
from torchscan.views.memory.timeline_svg import PLOT_LEFT, PLOT_RIGHT
from torchscan.views.render import render_report

NS = "{http://www.w3.org/2000/svg}"


def _svg(report: dict, title: str = "memory") -> ET.Element:
    return ET.fromstring(render_report(report, format="svg", title=title))


def _texts(root: ET.Element) -> list[str]:
    return ["".join(element.itertext()) for element in root.iter(f"{NS}text")]


def test_svg_draws_every_nonzero_category_with_a_legend_of_all_seven() -> None:
    root = _svg(memory_report())
    assert root.get("role") == "img"
    legends = [g.get("data-legend") for g in root.iter(f"{NS}g") if g.get("data-legend")]
    assert legends == [
        "parameters",
        "buffers",
        "gradients",
        "optimizer_state",
        "activations",
        "temporaries",
        "inputs",
    ]
    drawn = [p.get("data-category") for p in root.iter(f"{NS}path") if p.get("data-category")]
    # buffers are 0 throughout: no band, but a legend row that says 0 bytes
    assert drawn == ["parameters", "gradients", "optimizer_state", "activations", "temporaries", "inputs"]
    texts = _texts(root)
    # views-3.md 5: the page style (3,232 / 1,024 = 3.156 KiB; 6,480 / 1,024 = 6.328 KiB)
    assert "parameters at the peak: complete · 3.156 KiB" in texts
    assert "buffers at the peak: complete · 0 B" in texts
    assert "optimizer state at the peak: complete · 6.328 KiB" in texts
    assert "Ledger event (operator boundary; 0 is the start) · 8 points kept of 41 events" in texts


def test_svg_peak_marker_names_phase_and_module_at_the_peak_point() -> None:
    report = memory_report()
    report["at_peak"]["module"] = {"path": "2", "call_index": 1}
    root = _svg(report)
    marker = next(g for g in root.iter(f"{NS}g") if g.get("data-peak-marker"))
    line = marker.find(f"{NS}line")
    assert line is not None
    # The largest sum is point 6 (event 6 of 0..7): x = 86 + 798 * 6 / 7 = 770.0
    assert float(line.get("x1", "")) == pytest.approx(PLOT_LEFT + (PLOT_RIGHT - PLOT_LEFT) * 6 / 7, abs=0.05)
    assert "".join(marker.find(f"{NS}text").itertext()) == "peak · optimizer · 2 call #1"  # type: ignore[union-attr]
    heading = next(t for t in root.iter(f"{NS}text") if t.get("data-peak-text"))
    assert "".join(heading.itertext()) == (
        "Peak: complete · 13.39 KiB · phase optimizer, inside 2 call #1"  # 13,712 / 1,024 = 13.39
    )
    strip = ["".join(t.itertext()) for g in root.iter(f"{NS}g") if g.get("data-phase-segment") for t in g]
    assert "forward" in strip and "backward" in strip and "optimizer" in strip


def test_svg_band_heights_stack_the_timeline_bytes() -> None:
    root = _svg(memory_report())
    # The tallest stack (point 6, 13,712 bytes) reaches the plot top (y 92); parameters alone
    # (3,232 bytes) reach 352 - 260 * 3232 / 13712 = 290.7 at every point.
    params = next(p for p in root.iter(f"{NS}path") if p.get("data-category") == "parameters")
    upper = params.get("d", "").split(" L")[0].removeprefix("M")
    assert upper == "86,290.7"
    inputs = next(p for p in root.iter(f"{NS}path") if p.get("data-category") == "inputs")
    assert "770,92" in inputs.get("d", "")


def test_partial_category_is_hatched_and_reads_as_a_lower_bound() -> None:
    report = memory_report()
    report["at_peak"]["by_category"]["activations"] = bytes_result(0, "at_peak", "partial")
    report["peak"] = bytes_result(PEAK, "workload", "partial")
    root = _svg(report)
    overlays = [
        p.get("data-category-overlay") for p in root.iter(f"{NS}path") if p.get("data-category-overlay")
    ]
    assert overlays == ["activations"]
    texts = _texts(root)
    assert (
        "activations (saved for backward) at the peak: partial · ≥ 0 B · full value unknown · hatched"
    ) in texts
    html = render_report(report, title="m")
    row = parse_html(html).by_id("category-activations")
    assert row is not None
    assert row.find_all("td")[0].text() == "partial ≥ 0 B (lower bound; full value unknown)"
    assert row.find_all("td")[1].text() == "≥ 0 bytes"  # the exact recorded count


def test_unavailable_category_is_never_drawn_as_zero() -> None:
    report = memory_report()
    report["at_peak"]["by_category"]["optimizer_state"] = bytes_result(None, "at_peak", "unavailable")
    report["peak"] = bytes_result(None, "workload", "unavailable")
    root = _svg(report)
    drawn = [p.get("data-category") for p in root.iter(f"{NS}path") if p.get("data-category")]
    assert "optimizer_state" not in drawn
    texts = _texts(root)
    assert "optimizer state at the peak: unavailable · unknown · not drawn (never drawn as zero)" in texts
    assert any(t.startswith("Peak: unavailable · unknown") for t in texts)


def test_no_timeline_draws_no_area_and_says_so() -> None:
    report = memory_report()
    report["timeline"] = []
    root = _svg(report)
    assert not [p for p in root.iter(f"{NS}path") if p.get("data-category")]
    assert any(t.get("data-no-timeline") for t in root.iter(f"{NS}text"))
    assert not [g for g in root.iter(f"{NS}g") if g.get("data-peak-marker")]


def test_single_point_timeline_spans_the_plot() -> None:
    report = memory_report()
    report["timeline"] = report["timeline"][6:7]
    root = _svg(report)
    params = next(p for p in root.iter(f"{NS}path") if p.get("data-category") == "parameters")
    assert params.get("d", "").startswith("M86,")
    assert "884," in params.get("d", "")


def test_html_page_sections_and_top_modules_by_own_bytes() -> None:
    report = memory_report()
    report["by_module"].append(module_call("3", 0, "torch.nn.modules.linear.Identity", None, "unavailable"))
    root = parse_html(render_report(report, title="MLP step"))
    # the JSON block of the timelines and the one packaged script (zoom, hover); no report text runs
    scripts = root.find_all("script")
    assert [s.attrs.get("type") for s in scripts] == ["application/json", None] and "src" not in scripts[
        1
    ].attrs
    for ident in (
        "timeline",
        "summary",
        "at-peak",
        "by-phase",
        "modules",
        "allocator",
        "diagnostics",
        "not-mean",
    ):
        assert root.by_id(ident) is not None, ident
    assert root.find_all("svg")[0].attrs.get("role") == "img"
    gradients = root.by_id("category-gradients")
    assert gradients is not None and gradients.find_all("td")[0].text() == "complete 3.156 KiB"
    assert gradients.find_all("td")[1].text() == "3,232 bytes"
    recompute = root.by_id("phase-recompute")
    assert recompute is not None and recompute.find_all("td")[0].text() == "unavailable unknown"
    modules = root.by_id("modules")
    assert modules is not None
    rows = [row for row in modules.find_all("tr") if row.find_all("td")]
    # ranked by the bytes each call allocated itself (views-3.md 5), not inclusive bytes: the leaves
    # allocated 512 + 128, 384 + 128, 256 + 128 and 128 (Identity); the fixture's root allocated
    # 1,280 bytes, less than its nested calls' 1,664, so its own bytes are unknown, never negative
    assert [row.find_all("td")[1].text() for row in rows] == ["1", "2", "0", "3"]
    assert [row.find_all("td")[4].text() for row in rows] == [
        "complete 640 B",
        "complete 512 B",
        "complete 384 B",
        "complete 128 B",
    ]
    assert rows[3].find_all("td")[5].text() == "unavailable unknown"  # Identity's saved bytes are unknown
    assert "Unranked: own bytes unknown (1)" in modules.text()
    assert "(root) call #0 (torch.nn.modules.container.Sequential): own bytes unknown" in modules.text()
    badges = {span.text() for span in root.find_all("span") if span.has_class("badge")}
    assert badges == {"complete", "unavailable"}


def test_html_comparison_shows_per_category_deltas() -> None:
    before = memory_report()
    after = memory_report()
    # Freezing the first Linear(16, 32): its 2,176 bytes of gradients are gone at the peak.
    after["at_peak"]["by_category"]["gradients"] = bytes_result(3232 - 2176, "at_peak")
    after["peak"] = bytes_result(PEAK - 2176, "workload")
    after["by_phase"]["optimizer"] = bytes_result(PEAK - 2176, "workload_phase")
    root = parse_html(render_report(after, before=before, title="freeze"))
    row = root.by_id("delta-gradients")
    assert row is not None
    # -2,176 bytes = -2.125 KiB: -2,176 / 3,232 = -67.3 % of the gradients,
    # -2,176 / 13,712 = -15.9 % of the peak
    assert row.find_all("td")[-1].text() == "-2.125 KiB (-67.3 %)"
    peak = root.by_id("delta-peak")
    assert peak is not None and peak.find_all("td")[-1].text() == "-2.125 KiB (-15.9 %)"
    same = root.by_id("delta-parameters")
    assert same is not None and same.find_all("td")[-1].text() == "+0 B (+0.0 %)"
    recompute = root.by_id("delta-phase-recompute")
    assert recompute is not None and recompute.find_all("td")[-1].text().startswith("delta unknown")


def test_hostile_names_stay_text() -> None:
    report = memory_report()
    report["by_module"][1]["path"] = P
    report["by_module"][1]["module_type"] = P
    report["at_peak"]["module"] = {"path": P, "call_index": 0}
    report["context"]["device"] = P
    report["diagnostics"] = [{"code": P, "metric": P, "message": P, "severity": "warning", "path": P}]
    svg = render_report(report, format="svg", title=P)
    root = ET.fromstring(svg)
    assert root.find(f"{NS}title") is not None and root.find(f"{NS}title").text == P  # type: ignore[union-attr]
    for tag in ("script", "image", "foreignObject"):
        assert not list(root.iter(f"{NS}{tag}"))
    assert any(P in text for text in _texts(root))
    html = render_report(report, title=P)
    page = parse_html(html)
    assert not page.find_all("img") and len(page.find_all("script")) == 2
    code = html.rsplit("<script>", 1)[1]
    assert "pwned" not in code and "<img" not in code  # the executable script is the constant asset
    for element in page.iter():
        assert not any(name.startswith("on") for name in element.attrs), element.tag
    title = page.find_all("title")[0]
    assert title.text() == P
    diagnostic = page.by_id("diagnostic-0")
    assert diagnostic is not None and P in diagnostic.text()


def test_deterministic_and_pure() -> None:
    report = memory_report()
    before = memory_report()
    before["at_peak"]["by_category"]["temporaries"] = bytes_result(1024, "at_peak")
    before["peak"] = bytes_result(PEAK + 512, "workload")
    kept = copy.deepcopy((report, before))
    for fmt, other in (("svg", None), ("html", None), ("html", before)):
        first = render_report(report, format=fmt, before=other, title="t")
        assert first == render_report(report, format=fmt, before=other, title="t")
        assert first.endswith("</svg>\n" if fmt == "svg" else "</html>\n")
    assert (report, before) == kept
    # a report that went through JSON renders identically
    assert render_report(json.loads(json.dumps(report)), title="t") == render_report(report, title="t")


@pytest.mark.parametrize(
    ("change", "phrase"),
    [
        (lambda r: r["at_peak"]["by_category"]["gradients"].update(status="bogus"), "gradients.status"),
        (lambda r: r.update(schema_version=2), "schema_version"),
        (lambda r: r["timeline"][0].update(event=-1), "timeline[0].event"),
        (lambda r: r["by_module"].append(copy.deepcopy(r["by_module"][0])), "duplicate module call"),
        (lambda r: r["context"].update(device="\x00"), "invalid text"),
        (lambda r: r["peak"].update(value=float("nan"), known_value=float("nan")), "peak"),
    ],
)
def test_malformed_reports_raise_value_errors_naming_the_spot(change, phrase: str) -> None:
    report = memory_report()
    change(report)
    for fmt in ("svg", "html"):
        with pytest.raises(ValueError, match=re.escape(phrase)):
            render_report(report, format=fmt)


def test_option_and_kind_errors() -> None:
    report = memory_report()
    with pytest.raises(ValueError, match="format"):
        render_report(report, format="pdf")
    with pytest.raises(ValueError, match="title"):
        render_report(report, title=None)  # type: ignore[arg-type]
    # views-3.md 5: with before=, the SVG draws both timelines on one bytes axis
    both = ET.fromstring(render_report(report, format="svg", before=memory_report()))
    assert [s.get("id") for s in both.findall(f"{NS}svg")] == ["before-timeline", "after-timeline"]
    analysis_like = {"schema_version": 1, "layers": []}
    with pytest.raises(ValueError, match="MemoryReport"):
        render_report(report, before=analysis_like)
    with pytest.raises(ValueError, match="MemoryReport"):
        render_report(analysis_like, before=report)
    bad_before = memory_report()
    bad_before["baseline"]["scope"] = "elsewhere"
    with pytest.raises(ValueError, match=r"before\.baseline\.scope"):
        render_report(report, before=bad_before)


def test_allocator_figures_keep_their_own_method_and_unit() -> None:
    report = memory_report()
    report["allocator"] = {
        "max_allocated_delta": dict(
            metric_result(
                "complete", 20480, unit="bytes", scope="workload", method="torch.cuda.max_memory_allocated"
            )
        ),
        "profiler_samples": dict(
            metric_result("complete", 3, unit="samples", scope="workload", method="custom")
        ),
    }
    root = parse_html(render_report(report, title="t"))
    section = root.by_id("allocator")
    assert section is not None
    rows = [
        [cell.text() for cell in row.find_all("td")] for row in section.find_all("tr") if row.find_all("td")
    ]
    assert rows == [
        ["complete 20.00 KiB", "torch.cuda.max_memory_allocated", "workload"],
        ["complete 3 samples", "custom", "workload"],
    ]


def test_terminal_lines_escape_control_characters_and_keep_statuses() -> None:
    report = memory_report()
    report["at_peak"]["module"] = {"path": "a\nb\x85", "call_index": 2}
    report["at_peak"]["by_category"]["temporaries"] = bytes_result(512, "at_peak", "partial")
    report["peak"] = bytes_result(PEAK, "workload", "partial")
    report["diagnostics"] = [
        {"code": "untracked_storage", "metric": "memory", "message": "x\ty", "severity": "warning"}
    ]
    lines = memory_lines(report, "demo:\x9bcnn", "one eval/no-grad forward")
    assert lines[0] == "storage ledger of demo:\\x9bcnn: one eval/no-grad forward"
    assert "          at phase optimizer, inside a\\x0ab\\x85 call #2" in lines
    assert (
        "  temporaries                        partial · ≥ 512 bytes (512 B) · lower bound, full value unknown"
        in lines
    )
    assert f"peak      partial · ≥ {PEAK:,} bytes (13.39 KiB) · lower bound, full value unknown" in lines
    assert "  untracked_storage: x\\x09y" in lines
    assert all("\n" not in line and "\x85" not in line for line in lines)


def test_html_ids_are_unique_and_links_resolve() -> None:
    before = memory_report()
    before["diagnostics"] = [{"code": "c", "metric": "m", "message": "x", "severity": "error"}] * 2
    root = parse_html(render_report(memory_report(), before=before, title="t"))
    ids = [element.attrs["id"] for element in root.iter() if element.attrs.get("id")]
    assert len(ids) == len(set(ids))
    assert root.by_id("before-diagnostic-1") is not None and root.by_id("diagnostic-0") is None
    for anchor in root.find_all("a"):
        href = anchor.attrs.get("href") or ""
        assert href.startswith("#") and href[1:] in ids, href
