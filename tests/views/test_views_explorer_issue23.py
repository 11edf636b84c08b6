"""Issue 23 in the explorer model: forward order, by-type aggregate, subtree deltas, short-unit wording."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from test_views_explorer import OP
from view_parse import embedded_data, parse_html
from view_reports import finish, keyboard_report, layer, m, tiny_report

from torchscan.views.analysis.geometry import FOREIGN_REASON, INCOMPLETE_REASON
from torchscan.views.analysis.tree_order import call_ordered
from torchscan.views.common.number_style import quantity
from torchscan.views.comparison.delta_words import relative, short_delta, short_measure, short_text
from torchscan.views.render import render_report


def forward_report() -> dict[str, Any]:
    """Children called ``b, a, 10, 2``: neither alphabetical nor numeric order."""
    return finish(
        [
            layer("", "Sequential"),
            layer("b", "Linear", flops=10),
            layer("a", "ReLU", flops=10),
            layer("10", "Linear", flops=10),
            layer("2", "Linear", flops=10),
        ]
    )


def visible_text(html: str) -> str:
    """The page's text without its script and embedded data."""
    return parse_html(re.sub(r"<script.*?</script>", "", html, flags=re.S)).text()


def group_nodes(data: dict[str, Any], view: str = "module_flops", k: int = 0) -> list[dict[str, Any]]:
    return data["maps"][view]["groups"][k]["nodes"]


def test_maps_follow_call_order() -> None:
    html = render_report(forward_report(), metric="module_flops")
    data = embedded_data(html)
    nodes = group_nodes(data)
    assert [n["path"] for n in nodes] == ["", "b", "a", "10", "2"]
    # Ids stay numeric-aware and stable; only the walk follows the forward pass.
    assert {n["path"]: n["id"] for n in nodes} == {
        "": "node-0",
        "2": "node-1",
        "10": "node-2",
        "a": "node-3",
        "b": "node-4",
    }
    assert [n["x"] for n in nodes[1:]] == [0, 0.25, 0.5, 0.75]
    panel = next(p for p in parse_html(html).find_all("div") if p.attrs.get("data-view") == "module_flops")
    tiles = [a.attrs["aria-label"].split(",")[0] for a in panel.find_all("a") if "data-map-node" in a.attrs]
    assert tiles == ["(root)", "b", "a", "10", "2"]
    svg = render_report(forward_report(), format="svg")
    drawn = re.findall(r'<a id="static-map-module_flops-0-(node-\d)"', svg)
    assert drawn == ["node-0", "node-4", "node-3", "node-2", "node-1"]


def test_top_n_ties_rank_in_call_order() -> None:
    layers = [layer("", "Sequential"), layer("layer", "ModuleList")]
    layers += [layer(f"layer.{i}", "Linear", flops=7) for i in range(12)]
    data = embedded_data(render_report(finish(layers), metric="module_flops"))
    top = data["maps"]["module_flops"]["groups"][0]["top"]
    assert [row["call"] for row in top] == [f"layer.{i} · call #0" for i in range(12)]


def test_removed_branch_sits_where_it_ran_and_reads_minus_before() -> None:
    before = forward_report()
    after = finish([x for x in forward_report()["layers"] if x["path"] != "a"])
    data = embedded_data(render_report(after, before=before, metric="module_flops"))
    nodes = {n["path"]: n for n in group_nodes(data)}
    assert [n["path"] for n in group_nodes(data)] == ["", "b", "a", "10", "2"]
    removed = nodes["a"]
    assert removed["change"] == "removed" and removed["delta"] == -10
    assert removed["tile"]["delta"] == "Δ -10 FLOPs (-100.0 %)"  # "· complete" has no room
    assert nodes[""]["delta"] == -10 and nodes[""]["delta_display"] == "complete · -10 FLOPs (-25.0 %)"
    # Added: +after, and no relative change against a baseline that did not run.
    data = embedded_data(render_report(before, before=after, metric="module_flops"))
    added = {n["path"]: n for n in group_nodes(data)}["a"]
    assert added["change"] == "added" and added["delta"] == 10
    assert added["tile"]["delta"] == "Δ +10 FLOPs · complete"


def test_subtree_delta_with_different_call_counts() -> None:
    # Before: layer "0" called twice (5 + 5); after: once (7). Both sides complete: delta -3.
    before = finish(
        [layer("", "Sequential"), layer("0", "Linear", flops=5), layer("0", "Linear", flops=5, call_index=1)]
    )
    after = finish([layer("", "Sequential"), layer("0", "Linear", flops=7)])
    data = embedded_data(render_report(after, before=before, metric="module_flops"))
    nodes = {n["path"]: n for n in group_nodes(data)}
    assert nodes["0"]["delta"] == -3 and nodes[""]["delta"] == -3
    assert nodes["0"]["delta_display"] == "complete · -3 FLOPs (-30.0 %)"


def test_delta_unknown_only_when_a_side_is_incomplete_or_not_comparable() -> None:
    before = tiny_report()
    after = tiny_report()
    after["layers"][1]["metrics"]["module_flops"] = m("partial", 50)
    data = embedded_data(render_report(after, before=before, metric="module_flops"))
    nodes = {n["path"]: n for n in group_nodes(data)}
    assert nodes["0"]["delta"] is None and nodes["0"]["delta_reason"] == INCOMPLETE_REASON
    assert nodes[""]["delta"] is None and nodes["0"]["tile"]["delta"] == "delta unknown"
    assert nodes["2"]["delta"] == 0  # the complete sibling keeps its delta
    # An added call measured under another method: the branch's group subtotal leaves it out.
    after = tiny_report()
    after["layers"].append(layer("3", "Linear"))
    after["layers"][-1]["metrics"]["module_flops"] = m("complete", 4, method="custom")
    data = embedded_data(render_report(after, before=tiny_report(), metric="module_flops"))
    groups = data["maps"]["module_flops"]["groups"]
    assert [g["method"] for g in groups] == ["custom", "torchscan_module_formula"]
    nodes = {n["path"]: n for n in groups[1]["nodes"]}
    assert nodes[""]["delta"] is None and nodes[""]["delta_reason"] == FOREIGN_REASON
    assert nodes["0"]["delta"] == 0


def test_comparison_of_complete_reports_has_no_unknown_delta() -> None:
    def with_operator_counts(report: dict[str, Any]) -> dict[str, Any]:
        for x in report["layers"]:
            own = x["metrics"].get("module_flops", {"value": 0})["value"]
            x["metrics"]["operator_flops_self"] = m("complete", own, method=OP)
        return report

    before = with_operator_counts(keyboard_report())
    after = with_operator_counts(finish([x for x in keyboard_report()["layers"] if x["path"] != "0.2"]))
    html = render_report(after, before=before)
    data = embedded_data(html)
    checked = 0
    for view in data["maps"].values():
        for group in view["groups"]:
            checked += 1
            for node in group["nodes"]:
                assert node["delta"] is not None, (view["view"], node["path"], node["delta_reason"])
    assert checked == 6 and "delta unknown" not in visible_text(html)


def test_by_module_type_aggregate() -> None:
    html = render_report(tiny_report(), metric="module_flops")
    group = embedded_data(html)["maps"]["module_flops"]["groups"][0]
    assert group["by_type"] == [
        {"type": "Linear", "calls": 2, "text": "86 FLOPs", "share": "100.0 %"},
        {"type": "Identity", "calls": 1, "text": "0 FLOPs", "share": "0.0 %"},
    ]
    panel = next(p for p in parse_html(html).find_all("div") if p.attrs.get("data-view") == "module_flops")
    table = next(t for t in panel.find_all("table") if t.has_class("by-type"))
    first = [td.text() for td in table.find_all("td")[:4]]
    assert first == ["Linear", "2", "86 FLOPs", "100.0 %"]
    # The aggregate sits above the top-N table.
    tables = [t.attrs.get("class") for t in panel.find_all("table")]
    assert tables.index("by-type") < tables.index("top-layers")
    partial = tiny_report()
    partial["layers"][3]["metrics"]["module_flops"] = m("partial", 20)
    partial = finish(partial["layers"])
    group = embedded_data(render_report(partial, metric="module_flops"))["maps"]["module_flops"]["groups"][0]
    assert group["by_type"][0] == {
        "type": "Linear",
        "calls": 2,
        "text": "≥ 76 FLOPs · 1 incomplete",
        "share": "unknown",  # a lower bound over a lower-bound total bounds nothing
    }


def test_top_n_before_and_delta_columns() -> None:
    before = tiny_report()
    after = copy.deepcopy(before)
    after["layers"][3]["metrics"]["module_flops"] = m("complete", 42)
    after = finish(after["layers"])
    html = render_report(after, before=before, metric="module_flops")
    assert embedded_data(html)["maps"]["module_flops"]["change_text"] == "+12 FLOPs (+14.0 %)"  # 86 -> 98
    assert "· change +12 FLOPs (+14.0 %)" in visible_text(html)
    rows = {r["call"]: r for r in embedded_data(html)["maps"]["module_flops"]["groups"][0]["top"]}
    assert (
        rows["2 · call #0"]["before"] == "30 FLOPs" and rows["2 · call #0"]["delta"] == "+12 FLOPs (+40.0 %)"
    )
    assert rows["0 · call #0"]["delta"] == "+0 FLOPs (+0.0 %)"
    panel = next(p for p in parse_html(html).find_all("div") if p.attrs.get("data-view") == "module_flops")
    top = next(t for t in panel.find_all("table") if t.has_class("top-layers"))
    headers = [th.text() for th in top.find_all("th")]
    assert headers[-2:] == ["Before", "Δ (after minus before)"]
    assert "+12 FLOPs (+40.0 %)" in top.text()
    alone = render_report(after, metric="module_flops").split("<script", 1)[0]
    assert "Δ (after minus before)" not in alone and 'class="bar-legend"' not in alone


def test_paired_bar_legend_when_comparing() -> None:
    html = render_report(tiny_report(), before=tiny_report(), metric="module_flops")
    legends = [p for p in parse_html(html).find_all("p") if p.has_class("bar-legend")]
    assert len(legends) == 6  # one per view panel
    text = " ".join(legends[0].text().split())
    assert text.startswith("before (baseline) after · both bars of every tile share one scale per map")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        # views-3.md 5 amends issue 23's K/M/G words: one page style, four significant digits.
        (22_403_652_352, "22.40 GFLOPs"),
        (-11_200_742_400, "-11.20 GFLOPs"),
        (7_087_872, "7.088 MFLOPs"),
        (999_600, "999.6 kFLOPs"),
        (999_960, "1.000 MFLOPs"),  # rounded first: never "1,000 kFLOPs"
        (1.5e15, "1.500 PFLOPs"),
        (512, "512 FLOPs"),
        (0.25, "0.25 FLOPs"),
        (1e-7, "0.0000001 FLOPs"),
    ],
)
def test_short_numbers_never_use_e_notation(value: float, text: str) -> None:
    assert quantity(value, "FLOPs") == text


def test_short_measures_and_relative_change() -> None:
    # -11,200,742,400 / 22,403,652,352 = -0.49994 -> -50.0 %
    assert short_delta(-11_200_742_400, "FLOPs", 22_403_652_352) == "-11.20 GFLOPs (-50.0 %)"
    assert short_delta(5, "FLOPs", None) == "+5 FLOPs" and relative(5, 0) is None
    assert short_measure(m("partial", 1_200_000)) == "≥ 1.200 MFLOPs"
    assert short_measure(m("unavailable", None)) == "unknown"


def test_tile_texts_never_use_e_notation() -> None:
    # text.compact_text writes 999,600 as "1e+03K"; the explorer's own wording rounds first.
    assert short_text(m("complete", 999_600)) == "999.6 kFLOPs · complete"
    assert short_text(m("partial", 1.5e15)) == "≥ 1.500 PFLOPs · partial"
    assert short_text(m("unavailable", None)) == "unknown · unavailable"
    layers = [
        layer("", "Sequential"),
        layer("0", "Linear", flops=999_600),
        layer("1", "Linear", flops=1.5e15),
    ]
    report = finish(layers)
    for key in ("by_module", "by_operator"):  # the helper's made-up operator counts exceed exact integers
        report["operator_flops"][key] = {}
    data = embedded_data(render_report(report, metric="module_flops"))
    group = data["maps"]["module_flops"]["groups"][0]
    assert [row["text"] for row in group["top"]] == ["1.500 PFLOPs · complete", "999.6 kFLOPs · complete"]
    # too small to label: the card says what the tile had no room for, its value and share
    assert [card["text"] for card in group["rails"]] == ["999.6 kFLOPs · < 0.1 %"]
    # 1.5e15 / (1.5e15 + 999,600) = 0.99999933 of the map: more than 99.9 %, not all of it
    assert [n["tile"]["value"] for n in group["nodes"] if n["tile"]][2] == "1.500 PFLOPs · > 99.9 %"


def test_svg_snapshot_has_the_legend_and_short_change() -> None:
    before = tiny_report()
    after = finish([x for x in tiny_report()["layers"] if x["path"] != "2"])
    svg = render_report(after, before=before, format="svg", metric="module_flops")
    assert '<g id="bar-legend">' in svg and "before (baseline)" in svg
    assert ">Before 86 FLOPs → after 56 FLOPs · Δ -30 FLOPs (-34.9 %)<" in svg
    assert "Δ -30 FLOPs (-100.0 %) · complete" in svg  # the removed Linear's tile
    assert '<g id="bar-legend">' not in render_report(after, format="svg")


def informational_report() -> dict[str, Any]:
    """A receptive-field diagnostic nobody asked for beside a requested-metric one, on path ``0``."""
    report = tiny_report()
    report["diagnostics"] = [
        {
            "code": "unsupported_module_metric",
            "severity": "warning",
            "metric": "receptive_field",
            "path": "0",
            "message": "Module type not supported: Linear",
        },
        {"code": "x_code", "severity": "warning", "metric": "module_flops", "path": "0", "message": "m"},
    ]
    return report


def test_inspector_lists_unrequested_metrics_apart() -> None:
    html = render_report(informational_report(), metric="module_flops")
    panel = next(p for p in parse_html(html).find_all("div") if p.attrs.get("data-view") == "module_flops")
    aside = panel.find_all("aside")[0]
    text = " ".join(aside.text().split())
    order = [
        "Diagnostics",
        "x_code [module_flops]: m",
        "Not requested (informational)",
        "unsupported_module_metric [receptive_field]: Module type not supported: Linear",
    ]
    positions = [text.find(part) for part in order]
    assert -1 not in positions and positions == sorted(positions)


def test_operator_card_explains_the_method_label() -> None:
    report = tiny_report()
    report["operator_flops"]["by_operator"] = {"aten.addmm": 86, "aten.gelu": 14}
    cards = [p for p in parse_html(render_report(report)).find_all("p") if p.has_class("method-note")]
    assert len(cards) == 1
    text = " ".join(cards[0].text().split())
    assert text.startswith(
        "Operator FLOPs use torchscan_flops_v1: 86 FLOPs are in operators that FlopCounterMode"
    )
    assert "aten.gelu" in text


def test_call_ordered_merges_baseline_only_siblings() -> None:
    # Layer indexes of each sibling's first call in either report (the baseline ran two more blocks).
    after = {"x": 0, "layer.0": 1, "layer.1": 2, "pool": 5}
    before = {"gone": 0, "x": 1, "layer.0": 2, "layer.1": 3, "layer.2": 4, "layer.10": 5, "pool": 6}
    siblings = ["gone", "layer.0", "layer.1", "layer.10", "layer.2", "pool", "x"]
    assert call_ordered(siblings, after, before) == [
        "gone",  # the baseline ran it first: it stays first
        "x",
        "layer.0",
        "layer.1",
        "layer.2",  # removed blocks follow layer.1, where the baseline ran them
        "layer.10",
        "pool",
    ]


def test_by_type_compares_when_a_baseline_is_given() -> None:
    before = forward_report()  # Linear 10 + 10 + 10, ReLU 10
    after = finish([x for x in forward_report()["layers"] if x["path"] not in ("a", "2")])
    html = render_report(after, before=before, metric="module_flops")
    rows = embedded_data(html)["maps"]["module_flops"]["groups"][0]["by_type"]
    assert rows == [
        {
            "type": "Linear",
            "calls": 2,
            "text": "20 FLOPs",
            "share": "100.0 %",
            "before": "30 FLOPs",
            "delta": "-10 FLOPs (-33.3 %)",
        },
        {
            "type": "ReLU",  # only the baseline called one
            "calls": 0,
            "text": "not called",
            "share": "—",
            "before": "10 FLOPs",
            "delta": "-10 FLOPs (-100.0 %)",
        },
    ]
    added = embedded_data(render_report(before, before=after, metric="module_flops"))
    relu = added["maps"]["module_flops"]["groups"][0]["by_type"][1]
    assert (relu["before"], relu["delta"]) == ("not called", "+10 FLOPs")
