"""FlopReport and ProfileReport pages (views-3.md 4): HTML and SVG, shares, escaping, offline, CLI."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from html import unescape
from pathlib import Path

import pytest
from page_reports import flop_report, profile_report, profile_row
from view_parse import parse_html
from view_reports import P

from torchscan import render_report
from torchscan.views.flops.flop_page import share_of
from torchscan.views.flops.profile_page import grouped_operators

SVG = "{http://www.w3.org/2000/svg}"


def visible(html: str) -> str:
    html = re.sub(r"<(style|title)[^>]*>.*?</\1>", " ", html, flags=re.S)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def rows(page, ident: str) -> list[list[str]]:
    section = page.by_id(ident)
    assert section is not None, ident
    return [[" ".join(c.text().split()) for c in tr.find_all("td")] for tr in section.find_all("tr")[1:]]


def check_links_and_ids(html: str) -> None:
    ids = re.findall(r'\sid="([^"]+)"', html)
    assert len(ids) == len(set(ids))
    for target in re.findall(r'href="#([^"]*)"', html):
        assert target in ids


def check_svg_fits(svg: str) -> ET.Element:
    """Parses; every text line fits the canvas (an estimate of 0.62 em per glyph): nothing clipped."""
    root = ET.fromstring(svg)
    width, height = float(root.get("width")), float(root.get("height"))  # type: ignore[arg-type]
    for text in root.iter(f"{SVG}text"):
        size = float(text.get("font-size", "12"))
        assert float(text.get("x", "0")) + len(text.text or "") * 0.62 * size <= width + 1, text.text
        assert float(text.get("y", "0")) <= height
    return root


def test_flop_page_shares_are_hand_derived() -> None:
    report = json.loads(json.dumps(flop_report()))
    page = parse_html(render_report(report, title="My FLOPs"))
    # 600 / 1,000 = 60.0 %, 300 / 1,000 = 30.0 %, 100 / 1,000 = 10.0 %, largest first
    assert [r[:3] for r in rows(page, "operators")] == [
        ["aten.mm", "600 FLOPs", "60.0 %"],
        ["aten.relu", "300 FLOPs", "30.0 %"],
        ["aten.add", "100 FLOPs", "10.0 %"],
    ]
    # module labels are inclusive: an indented tree, in report order, never summed
    assert [r[:3] for r in rows(page, "modules")] == [
        ["Net", "1.000 kFLOPs", "100.0 %"],
        ["Net.encoder", "900 FLOPs", "90.0 %"],
        ["Net.encoder.0", "600 FLOPs", "60.0 %"],
        ["Net.head", "100 FLOPs", "10.0 %"],
    ]
    assert rows(page, "ignored") == [["aten.view", "2", "Metadata-only tensor view."]]
    text = " ".join(page.text().split())
    assert "Diagnostics (0)" in text and "never sum these rows" in text
    assert page.find_all("title")[0].text() == "My FLOPs" == page.find_all("h1")[0].text()
    assert "forward 1.000 kFLOPs 100.0 %" in visible(render_report(report))  # the phase table


def test_shares_of_partial_and_unknown_totals() -> None:
    # A share of a lower bound is an upper bound; of an unknown or zero total there is none.
    assert share_of(300, flop_report("partial")["total"]) == "≤ 30.0 %"
    assert share_of(300, flop_report("unavailable")["total"]) == "—"
    assert share_of(0, {**flop_report()["total"], "value": 0, "known_value": 0}) == "—"
    page = parse_html(render_report(flop_report("partial")))
    assert rows(page, "operators")[0][2] == "≤ 60.0 %"
    assert "≥ 1.000 kFLOPs (lower bound; full value unknown)" in " ".join(page.text().split())


def test_flop_svg_grows_with_its_rows_and_fits() -> None:
    small = check_svg_fits(render_report(flop_report(), format="svg", title="t"))
    report = flop_report()
    report["by_operator"] = {f"aten.op_{k}_{'x' * 60}": 10 for k in range(40)}
    report["by_module"] = {}
    report["total"] = {**report["total"], "value": 400, "known_value": 400}
    report["by_phase"]["forward"] = {**report["by_phase"]["forward"], "value": 400, "known_value": 400}
    big = check_svg_fits(render_report(report, format="svg", title="t"))
    assert float(big.get("height")) > 40 * 22 > float(small.get("height"))  # type: ignore[arg-type]
    charts = {
        g.get("data-chart"): len(g.findall(f"{SVG}g")) for g in big.iter(f"{SVG}g") if g.get("data-chart")
    }
    assert charts == {"operators": 40}
    assert "Diagnostics: 0" in "".join(t.text or "" for t in big.iter(f"{SVG}text"))


def test_hostile_operator_and_module_names_are_escaped() -> None:
    report = flop_report()
    report["by_operator"] = {P: 600, "aten.relu": 400}
    report["by_module"] = {P: 1000}
    report["ignored_operators"] = {P: {"calls": 1, "reason": P}}
    html = render_report(report, title=P)
    page = parse_html(html)
    assert not page.find_all("script") and not page.find_all("img") and "<img" not in html
    assert page.find_all("title")[0].text() == P
    check_links_and_ids(html)
    root = ET.fromstring(render_report(report, format="svg", title=P))
    assert not list(root.iter(f"{SVG}script")) and not list(root.iter(f"{SVG}foreignObject"))


def test_profile_groups_by_operator_and_keeps_unknown_device_time() -> None:
    report = profile_report()
    groups = grouped_operators(report)
    # aten::addmm: 20 µs + 10 µs CPU, 1 + 2 calls, two shape groups; device time never seen: None
    assert [
        (g["operator"], g["calls"], round(g["cpu"] * 1e6, 6), g["device"], g["shapes"]) for g in groups
    ] == [
        ("aten::addmm", 3, 30.0, None, 2),
        ("aten::relu", 1, 5.0, None, 1),
    ]
    page = parse_html(render_report(report, title="Profile"))
    assert rows(page, "operators") == [
        ["aten::addmm", "3", "30.00 µs", "unknown", "128 B", "2"],
        ["aten::relu", "1", "5.000 µs", "unknown", "-128 B", "1"],
    ]
    assert rows(page, "rows")[0] == ["1", "aten::addmm", "[8, 4], [4, 4]", "1", "20.00 µs", "unknown", "64 B"]
    text = " ".join(page.text().split())
    assert "3 of 7 operator groups (limit 3)" in text and "ranked by cpu self seconds" in text
    assert "not recorded in a ProfileReport" in text and "trace_path" in text  # where total time is
    check_links_and_ids(render_report(report))


def test_profile_with_device_time_ranks_by_it() -> None:
    report = profile_report(device_time=True)
    report["operators"].append(profile_row("aten::gelu", 1e-6, 90e-6))
    assert [g["operator"] for g in grouped_operators(report)] == ["aten::gelu", "aten::addmm", "aten::relu"]
    root = check_svg_fits(render_report(report, format="svg"))
    assert [g.get("data-chart") for g in root.iter(f"{SVG}g") if g.get("data-chart")] == ["device", "cpu"]


def test_profile_validation_names_the_location() -> None:
    report = profile_report()
    report["operators"][1]["cpu_self_seconds"] = "slow"
    with pytest.raises(ValueError, match=r"operators\[1\]\.cpu_self_seconds"):
        render_report(report)
    report = profile_report()
    report["context"]["device_time_supported"] = "no"
    with pytest.raises(ValueError, match="device_time_supported"):
        render_report(report)


def test_real_reports_render(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from torch import nn

    import torchscan

    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    x = torch.randn(2, 8)
    saved = json.loads(json.dumps(torchscan.measure_flops(lambda: model(x), modules=model, bytes=True)))
    page = parse_html(render_report(saved))
    operators = {r[0]: r for r in rows(page, "operators")}
    # two addmm: 2 x (2*8*16 + 2*16*4) MACs = 2 x 384 = 768 FLOPs; relu 2 x 16 = 32 FLOPs
    assert operators["aten.addmm"][4] == "768" and operators["aten.relu"][4] == "32"
    assert saved["total"]["value"] == 800 and "800 FLOPs" in page.text()
    profile = torchscan.profile_workload(lambda: model(x), device="cpu", progress=False, limit=5)
    check_svg_fits(render_report(json.loads(json.dumps(profile)), format="svg"))


def test_cli_renders_saved_flop_and_profile_reports(tmp_path: Path) -> None:
    from torchscan.cli import main

    for name, report in (("flops", flop_report()), ("profile", profile_report())):
        source = tmp_path / f"{name}.json"
        source.write_text(json.dumps(report), encoding="utf-8")
        for option in ("--html", "--svg"):
            target = tmp_path / f"{name}{option.replace('--', '.')}"
            assert main(["render", str(source), option, str(target), "--title", name]) == 0
            assert name in target.read_text(encoding="utf-8")
