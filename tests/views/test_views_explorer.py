"""Issue 15 explorer additions: order, operator view, default view, compact data, lazy panels, tables."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from view_parse import embedded_data, parse_html
from view_reports import P, finish, hostile_report, layer, m, resnet50_report, tiny_report

from torchscan.views.analysis.default_view import most_complete_view
from torchscan.views.analysis.explorer import LAZY_LAYER_LIMIT
from torchscan.views.analysis.tree_order import path_order
from torchscan.views.common.embed import decode, encode
from torchscan.views.render import render_report

OP = "torch.utils.flop_counter.FlopCounterMode"


def with_operator_flops(report: dict[str, Any]) -> dict[str, Any]:
    """F with analysis.md 6.4 per-call operator counts: self 0/56/0/30, root inclusive 86."""
    selfs = {"": 0, "0": 56, "1": 0, "2": 30}
    for x in report["layers"]:
        x["metrics"]["operator_flops_self"] = m("complete", selfs[x["path"]], method=OP)
        inclusive = 86 if x["path"] == "" else selfs[x["path"]]
        x["metrics"]["operator_flops"] = m("complete", inclusive, method=OP)
    return report


def checked_view(html: str) -> str:
    radios = [i for i in parse_html(html).find_all("input") if i.attrs.get("name") == "view"]
    return next(r.attrs["value"] for r in radios if "checked" in r.attrs)  # type: ignore[return-value]


def test_siblings_in_numeric_order() -> None:
    layers = [layer("", "Sequential")] + [layer(str(i), "Linear", flops=i) for i in range(12)]
    layers += [layer("10.a", "ReLU", flops=0), layer("2.b", "ReLU", flops=0)]
    data = embedded_data(render_report(finish(layers)))
    nodes = data["maps"]["module_flops"]["groups"][0]["nodes"]
    paths = [n["path"] for n in nodes]
    assert paths == ["", "0", "1", "2", "2.b", "3", "4", "5", "6", "7", "8", "9", "10", "10.a", "11"]
    assert [n["id"] for n in nodes][:4] == ["node-0", "node-1", "node-2", "node-3"]
    root = nodes[0]
    assert [next(n["path"] for n in nodes if n["id"] == c) for c in root["children"]][-3:] == [
        "9",
        "10",
        "11",
    ]
    # Names after numbers, by code point; "01" and "1" stay distinct and ordered.
    assert sorted(["b", "a", "10", "9", "01", "1"], key=path_order) == ["01", "1", "9", "10", "a", "b"]


def test_operator_flops_view_is_inclusive_per_call() -> None:
    data = embedded_data(render_report(with_operator_flops(tiny_report()), metric="operator_flops"))
    view = data["maps"]["operator_flops"]
    assert view["label"] == "Operator FLOPs" and view["total"]["value"] == 86
    group = view["groups"][0]
    assert (group["method"], group["scope"]) == (OP, "module_call") and len(view["groups"]) == 1
    nodes = {n["path"]: n for n in group["nodes"]}
    # Own slots hold self counts, so the root's subtotal equals its recorded inclusive count.
    assert nodes[""]["subtotal"]["value"] == 86 and nodes[""]["direct"]["value"] == 0
    assert nodes["0"]["width"] == pytest.approx(56 / 86) and nodes["2"]["x"] == pytest.approx(56 / 86)
    assert [row["call"] for row in group["top"]] == [
        "0 · call #0",
        "2 · call #0",
        "(root) · call #0",
        "1 · call #0",
    ]


def test_default_view_is_the_most_complete() -> None:
    assert checked_view(render_report(tiny_report())) == "module_flops"  # tie: Module FLOPs first
    transformer_like = with_operator_flops(tiny_report())
    for x in transformer_like["layers"][1:]:
        x["metrics"]["module_flops"] = m("unavailable", None)
    transformer_like["totals"]["module_flops"] = m("unavailable", None, scope="forward")
    assert most_complete_view(transformer_like) == "operator_flops"
    html = render_report(transformer_like)
    assert checked_view(html) == "operator_flops"
    assert checked_view(render_report(transformer_like, metric="macs")) == "macs"  # explicit wins
    structure = tiny_report()
    for x in structure["layers"]:
        for name in ("module_flops", "macs", "dmas"):
            x["metrics"].pop(name, None)
    for name in ("module_flops", "macs", "dmas", "operator_flops"):
        structure["totals"][name] = m("unavailable", None, scope="forward")
    assert most_complete_view(structure) == "parameters"
    assert '<svg xmlns="http://www.w3.org/2000/svg"' in render_report(transformer_like, format="svg")
    assert "view: Module FLOPs" in render_report(transformer_like, format="svg")  # SVG keeps its default


@pytest.mark.parametrize(
    "value",
    [
        {"b": 1, "a": [1, 1.0, True, None, "x"], "c": {"b": 2, "a": 1}},
        [[-2, 0], [-1], [0, 1], "long repeated text", "long repeated text", {}, []],
        {"k": [{"status": "complete", "value": 0}] * 5, "s": ["same string value"] * 4},
        "just a string",
        3,
    ],
)
def test_compact_embedding_round_trips(value: Any) -> None:
    packed = json.loads(json.dumps(encode(value)))
    decoded = decode(packed)
    assert decoded == value and json.dumps(decoded) == json.dumps(value)  # key order kept


def test_compact_embedding_of_hostile_report() -> None:
    report = hostile_report()
    data = embedded_data(render_report(report, before=copy.deepcopy(report), title=P))
    assert data["report"] == report
    with pytest.raises(ValueError, match="torchscan-embed-1"):
        decode({"format": "other", "keys": [], "value": 1})


def test_large_reports_draw_other_views_lazily() -> None:
    report = resnet50_report()
    assert len(report["layers"]) > LAZY_LAYER_LIMIT
    html = render_report(report, metric="module_flops")
    root = parse_html(html)
    panels = [d for d in root.find_all("div") if d.has_class("metric-panel")]
    assert [p.attrs["data-view"] for p in panels if "data-lazy" not in p.attrs] == ["module_flops"]
    for panel in panels[1:]:
        assert "drawn by the page's script" in panel.text() and not panel.find_all("svg")
    data = embedded_data(html)
    assert set(data["maps"]) == {
        "module_flops",
        "operator_flops",
        "macs",
        "dmas",
        "parameters",
        "parameter_bytes",
    }
    assert all(
        n["tile"] is None or len(n["tile"]["box"]) == 4
        for g in data["maps"]["macs"]["groups"]
        for n in g["nodes"]
    )
    small = parse_html(render_report(tiny_report()))
    assert not [d for d in small.find_all("div") if "data-lazy" in d.attrs]


def test_rail_collapses_to_a_count() -> None:
    root = parse_html(render_report(resnet50_report(), metric="module_flops"))
    rails = [d for d in root.find_all("details") if d.has_class("rail-list")]
    assert rails and "open" not in rails[0].attrs
    summary = rails[0].find_all("summary")[0].text()
    cards = [a for a in rails[0].find_all("a") if a.has_class("rail-card")]
    assert f": {len(cards)} modules the map cannot size (" in summary and len(cards) > 12
    tiny = parse_html(render_report(tiny_report()))
    rail = next(d for d in tiny.find_all("details") if d.has_class("rail-list"))
    assert "open" in rail.attrs and "1 module the map cannot size (1 complete zero;" in rail.text()


def test_top_table_shares_of_total() -> None:
    root = parse_html(render_report(tiny_report()))
    table = next(t for t in root.find_all("table") if t.has_class("top-layers"))
    rows = [
        [" ".join(td.text().split()) for td in tr.find_all("td")]
        for tr in table.find_all("tbody")[0].find_all("tr")
    ]
    # F: 56 + 0 + 30 = 86 FLOPs; 56/86 = 65.1 %, 30/86 = 34.9 %, 0/86 = 0.0 %.
    assert rows == [
        ["1", "0 · call #0", "Linear", "56 FLOPs · complete", "65.1 %"],
        ["2", "2 · call #0", "Linear", "30 FLOPs · complete", "34.9 %"],
        ["3", "1 · call #0", "Identity", "0 FLOPs · complete", "0.0 %"],
    ]
    assert "Top 3 of 3 complete calls" in table.text()
    assert all("disabled" in b.attrs for b in table.find_all("button"))
    partial = tiny_report()
    partial["totals"]["module_flops"] = m("partial", 86, scope="forward")
    partial["layers"][0]["metrics"]["module_flops"] = m("partial", 0)
    root = parse_html(render_report(partial, metric="module_flops"))
    table = next(t for t in root.find_all("table") if t.has_class("top-layers"))
    assert "≤ 65.1 %" in table.text()  # a share of a lower-bound total is an upper bound


def conv1d_report() -> dict[str, Any]:
    """GPT-2-shaped: four Conv1D calls without a formula, three metrics each (12 diagnostics)."""
    layers = [layer("", "GPT2Model")] + [layer(f"h.{i}.attn.c_attn", "Conv1D") for i in range(4)]
    diagnostics = [
        {
            "code": "unsupported_module_metric",
            "severity": "warning",
            "metric": metric,
            "path": f"h.{i}.attn.c_attn",
            "message": "Module type not supported: Conv1D",
            "class_path": "transformers.pytorch_utils.Conv1D",
        }
        for i in range(4)
        for metric in ("module_flops", "macs", "dmas")
    ]
    diagnostics.append({"code": P, "severity": "warning", "metric": "module_flops", "message": P})
    return finish(layers, diagnostics)


def test_grouped_diagnostics_section() -> None:
    report = conv1d_report()
    html = render_report(report)
    root = parse_html(html)
    section = root.by_id("diagnostic-groups")
    assert section is not None
    rows = [
        [" ".join(td.text().split()) for td in tr.find_all("td")]
        for tr in section.find_all("tbody")[0].find_all("tr")
    ]
    assert rows[0] == [  # issue 23 item 1: every row names its metric(s)
        "unsupported_module_metric",
        "module_flops, macs, dmas",
        "Conv1D",
        "transformers.pytorch_utils.Conv1D",
        "12",
        "h.0.attn.c_attn, h.1.attn.c_attn, h.2.attn.c_attn (+1 more)",
        "custom_modules={transformers.pytorch_utils.Conv1D: ModuleHandler(...)}",
    ]
    assert (
        rows[1][0] == " ".join(P.split()) and rows[1][4] == "1"
    )  # hostile code: shown as text, escaped in markup
    assert "Diagnostics: 13 in 2 groups" in section.text()
    ids = {a.attrs["href"] for a in section.find_all("a")}
    assert "#diagnostics" in ids and all(root.by_id(h[1:]) is not None for h in ids)
    # The exact list stays complete in the appendix.
    assert (
        len([li for li in root.find_all("li") if (li.attrs.get("id") or "").startswith("diagnostic-")]) == 13
    )
    assert render_report(tiny_report()).count('id="diagnostic-groups"') == 0


def test_context_line_names_keyword_inputs() -> None:
    """Models called with keyword tensors only (every transformers model) list them by name."""
    import torch
    from torch import nn

    from torchscan import crawl_module

    class Masked(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = nn.Linear(4, 2)

        def forward(self, x: torch.Tensor, *, mask: torch.Tensor) -> torch.Tensor:
            return self.proj(x) * mask

    report = crawl_module(Masked(), args=(torch.rand(3, 4),), kwargs={"mask": torch.ones(3, 2)})
    assert "Inputs (provided): [3, 4], mask=[3, 2] ·" in render_report(report)
    only_keywords = crawl_module(Masked().proj, kwargs={"input": torch.rand(5, 4)})
    assert "Inputs (provided): input=[5, 4] ·" in render_report(only_keywords)
