"""render_report on real ``crawl_module`` reports after a JSON round trip (render.md 7 F and K)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from view_parse import embedded_data, parse_html

torch = pytest.importorskip("torch")
nn = torch.nn
torchscan = pytest.importorskip("torchscan")
if not hasattr(torchscan, "crawl_module"):  # pragma: no cover - during development only
    pytest.skip("crawl_module is not available yet", allow_module_level=True)

from torchscan.views.render import render_report  # noqa: E402


def crawl(model: Any, shape: tuple[int, ...], **kwargs: Any) -> dict[str, Any]:
    return json.loads(json.dumps(torchscan.crawl_module(model, shape, **kwargs)))


def test_f_map_arithmetic() -> None:
    model = nn.Sequential(nn.Linear(4, 8, bias=False), nn.Identity(), nn.Linear(8, 2, bias=False))
    report = crawl(model, (4,))
    data = embedded_data(render_report(report))
    group = data["maps"]["module_flops"]["groups"][0]
    nodes = {n["path"]: n for n in group["nodes"]}
    assert group["known_total"] == report["totals"]["module_flops"]["value"] == 86
    assert nodes["0"]["width"] == pytest.approx(56 / 86) and nodes["2"]["x"] == pytest.approx(56 / 86)
    assert nodes["1"]["width"] == 0 and nodes["1"]["rail"] == ["zero"]
    assert data["maps"]["parameters"]["groups"][0]["known_total"] == 48
    ET.fromstring(render_report(report, format="svg"))


def test_real_comparison_and_structure_mode() -> None:
    before = crawl(nn.Conv2d(3, 8, 3), (3, 32, 32))
    after = crawl(nn.Conv2d(3, 12, 3), (3, 32, 32))
    data = embedded_data(render_report(after, before=before))
    assert data["comparison"]["totals"]["parameters"]["delta"] == 112
    structure = crawl(nn.Sequential(nn.Linear(4, 8), nn.ReLU()), (4,), mode="structure")
    html = render_report(structure)
    assert "not_requested" in parse_html(html).by_id("call-1").text()  # type: ignore[union-attr]
    assert "structural · unscaled" in render_report(structure, format="svg")


_LIB = torch.library.Library("torchscan_views_test", "DEF")
_LIB.define("shift(Tensor x) -> Tensor")
_LIB.impl("shift", lambda x: x + 1, "CompositeExplicitAutograd")


def test_functional_work_shows_partial_total() -> None:
    # An operator without a functional formula in the composite's frame (real-models.md 1).
    class Residual(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x: Any) -> Any:
            return torch.ops.torchscan_views_test.shift(self.lin(x))

    report = crawl(Residual(), (4,))
    html = render_report(report)
    text = " ".join(parse_html(html).text().split())
    assert "partial at least" in text and "unestimated_functional_work" in text


@pytest.mark.slow
def test_resnet50_shaped_report_renders() -> None:
    from view_models import resnet50_crawl

    report = resnet50_crawl()
    html = render_report(report)
    data = embedded_data(html)
    assert len(report["layers"]) > 150
    first = data["maps"]["module_flops"]["groups"][0]
    widths = {n["path"]: n["width"] for n in first["nodes"] if n["depth"] == 1}
    assert max(widths, key=widths.__getitem__) == "layer3"  # the most expensive stage is the widest tile
    assert html == render_report(report)
    ET.fromstring(render_report(report, format="svg", metric="parameters"))
