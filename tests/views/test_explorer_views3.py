"""Explorer and snapshot details of views-3.md 5-6: tile percentages, the rail's "too small to label"
count, ModuleList-rooted models, an SVG that is never clipped and states the HTML's diagnostics count,
and no "different timing blocks" warning when the blocks match."""

from __future__ import annotations

import copy
import re
import xml.etree.ElementTree as ET

import pytest
from test_flop_profile_pages import check_svg_fits
from view_parse import embedded_data, parse_html
from view_reports import benchmark_comparison, benchmark_report, finish, layer, tiny_report

from torchscan import render_report
from torchscan.views.analysis.default_view import most_complete_view
from torchscan.views.analysis.tile_text import painted_pixels, room

SVG = "{http://www.w3.org/2000/svg}"


def group_of(document: str, view: str = "module_flops") -> dict:
    return embedded_data(document)["maps"][view]["groups"][0]


def test_tiles_carry_their_share_of_the_map() -> None:
    group = group_of(render_report(tiny_report(), metric="module_flops"))
    tiles = {node["path"]: node["tile"] for node in group["nodes"]}
    # F: Linear 56 and Linear 30 of 86 FLOPs: 56 / 86 = 65.1 %, 30 / 86 = 34.9 %; Identity has no tile
    assert tiles["0"]["value"] == "56 FLOPs · 65.1 %" and tiles["2"]["value"] == "30 FLOPs · 34.9 %"
    assert tiles[""]["value"] == "86 FLOPs · 100.0 %" and tiles["1"] is None


def test_a_tile_too_narrow_for_its_value_shows_its_share_then_nothing() -> None:
    # leaves of 1,000 / 40 / 3 / 120 FLOPs (1,163 in all): 40 / 1,163 of 892 px is 31 px (room for 3
    # characters: nothing fits), 1,000 / 1,163 is 767 px (the whole line)
    layers = [layer("", "Sequential")] + [
        layer(str(k), "Linear", flops=value) for k, value in enumerate((1000, 40, 3, 120))
    ]
    group = group_of(render_report(finish(layers), metric="module_flops"))
    nodes = {node["path"]: node for node in group["nodes"]}
    assert nodes["0"]["tile"]["value"] == "1.000 kFLOPs · 86.0 %"  # 1,000 / 1,163 = 0.8598
    # 120 / 1,163 of the map: 90 px holds "10.3 %" but not "120 FLOPs · 10.3 %"
    assert room(painted_pixels(nodes["3"]["width"])) < len("120 FLOPs · 10.3 %")
    assert nodes["3"]["tile"]["value"] == "10.3 %"
    assert nodes["1"]["tile"]["value"] == "" and nodes["2"]["tile"]["value"] == ""  # never a cut number
    assert nodes["1"]["tile"]["full"] == "40 FLOPs · 3.4 %"  # what a zoom brings back


def blocks_report() -> dict:
    """30 blocks of a Linear and a ReLU: wide Linear tiles, hidden ReLU values (also the browser tests')."""
    layers = [layer("", "Sequential")]
    for k in range(30):
        layers.append(layer(f"b{k}", "Sequential"))
        layers.append(layer(f"b{k}.0", "Linear", flops=(k + 1) * 50))
        layers.append(layer(f"b{k}.1", "ReLU", flops=k + 1))
    return finish(layers)


def test_the_rail_counts_exactly_the_tiles_it_cannot_label() -> None:
    html = render_report(blocks_report(), metric="module_flops")
    group = group_of(html)
    nodes = {node["id"]: node for node in group["nodes"]}
    hidden = {
        node["id"] for node in group["nodes"] if node["tile"] is not None and node["tile"]["value"] == ""
    }
    small = {card["node"] for card in group["rails"] if card["kind"] == "small"}
    assert small == hidden and len(small) > 30  # containers whose tile is hidden count too
    assert all(nodes[n]["tile"]["value"] for n in nodes if n not in small and nodes[n]["tile"])
    page = parse_html(html)
    panel = next(p for p in page.find_all("div") if p.attrs.get("data-view") == "module_flops")
    cards = [a for a in panel.find_all("a") if "small" in a.attrs.get("class", "").split()]
    assert len(cards) == len(hidden)
    summary = " ".join(panel.find_all("summary")[0].text().split())
    assert f"{len(hidden)} too small to label" in summary


def test_module_list_rooted_model_opens_on_module_flops() -> None:
    # root -> blocks (a ModuleList, never called) -> blocks.0 -> blocks.0.0, blocks.0.1: the root is a
    # container although no direct child of it ran; it is not a leaf missing a Module FLOPs value.
    layers = [layer("", "Net")]
    for k in range(2):
        layers += [
            layer(f"blocks.{k}", "Sequential"),
            layer(f"blocks.{k}.0", "Linear", flops=128),
            layer(f"blocks.{k}.1", "ReLU", flops=8),
        ]
    report = finish(layers)
    for item in report["layers"]:  # operator FLOPs per call, complete everywhere (the real report's shape)
        item["metrics"]["operator_flops_self"] = copy.deepcopy(item["metrics"].get("module_flops")) or {
            **report["totals"]["operator_flops"],
            "value": 0,
            "known_value": 0,
            "scope": "module_call",
        }
    assert most_complete_view(report) == "module_flops"


def test_module_list_model_from_torch_opens_on_module_flops() -> None:
    torch = pytest.importorskip("torch")
    from torch import nn

    import torchscan

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(8, 8), nn.ReLU()) for _ in range(3)])

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for block in self.blocks:
                x = block(x)
            return x

    report = torchscan.crawl_module(Net(), (8,))
    assert most_complete_view(report) == "module_flops"
    assert 'id="view-module_flops" value="module_flops" checked' in render_report(report)


def wide_report() -> dict:
    layers = [layer("", "Sequential")]
    for k in range(40):
        layers.append(layer(f"block_with_a_long_name_{k}", "Linear", flops=2048 + k))
    return finish(layers)


def test_svg_snapshot_is_never_clipped_and_has_no_tooltip_json() -> None:
    text = render_report(wide_report(), format="svg")
    root = check_svg_fits(text)
    assert len(text) < 120_000  # was about 420 kB for 40 leaves when every tooltip held call JSON
    assert '"layers"' not in text and "Call evidence" not in text
    cards = [a for a in root.iter(f"{SVG}a") if (a.get("id") or "").startswith("rail-")]
    for card in cards:  # every rail card's words fit inside its rectangle
        rect = card.find(f"{SVG}rect")
        assert rect is not None
        right = float(rect.get("x")) + float(rect.get("width"))  # type: ignore[arg-type]
        bottom = float(rect.get("y")) + float(rect.get("height"))  # type: ignore[arg-type]
        for line in card.iter(f"{SVG}text"):
            assert float(line.get("x")) + len(line.text or "") * 0.62 * 11 <= right  # type: ignore[arg-type]
            assert float(line.get("y")) <= bottom  # type: ignore[arg-type]


def test_svg_states_the_html_diagnostics_count() -> None:
    report = tiny_report()
    report["diagnostics"] = [
        # receptive-field geometry was not requested: informational, not counted as a warning
        {
            "code": "unsupported_module_metric",
            "severity": "warning",
            "metric": "receptive_field",
            "message": "no receptive field",
            "path": "1",
        },
    ]
    html, svg = render_report(report), render_report(report, format="svg")
    heading = re.search(r'<section id="diagnostic-groups"[^>]*><h2>([^<]*)</h2>', html)
    assert heading is not None and heading.group(1) == "Diagnostics: 0 about requested metrics"
    lines = [t.text for t in ET.fromstring(svg).iter(f"{SVG}text")]
    assert "Diagnostics: 0 about requested metrics" in lines and "Diagnostics: 1" not in " ".join(lines)
    report["diagnostics"].append(
        {
            "code": "unsupported_module_metric",
            "severity": "warning",
            "metric": "module_flops",
            "message": "no formula",
            "path": "1",
        }
    )
    html, svg = render_report(report), render_report(report, format="svg")
    assert "Diagnostics: 1 in 1 group" in html and "Diagnostics: 1 in 1 group" in svg


def test_no_timing_block_warning_when_blocks_match() -> None:
    before, after = benchmark_report(0.5, 0.25), benchmark_report(0.5, 0.25)
    # the same 4 calls per block; the candidate simply kept timing for 7 blocks instead of 5
    after["measurement"] = {"number_per_run": 4, "raw_times_seconds": [2.0] * 7, "measured_calls": 28}
    page = render_report(benchmark_comparison(before, after))
    assert "Different timing blocks" not in page and "7 blocks × 4 calls" in page
    after["measurement"] = {"number_per_run": 2, "raw_times_seconds": [1.0] * 7, "measured_calls": 14}
    assert "Different timing blocks" in render_report(benchmark_comparison(before, after))
