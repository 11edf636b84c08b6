"""Evidence model and explorer content (render.md 2, 3, 7.3-7.6)."""

from __future__ import annotations

import copy
import itertools
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from view_parse import embedded_data, parse_html
from view_reports import finish, layer, m, nested_report, owned_report, resnet50_report, tiny_report

from torchscan.views.render import render_report

NS = "{http://www.w3.org/2000/svg}"


def group_nodes(data: dict[str, Any], view: str = "module_flops", k: int = 0) -> dict[str, dict[str, Any]]:
    return {node["path"]: node for node in data["maps"][view]["groups"][k]["nodes"]}


def test_tiny_map_arithmetic() -> None:
    data = embedded_data(render_report(tiny_report()))
    group = data["maps"]["module_flops"]["groups"][0]
    nodes = group_nodes(data)
    # Root subtotal 86 = 56 (Linear 4->8: 8 x (2*4 - 1)) + 0 (Identity) + 30 (Linear 8->2: 2 x (2*8 - 1)).
    assert group["known_total"] == 86 and group["scale"] == "known"
    assert (
        nodes[""]["width"] == 1
        and nodes[""]["direct_width"] == 0
        and nodes[""]["direct_kind"] == "structural"
    )
    assert nodes["0"]["width"] == pytest.approx(56 / 86)
    assert nodes["2"]["x"] == pytest.approx(56 / 86)
    assert nodes["1"]["width"] == 0 and nodes["1"]["rail"] == ["zero"]
    assert data["maps"]["parameters"]["groups"][0]["known_total"] == 48  # 32 + 16 weights


def _boxes(document_root: Any, group_id: str) -> dict[str, tuple[str, ...]]:
    return {
        a.attrs["data-node-id"]: tuple(
            a.find_all("rect", data_tile="")[0].attrs[k] for k in ("x", "y", "width", "height")
        )
        for a in document_root.find_all("a")
        if a.attrs.get("data-group-id") == group_id and "data-map-node" in a.attrs
    }


def test_nested_geometry_ratios_and_html_svg_agree() -> None:
    report = nested_report()
    html = render_report(report)
    root = parse_html(html)
    boxes = _boxes(root, "map-module_flops-0")
    data = embedded_data(html)
    ids = {n["path"]: n["id"] for n in data["maps"]["module_flops"]["groups"][0]["nodes"]}

    def span(path: str) -> float:
        _x, _, w, _ = boxes[ids[path]]
        gap = min(1.5, (float(w) + 1.5) / 5)
        return float(w) + gap

    assert span("0") / span("1") == pytest.approx(64 / 30, rel=1e-3)
    assert span("0.0") / span("0.1") == pytest.approx(56 / 8, rel=1e-3)
    ys = sorted({float(b[1]) for b in boxes.values()})
    assert len({round(b - a, 3) for a, b in itertools.pairwise(ys)}) == 1
    svg = ET.fromstring(render_report(report, format="svg"))
    for a in svg.iter(f"{NS}a"):
        ident = a.get("id", "")
        if ident.startswith("static-map-module_flops-0-"):
            rect = a.find(f"{NS}rect[@data-tile]")
            assert rect is not None
            node = ident.removeprefix("static-map-module_flops-0-")
            assert tuple(rect.get(k) for k in ("x", "y", "width", "height")) == boxes[node]


def test_statuses_structure_scale_and_wording() -> None:
    report = tiny_report()
    report["layers"][1]["metrics"]["module_flops"] = m("partial", 0)
    report["layers"][2]["metrics"]["module_flops"] = m("unavailable", None)
    report["layers"][3]["metrics"]["module_flops"] = m("complete", 0)
    report["totals"]["module_flops"] = m("partial", 0, scope="forward")
    html = render_report(report)
    data = embedded_data(html)
    group = data["maps"]["module_flops"]["groups"][0]
    nodes = group_nodes(data)
    assert group["scale"] == "structure"
    assert [nodes[p]["rail"] for p in ("0", "1", "2")] == [["unknown"], ["unknown"], ["zero"]]
    assert all(nodes[p]["width"] > 0 for p in ("0", "1", "2"))
    assert nodes[""]["subtotal"]["status"] == "partial"
    text = " ".join(parse_html(html).text().split())
    assert "complete 0 FLOPs" in text
    assert "partial at least 0 FLOPs (lower bound; full value unknown)" in text
    assert "unavailable unknown" in text
    assert "structural · unscaled" in html
    svg = render_report(report, format="svg")
    assert "partial · ≥ 0 FLOPs · full value unknown" in svg
    assert "structural · unscaled" in svg


def test_partial_bound_is_hatched_and_sized_by_known_part() -> None:
    report = tiny_report()
    report["layers"][1]["metrics"]["module_flops"] = m("partial", 7)
    report["layers"][2]["metrics"]["module_flops"] = m("partial", 0)
    report["totals"]["module_flops"] = m("partial", 37, scope="forward")
    html = render_report(report)
    nodes = group_nodes(embedded_data(html))
    assert nodes["0"]["width"] == pytest.approx(7 / 37)
    root = parse_html(html)
    tile = root.by_id(f"map-module_flops-0-{nodes['0']['id']}")
    assert tile is not None
    assert any((r.attrs.get("fill") or "").startswith("url(#") for r in tile.find_all("rect"))
    assert "partial" in tile.attrs["aria-label"] and "full value unknown" in tile.attrs["aria-label"]
    assert root.by_id(f"map-module_flops-0-{nodes['1']['id']}") is None  # partial 0: no tile ...
    cards = [
        a
        for a in root.find_all("a")
        if a.has_class("rail-card") and a.attrs["data-node-id"] == nodes["1"]["id"]
    ]
    card_text = cards[0].text()
    assert (
        "at least 0" in card_text
        and "full value unknown" in card_text
        and "deliberately unscaled" in card_text
    )


def test_groups_per_method_and_unrecorded() -> None:
    report = tiny_report()
    report["layers"][3]["metrics"]["module_flops"]["method"] = "custom"
    data = embedded_data(render_report(report))
    groups = data["maps"]["module_flops"]["groups"]
    assert [g["known_total"] for g in groups] == [30, 56]
    assert all(g["nodes"][0]["width"] == 1 for g in groups)
    root = parse_html(render_report(report))
    panel = next(p for p in root.find_all("div") if p.attrs.get("data-view") == "module_flops")
    ranks = [
        tr.children[0].text()
        for table in panel.find_all("table")
        if not table.has_class("by-type")  # the by-type aggregate (issue 23) has no rank column
        for tr in table.find_all("tr")
        if tr.children and tr.children[0].tag == "td"
    ]
    assert ranks[:3] == ["1", "1", "2"]
    bars = [p.attrs["value"] for p in panel.find_all("progress")]
    assert bars.count("1.000000") >= 2
    del report["layers"][1]["metrics"]["module_flops"]
    kinds = [g["kind"] for g in embedded_data(render_report(report))["maps"]["module_flops"]["groups"]]
    assert kinds == ["recorded", "unrecorded", "recorded"]  # ordered by (method, unit, scope, synthetic)
    report = tiny_report()
    report["layers"][1]["metrics"]["module_flops"]["method"] = "no_recorded_measurement"
    kinds = [g["kind"] for g in embedded_data(render_report(report))["maps"]["module_flops"]["groups"]]
    assert kinds == ["recorded", "recorded"]


def test_repeated_and_shared_calls() -> None:
    layers = [
        layer("", "Sequential"),
        layer("0", "Block", call_index=0),
        layer("0.lin", "Linear", flops=28, params=20),
        layer("0", "Block", call_index=1),
        layer("0.lin", "Linear", call_index=1, flops=28, shared=True),
    ]
    report = finish(layers)
    html = render_report(report)
    data = embedded_data(html)
    nodes = group_nodes(data)
    assert nodes["0.lin"]["direct"]["value"] == 56
    assert [c["result"]["value"] for c in nodes["0.lin"]["calls"]] == [28, 28]
    tile = parse_html(html).by_id(f"map-module_flops-0-{nodes['0.lin']['id']}")
    assert tile is not None and "×2 calls" in tile.text()
    params = parse_html(render_report(report, metric="parameters")).text()
    assert "20 newly attributed parameters" in params
    assert "Shared tensors · no new parameter attribution" in params
    assert data["maps"]["parameters"]["groups"][0]["known_total"] == 20


def test_uncalled_module_only_in_totals() -> None:
    report = finish([layer("", "Sequential"), layer("used", "Linear", flops=28, params=16)])
    report["totals"]["parameters"] = m("complete", 80, "elements", "pytorch", "model")
    html = render_report(report, metric="parameters")
    assert "Authoritative model total: complete 80 elements" in " ".join(parse_html(html).text().split())
    assert "belong to no executed call" in html
    assert [n["path"] for n in embedded_data(html)["maps"]["parameters"]["groups"][0]["nodes"]] == [
        "",
        "used",
    ]


def test_covered_calls() -> None:
    html = render_report(owned_report())
    data = embedded_data(html)
    groups = data["maps"]["module_flops"]["groups"]
    assert [g["kind"] for g in groups] == ["recorded", "recorded"]  # no unrecorded group for covered calls
    custom = next(g for g in groups if g["method"] == "custom_module_handler:blk")
    nodes = {n["path"]: n for n in custom["nodes"]}
    assert nodes["0.0"]["display_status"] == "covered"
    assert nodes["0.0"]["calls"][0]["display"] == "covered · included in 0 · call #0 inclusive estimate"
    assert "module_flops: included in 0 · call #0 inclusive estimate" in parse_html(html).text()


def test_structure_mode_details() -> None:
    report = tiny_report()
    report["context"]["analysis_mode"] = "structure"
    for x in report["layers"]:
        x["metrics"] = {"calls": x["metrics"]["calls"]}
    for name in ("module_flops", "macs", "dmas"):
        report["totals"][name] = m(
            "unavailable", None, report["totals"][name]["unit"], "not_requested", "forward"
        )
    html = render_report(report)
    assert "not_requested" in parse_html(html).by_id("call-1").text()  # type: ignore[union-attr]
    assert embedded_data(html)["maps"]["module_flops"]["groups"][0]["kind"] == "unrecorded"


def test_skeleton_hooks_and_links() -> None:
    for report in (tiny_report(), resnet50_report(), owned_report()):
        html = render_report(report)
        assert html.endswith("</html>\n") and not html.endswith("\n\n") and html.startswith("<!doctype html>")
        root = parse_html(html)
        assert len(root.find_all("script")) == 2
        radios = [i for i in root.find_all("input") if i.attrs.get("name") == "view"]
        assert [r.attrs["id"] for r in radios] == [
            f"view-{v}"
            for v in ("module_flops", "operator_flops", "macs", "dmas", "parameters", "parameter_bytes")
        ]  # issue 15 adds the operator-FLOPs view after Module FLOPs
        assert len([d for d in root.find_all("div") if d.has_class("metric-panel")]) == 6
        ids = [e.attrs["id"] for e in root.iter() if "id" in e.attrs]
        assert len(ids) == len(set(ids))
        for a in root.find_all("a"):
            assert a.attrs["href"][1:] in ids
        for button in root.find_all("button"):
            assert "disabled" in button.attrs
        for s in root.find_all("li"):
            if s.has_class("suggestion"):
                assert "Recorded fact:" in s.text() and "Experiment to try:" in s.text()
        appendix = [d for d in root.find_all("details") if d.has_class("appendix")]
        assert len(appendix) == 1 and "open" not in appendix[0].attrs
        for svg in root.find_all("svg"):
            assert svg.attrs["xmlns"] == "http://www.w3.org/2000/svg" and svg.attrs["role"] == "group"


def test_resnet_default_selection_and_rankings() -> None:
    report = resnet50_report()
    data = embedded_data(render_report(report))
    view = data["maps"]["module_flops"]
    nodes = {n["id"]: n for n in view["groups"][0]["nodes"]}
    best = max((n for n in nodes.values()), key=lambda n: (n["direct"] or {}).get("known_value") or 0)
    assert view["initial_node"] == best["id"]
    assert data["suggestions"][0]["href"].startswith("#call-")
    assert "largest complete attributed parameters" in data["suggestions"][1]["fact"]
    assert len(data["suggestions"]) == 3  # the unestimated_functional_work diagnostics add the third


def test_determinism_and_purity() -> None:
    for report in (tiny_report(), resnet50_report(), owned_report()):
        pristine = copy.deepcopy(report)
        for fmt in ("html", "svg"):
            first = render_report(report, before=report, format=fmt)
            assert first == render_report(report, before=report, format=fmt)
            assert report == pristine


def test_large_report_size_is_reasonable() -> None:
    assert len(render_report(resnet50_report()).encode()) < 8_000_000
