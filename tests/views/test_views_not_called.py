"""The explorer shows every parameter's row (views-3.md 1): not-called modules and attributed shares."""

from __future__ import annotations

import json
from typing import Any

import torch
from torch import nn

from torchscan import crawl_module, render_report
from torchscan.demo import build_transformer
from torchscan.views.analysis.evidence import build_data


class AttentionModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(32, 4, batch_first=True)
        self.head = nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.attn(x, x, x, need_weights=False)[0])


def _maps(report: dict[str, Any]) -> dict[str, Any]:
    return build_data(json.loads(json.dumps(report)), None, None, [])["maps"]


def _nodes(group: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {node["path"]: node for node in group["nodes"]}


def test_the_attention_tile_sums_all_its_parameters_like_the_card() -> None:
    report = crawl_module(AttentionModel(), (5, 32))
    (group,) = _maps(report)["parameters"]["groups"]
    nodes = _nodes(group)
    # MHA(32): in_proj 3,168 + out_proj 1,056 = 4,224; the root 4,224 + head 264 = the card's 4,488.
    assert nodes["attn"]["known"] == 4224
    assert nodes["attn.out_proj"]["known"] == 1056 and nodes["attn.out_proj"]["not_called"]
    assert nodes[""]["known"] == group["known_total"] == report["totals"]["parameters"]["value"] == 4488


def test_native_shares_size_the_tiles_in_one_method_group() -> None:
    report = crawl_module(AttentionModel(), (5, 32))
    (group,) = _maps(report)["module_flops"]["groups"]  # no separate subtree-scope map any more
    nodes = _nodes(group)
    attn = next(layer for layer in report["layers"] if layer["path"] == "attn")
    assert nodes["attn"]["known"] == attn["metrics"]["module_flops"]["value"]  # the inclusive estimate
    assert nodes["attn.out_proj"]["direct"]["value"] == 5 * 32 * 64  # the Linear formula on 5 rows
    assert nodes["attn.out_proj"]["width"] > 0
    assert group["known_total"] == report["totals"]["module_flops"]["value"]


def test_a_module_that_never_ran_is_neither_unknown_nor_zero() -> None:
    class HalfUsed(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.used = nn.Linear(4, 4)
            self.unused = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.used(x)

    report = crawl_module(HalfUsed(), (4,))
    maps = _maps(report)
    for view in ("module_flops", "operator_flops", "macs"):
        groups = maps[view]["groups"]
        assert [g["kind"] for g in groups] == ["recorded"], view  # no "unrecorded" group for it
        node = _nodes(groups[0])["unused"]
        assert node["display_status"] == "not called" and node["rail"] == []
        assert node["calls"][0]["display"].startswith("not called")
    assert _nodes(maps["parameters"]["groups"][0])["unused"]["known"] == 20
    page = render_report(report)
    assert "not called (the module never ran as a module call)" in page
    svg = render_report(report, format="svg", metric="parameters")
    assert "not called" in svg


def test_the_demo_encoder_explorer_has_a_tile_per_layer() -> None:
    model, shape = build_transformer()
    report = crawl_module(model, shape)
    (group,) = _maps(report)["module_flops"]["groups"]
    nodes = _nodes(group)
    # each layer 309,184 module FLOPs (tests/analysis/crawl/test_not_called_rows.py): half the root's width
    assert nodes["layers.0"]["known"] == nodes["layers.1"]["known"] == 309184
    assert abs(nodes["layers.0"]["width"] - 0.5) < 1e-9
    assert nodes["layers.0.linear1"]["known"] == 65536
