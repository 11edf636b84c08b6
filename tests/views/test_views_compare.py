"""Before/after explorer and snapshot (render.md 5, 7.7)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from view_parse import embedded_data, parse_html
from view_reports import keyboard_report, tiny_report

from torchscan.views.render import render_report


def after_plus_12() -> dict[str, Any]:
    report = tiny_report()
    report["layers"][3]["metrics"]["module_flops"]["value"] = 42
    report["layers"][3]["metrics"]["module_flops"]["known_value"] = 42
    report["totals"]["module_flops"]["value"] = 98
    report["totals"]["module_flops"]["known_value"] = 98
    return report


def test_delta_of_one_call() -> None:
    html = render_report(after_plus_12(), before=tiny_report())
    text = " ".join(parse_html(html).text().split())
    assert "complete · +12 FLOPs" in text
    assert "Changed calls (1)" in text and "Added calls (0)" in text and "Removed calls (0)" in text
    data = embedded_data(html)
    assert data["comparison"]["totals"]["module_flops"]["delta"] == 12
    nodes = {n["path"]: n for n in data["maps"]["module_flops"]["groups"][0]["nodes"]}
    assert nodes[""]["delta"] == 12 and nodes["2"]["delta"] == 12 and nodes["0"]["delta"] == 0
    # Issue 23: the exact delta is followed by its change relative to the baseline (30 -> 42).
    assert nodes["2"]["delta_display"] == "complete · +12 FLOPs (+40.0 %)"
    root = parse_html(html)
    tile = root.by_id(f"map-module_flops-0-{nodes['2']['id']}")
    assert tile is not None and "Complete comparable delta: +12 FLOPs (+40.0 %)." in tile.attrs["aria-label"]
    assert {r.attrs.get("data-bar") for r in tile.find_all("rect")} >= {"before", "after"}


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda r: r["context"].update(devices=["cuda:0"]), "devices differs"),
        (lambda r: r["context"].update(dtypes=["torch.float16"]), "dtypes differs"),
        (lambda r: r["context"].update(torch_version="9"), "torch_version differs"),
        (lambda r: r["context"].pop("python_version"), "python_version context is missing"),
        (lambda r: r["context"].update(analysis_mode="structure"), "analysis_mode differs"),
        # Issue 15: a source-only difference no longer gates (test_source_only_inputs_stay_comparable).
        (lambda r: r["inputs"]["args"][0].update(shape=[2, 4]), "input metadata differs"),
        (
            lambda r: r["inputs"].update(source="provided", kwargs={"x": r["inputs"]["args"][0]}),
            "input metadata differs",
        ),
    ],
)
def test_execution_gate(mutate, reason: str) -> None:
    after = after_plus_12()
    mutate(after)
    html = render_report(after, before=tiny_report())
    data = embedded_data(html)
    totals = data["comparison"]["totals"]
    assert totals["module_flops"]["delta"] is None and totals["module_flops"]["status"] == "unavailable"
    assert totals["operator_flops"]["delta"] is None
    assert totals["parameters"]["delta"] == 0
    assert "not comparable" in html and reason in html
    root = parse_html(html)
    tiles = [a for a in root.find_all("a") if "data-map-node" in a.attrs]
    assert all(
        f"Delta unknown: {reason}" in t.attrs["aria-label"]
        for t in tiles
        if "Delta unknown" in t.attrs["aria-label"]
    )
    assert all("Δ" not in t.text() for t in tiles)


def test_incompatible_total_method() -> None:
    after = tiny_report()
    after["totals"]["module_flops"]["method"] = "other"
    with pytest.raises(ValueError, match="incompatible method"):
        render_report(after, before=tiny_report())
    with pytest.raises(ValueError, match="incompatible method"):
        render_report(after, before=tiny_report(), format="svg")


def _geometry(html: str) -> list[tuple[str, ...]]:
    root = parse_html(html)
    return [
        tuple(r.attrs[k] for k in ("x", "y", "width", "height"))
        for r in root.find_all("rect")
        if "data-tile" in r.attrs
    ]


def test_reversed_and_gated_keep_geometry_and_bars() -> None:
    before, after = tiny_report(), after_plus_12()
    forward = render_report(after, before=before)
    backward = render_report(before, before=after)
    gated_after = copy.deepcopy(after)
    gated_after["context"]["devices"] = ["cuda:0"]
    gated = render_report(gated_after, before=before)
    assert _geometry(forward) == _geometry(backward) == _geometry(gated)
    data = embedded_data(forward)
    node = next(n for n in data["maps"]["module_flops"]["groups"][0]["nodes"] if n["path"] == "2")
    tile = parse_html(forward).by_id(f"map-module_flops-0-{node['id']}")
    assert tile is not None
    bars = {
        r.attrs["data-bar"]: float(r.attrs["width"]) for r in tile.find_all("rect") if "data-bar" in r.attrs
    }
    assert bars["after"] > bars["before"]
    tile = parse_html(backward).by_id(f"map-module_flops-0-{node['id']}")
    bars = {
        r.attrs["data-bar"]: float(r.attrs["width"]) for r in tile.find_all("rect") if "data-bar" in r.attrs
    }  # type: ignore[union-attr]
    assert bars["before"] > bars["after"]


def test_added_and_removed_modules() -> None:
    before = keyboard_report()
    after = tiny_report()
    html = render_report(after, before=before)
    data = embedded_data(html)
    nodes = {n["path"]: n for n in data["maps"]["module_flops"]["groups"][0]["nodes"]}
    assert nodes["0.0"]["change"] == "removed"
    # Issue 23: a removed branch's delta is -before (Linear(4,8): 56 FLOPs), not unknown.
    assert nodes["0.0"]["delta"] == -56 and nodes["0.0"]["delta_display"] == "complete · -56 FLOPs (-100.0 %)"
    text = parse_html(html).text()
    assert "Removed calls (" in text and "Before input and measurement context" in text
    assert "After input and measurement context" in text
    root = parse_html(html)
    assert root.by_id("before-call-2") is not None
    tile = root.by_id(f"map-module_flops-0-{nodes['0.0']['id']}")
    assert tile is not None and "· removed" in tile.text()


def test_parameter_views_show_subtree_deltas() -> None:
    # Issue 23 replaces render.md 5's "parameter views never show per-module deltas": both sides are
    # complete, so every branch has a delta (here 0: only a FLOP count changed).
    data = embedded_data(render_report(after_plus_12(), before=tiny_report()))
    for node in data["maps"]["parameters"]["groups"][0]["nodes"]:
        assert node["delta"] == 0 and node["delta_reason"] is None
    data = embedded_data(render_report(tiny_report(), before=keyboard_report()))
    nodes = {n["path"]: n for n in data["maps"]["parameters"]["groups"][0]["nodes"]}
    assert nodes["0.0"]["delta"] == -nodes["0.0"]["before_subtotal"]["value"] and nodes["0.0"]["delta"] < 0


def test_svg_comparison_parses() -> None:
    import xml.etree.ElementTree as ET

    svg = render_report(after_plus_12(), before=tiny_report(), format="svg")
    root = ET.fromstring(svg)
    assert "Changed calls (1)" in svg and "complete · +12 FLOPs" in svg
    assert root.find(".//{http://www.w3.org/2000/svg}g[@id='svg-evidence']") is not None


def test_source_only_inputs_stay_comparable() -> None:
    # input_shape= (generated) before, args=(tensor,) (provided) after, same shape/dtype/device.
    after = after_plus_12()
    after["inputs"]["source"] = "provided"
    before = tiny_report()
    html = render_report(after, before=before)
    data = embedded_data(html)
    assert data["gate"] == []
    assert data["comparison"]["totals"]["module_flops"]["delta"] == 12
    nodes = {n["path"]: n for n in data["maps"]["module_flops"]["groups"][0]["nodes"]}
    assert nodes["2"]["delta"] == 12
    note = "Inputs differ only in source (before generated, after provided)"
    assert data["comparison_notes"][0].startswith(note)
    text = " ".join(parse_html(html).text().split())
    assert note in text and "not comparable" not in text
    assert note in render_report(after, before=before, format="svg")


def test_comparison_cards_show_before_after_delta() -> None:
    html = render_report(after_plus_12(), before=tiny_report())
    cards = [d for d in parse_html(html).find_all("p") if d.has_class("card-change")]
    assert len(cards) == 3
    flops = " ".join(cards[0].text().split())
    # Issue 23: short units and the relative change (12 / 86 = 13.95%).
    assert flops == "Before 86 FLOPs → after 98 FLOPs · Δ +12 FLOPs (+14.0 %)"
    assert "Δ +0 elements (+0.0 %)" in " ".join(cards[1].text().split())
