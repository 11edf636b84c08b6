"""Real headless Chromium checks of the issue 15 views: lazy panels, order, default view, top-N sorting,
comparison cards, no scroll on load, strip plots; every page offline with no console errors.

Skipped when Chromium or websocket-client is missing (same harness as test_views_browser.py).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_views_explorer import OP, conv1d_report
from test_views_strip import noisy_report
from view_reports import (
    P,
    benchmark_comparison,
    benchmark_report,
    finish,
    keyboard_report,
    layer,
    m,
    resnet50_report,
)

from torchscan.views.common.embed import decode
from torchscan.views.comparison.delta_words import short_text
from torchscan.views.render import render_report

pytest.importorskip("websocket", reason="websocket-client is not installed (pip install websocket-client)")
from cdp_browser import Browser, chromium_binary

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        chromium_binary() is None, reason="Chromium is not installed (apt-get install chromium)"
    ),
]
VIEWS = ("module_flops", "operator_flops", "macs", "dmas", "parameters", "parameter_bytes")
# Everything a panel shows, reduced to comparable facts: text, every tile's geometry and labels.
PANEL_FACTS = """(view => {
  const panel = document.querySelector(`.metric-panel[data-view="${view}"]`);
  const column = panel.querySelector('.map-column');
  const tiles = [...panel.querySelectorAll('a[data-map-node]')].map(a => {
    const r = a.querySelector('rect[data-tile]');
    return [a.id, a.getAttribute('aria-label'), a.querySelector('title').textContent,
      a.getAttribute('data-parent'),
      a.getAttribute('data-neutral'), r.getAttribute('x'), r.getAttribute('y'), r.getAttribute('width'),
      r.getAttribute('height'), r.getAttribute('fill'), a.querySelectorAll('rect').length,
      [...a.querySelectorAll('text')]
        .map(t => t.textContent + '@' + t.getAttribute('x') + ',' + t.getAttribute('y'))];
  });
  const own = [...panel.querySelectorAll('g[data-own-node]')].map(g => g.outerHTML.length);
  const rails = [...panel.querySelectorAll('.rail-card')].map(c => [c.className, c.textContent]);
  return {text: column.textContent.replace(/\\s+/g, ' '), tiles, own, rails,
    inspector: panel.querySelector('aside').textContent.replace(/\\s+/g, ' '),
    svgs: [...panel.querySelectorAll('svg.module-map')]
      .map(s => [s.getAttribute('viewBox'), s.getAttribute('height')])};
})"""


@pytest.fixture
def browser() -> Iterator[Browser]:
    instance = Browser()
    yield instance
    instance.close()


def open_page(browser: Browser, tmp_path: Path, document: str, name: str = "page.html") -> None:
    path = tmp_path / name
    path.write_text(document, encoding="utf-8")
    browser.load(path)
    assert browser.requests() == [] and browser.errors() == [], name


def panel_facts(browser: Browser) -> dict[str, Any]:
    facts = {}
    for view in VIEWS:
        browser.click(f"label[for='view-{view}']")
        facts[view] = browser.eval(f"{PANEL_FACTS}({json.dumps(view)})")
    return facts


def not_called_report() -> dict[str, Any]:
    """views-3.md 1: an attention whose out_proj never runs and an unused Linear, both with rows."""
    import torch
    from torch import nn

    import torchscan

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
            self.unused = nn.Linear(8, 8)

        def forward(self, x: Any) -> Any:
            return self.attn(x, x, x, need_weights=False)[0]

    torch.manual_seed(0)
    return json.loads(json.dumps(torchscan.crawl_module(Model(), (3, 8))))


@pytest.mark.parametrize(
    "case", ["keyboard", "comparison", "removed", "hostile", "diagnostics", "not_called"]
)
def test_lazy_panels_match_static_ones(
    browser: Browser, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    report, before, title = keyboard_report(), None, "T"
    if case == "comparison":
        before = keyboard_report()
        report["layers"][2]["metrics"]["module_flops"]["value"] += 12
        report["layers"][2]["metrics"]["module_flops"]["known_value"] += 12
        report["totals"]["module_flops"]["value"] += 12
        report["totals"]["module_flops"]["known_value"] += 12
    elif case == "removed":  # issue 23: a baseline-only branch in forward order, its -before delta
        before = keyboard_report()
        report = finish([x for x in keyboard_report()["layers"] if x["path"] != "0.0"])
    elif case == "hostile":
        for x in report["layers"][1:]:
            x["path"] = (
                x["path"].replace("0", P.replace(".", "·"), 1) if x["path"].startswith("0") else x["path"]
            )
            x["type"] = P
        report = finish(report["layers"])
        title = P
    elif case == "diagnostics":
        report = conv1d_report()
    elif case == "not_called":
        report = not_called_report()
    static = render_report(report, before=before, title=title, metric="module_flops")
    monkeypatch.setattr("torchscan.views.analysis.explorer.LAZY_LAYER_LIMIT", -1)
    lazy = render_report(report, before=before, title=title, metric="module_flops")
    assert lazy.count('data-lazy="true"') == len(VIEWS) - 1 and static.count('data-lazy="true"') == 0
    open_page(browser, tmp_path, static, "static.html")
    expected = panel_facts(browser)
    open_page(browser, tmp_path, lazy, "lazy.html")
    assert browser.eval("document.querySelectorAll('.metric-panel[data-lazy]').length") == len(VIEWS) - 1
    actual = panel_facts(browser)
    assert browser.errors() == [] and browser.requests() == []
    assert browser.eval("typeof window.pwned") == "undefined"
    for view in VIEWS:
        assert actual[view] == expected[view], view
    assert browser.eval("document.querySelectorAll('.metric-panel[data-lazy]').length") == 0


def test_numeric_order_and_default_view(browser: Browser, tmp_path: Path) -> None:
    # Twelve siblings whose module formulas are unknown but whose operator counts are complete.
    layers = [layer("", "Sequential")] + [
        layer(str(i), "Linear", flops=None, status="unavailable") for i in range(12)
    ]
    report = finish(layers)
    for x in report["layers"]:
        value = 0 if x["path"] == "" else 10 + int(x["path"])
        x["metrics"]["operator_flops_self"] = m("complete", value, method=OP)
    open_page(browser, tmp_path, render_report(report))
    assert browser.eval("document.querySelector('input[name=view]:checked').id") == "view-operator_flops"
    labels = browser.eval(
        '[...document.querySelectorAll(\'.metric-panel[data-view="operator_flops"] '
        'a[data-map-node][data-depth="1"]\')]'
        ".map(a => a.getAttribute('aria-label').split(',')[0])"
    )
    assert labels == [str(i) for i in range(12)]
    assert (
        browser.eval(
            "getComputedStyle(document.querySelector('.metric-panel[data-view=\"operator_flops\"]')).display"
        )
        == "grid"
    )
    assert (
        browser.eval(
            'document.querySelectorAll(\'.metric-panel[data-view="operator_flops"] '
            '[aria-current="true"]\').length'
        )
        >= 1
    )


def test_top_table_sorts(browser: Browser, tmp_path: Path) -> None:
    open_page(browser, tmp_path, render_report(keyboard_report(), metric="module_flops"))
    table = ".metric-panel[data-view='module_flops'] table.top-layers"
    rows = f'[...document.querySelectorAll("{table} tbody tr")].map(r => r.cells[1].textContent)'
    first = browser.eval(rows)
    assert browser.eval(f'document.querySelector("{table} button").disabled') is False
    browser.click(f"{table} button[data-sort='order']")
    by_path = browser.eval(rows)
    assert by_path == sorted(first, key=lambda text: [int(p) for p in text.split(" ")[0].split(".")])
    assert browser.eval(f'document.querySelector("{table} th[aria-sort]").textContent') == "Module call"
    browser.click(f"{table} button[data-sort='order']")
    assert browser.eval(rows) == list(reversed(by_path))
    assert (
        browser.eval(f"document.querySelector(\"{table} th[aria-sort]\").getAttribute('aria-sort')")
        == "descending"
    )
    browser.click(f"{table} button[data-sort='rank']")
    assert browser.eval(rows) == first
    browser.click(f"{table} button[data-sort='value']")
    assert browser.eval(rows) == list(reversed(first))  # ascending value: smallest first


def test_no_scroll_on_load_and_view_switch(browser: Browser, tmp_path: Path) -> None:
    browser.resize(1280, 700)
    for report in (keyboard_report(), resnet50_report()):
        open_page(browser, tmp_path, render_report(report, title="Scroll check"))
        assert browser.eval("window.scrollY") == 0
        assert browser.eval("document.querySelector('h1').getBoundingClientRect().top") >= 0
        for view in VIEWS:
            browser.click(f"label[for='view-{view}']")
        assert browser.errors() == []


def test_comparison_cards_and_source_note(browser: Browser, tmp_path: Path) -> None:
    before = keyboard_report()
    after = keyboard_report()
    after["inputs"]["source"] = "provided"
    open_page(browser, tmp_path, render_report(after, before=before, metric="module_flops"))
    cards = browser.eval("[...document.querySelectorAll('.card-change')].map(p => p.textContent)")
    # Issue 23 wording: short units and the relative change.
    assert len(cards) == 3 and all("Before" in c and "→ after" in c and "· Δ" in c for c in cards)
    assert "Δ +0 FLOPs (+0.0 %)" in cards[0]
    assert "Inputs differ only in source" in browser.eval(
        "document.querySelector('.comparison-note').textContent"
    )


def test_strip_plots_present_and_sized(browser: Browser, tmp_path: Path) -> None:
    pages = {
        "single.html": (render_report(noisy_report()), 1),
        "steady.html": (render_report(benchmark_report()), 1),
        "comparison.html": (
            render_report(benchmark_comparison(noisy_report(), benchmark_report(latency=0.005))),
            2,
        ),
    }
    for name, (document, runs) in pages.items():
        open_page(browser, tmp_path, document, name)
        box = browser.eval(
            "(() => { const r = document.querySelector('svg.strip-plot').getBoundingClientRect(); "
            "return [r.width, r.height]; })()"
        )
        assert box[0] >= 300 and box[1] >= 40, name
        assert browser.eval("document.querySelectorAll('svg.strip-plot g.strip-row').length") == runs
        assert browser.eval("document.querySelectorAll('svg.strip-plot circle').length") == 5 * runs
        assert browser.eval("document.querySelectorAll('script').length") == 0


@pytest.mark.slow
def test_bert_base_explorer(browser: Browser, tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    import torchscan

    torch.manual_seed(0)
    model = transformers.BertModel(transformers.BertConfig()).eval()
    ids = torch.randint(0, 30000, (1, 128))
    report = json.loads(json.dumps(torchscan.crawl_module(model, args=(ids,))))
    document = render_report(report, title="BERT-base")
    assert len(document.encode()) <= 1_500_000
    data = decode(json.loads(document.split('type="application/json">', 1)[1].split("</script>", 1)[0]))
    assert data["report"] == report  # nothing dropped: the whole report is embedded
    open_page(browser, tmp_path, document, "bert.html")
    assert browser.eval("window.scrollY") == 0
    for view in VIEWS:
        browser.click(f"label[for='view-{view}']")
        assert (
            browser.eval(
                f"document.querySelectorAll('.metric-panel[data-view=\"{view}\"] a[data-map-node]').length"
            )
            > 100
        )
    order = browser.eval(
        '[...document.querySelectorAll(\'.metric-panel[data-view="macs"] a[data-map-node][data-depth="3"]\')]'
        ".map(a => a.getAttribute('aria-label').split(',')[0]).filter(p => p.startsWith('encoder.layer.'))"
    )
    assert order == [f"encoder.layer.{i}" for i in range(12)]
    assert browser.errors() == [] and browser.requests() == []
    if os.environ.get("TORCHSCAN_UPDATE_DOCS_IMAGE") == "1":
        browser.resize(1440, 1000)
        browser.click("label[for='view-operator_flops']")
        browser.eval("window.scrollTo(0, 0)")
        browser.screenshot(Path(__file__).resolve().parents[2] / "docs" / "images" / "explorer-bert.png")


def test_strip_screenshot_for_docs(browser: Browser, tmp_path: Path) -> None:
    """docs/images/benchmark-strip.png, refreshed only with ``TORCHSCAN_UPDATE_DOCS_IMAGE=1``."""
    browser.resize(1200, 460)
    comparison = benchmark_comparison(noisy_report(), benchmark_report(latency=0.005))
    open_page(browser, tmp_path, render_report(comparison, title="Benchmark comparison"))
    browser.eval("document.getElementById('timing-blocks').scrollIntoView()")
    docs = Path(__file__).resolve().parents[2] / "docs" / "images" / "benchmark-strip.png"
    target = docs if os.environ.get("TORCHSCAN_UPDATE_DOCS_IMAGE") == "1" else tmp_path / "strip.png"
    browser.screenshot(target)
    assert target.stat().st_size > 5_000


# ---- Issue 23: forward order, real zoom, comparison legend and columns, in a real browser ----
TILE_TEXTS = """((svgSelector, id) => {
  const a = document.getElementById(id);
  const r = a.querySelector('rect[data-tile]');
  return {x: r.getAttribute('x'), width: r.getAttribute('width'),
    texts: [...a.querySelectorAll('text')].map(t => t.textContent),
    font: [...a.querySelectorAll('text')].map(t => Math.round(t.getBoundingClientRect().height))};
})"""


def test_zoom_relays_the_branch_at_full_width(browser: Browser, tmp_path: Path) -> None:
    from test_views_browser import focus, h3, inside_viewport

    report = resnet50_report()
    document = render_report(report, metric="module_flops")
    data = decode(json.loads(document.split('type="application/json">', 1)[1].split("</script>", 1)[0]))
    nodes = {n["path"]: n for n in data["maps"]["module_flops"]["groups"][0]["nodes"]}
    block = nodes["layer1.0"]
    children = [n for n in nodes.values() if n["parent"] == block["id"] and n["tile"]]
    assert children and all(c["tile"]["label"] == "" for c in children)  # unlabeled before zooming
    open_page(browser, tmp_path, document, "zoom.html")
    tile = lambda path: f"map-module_flops-0-{nodes[path]['id']}"  # noqa: E731
    facts = (  # every tile's drawing (selection and focus aside)
        "[...document.querySelectorAll('.metric-panel[data-view=\"module_flops\"] svg.module-map > *')]"
        ".map(a => [...a.querySelectorAll('rect, text')].map(e => e.outerHTML).join(''))"
    )
    original = browser.eval(facts)
    font = browser.eval(f"{TILE_TEXTS}('svg', {tile('')!r})")["font"]  # drawn text height, in pixels
    browser.click(f"#{tile('layer1.0')}")
    browser.click("[data-view='module_flops'] button[data-action='zoom']")
    zoomed = browser.eval(f"{TILE_TEXTS}('svg', {tile('layer1.0')!r})")
    assert (zoomed["x"], zoomed["width"]) == ("4.000", "890.500")  # the whole inner width, 892 - 1.5
    # The script words the unfitted texts as map_svg.py does (node_label, short_text).
    assert zoomed["texts"] == ["0", short_text(block["subtotal"])]
    labelled = [browser.eval(f"{TILE_TEXTS}('svg', {tile(c['path'])!r})") for c in children]
    # The convolutions get their names back at normal size, in call order (batch norms stay narrow).
    assert [t["texts"][0] for t in labelled if t["texts"]][:3] == ["conv1", "conv2", "conv3"]
    assert font and all(t["font"][0] == font[0] for t in labelled if t["texts"])  # normal size
    svg_width = browser.eval(
        "document.querySelector('.metric-panel[data-view=\"module_flops\"] svg.module-map')"
        ".getBoundingClientRect().width"
    )
    view_box = browser.eval(
        "document.querySelector('.metric-panel[data-view=\"module_flops\"] svg.module-map')"
        ".getAttribute('viewBox')"
    )
    assert svg_width == 900 and view_box.split()[2] == "900"  # re-laid, not magnified
    # Keyboard inside the zoomed branch follows the forward pass; leaving it re-frames the map.
    focus(browser, f"#{tile('layer1.0')}")
    browser.key("ArrowRight")
    assert h3(browser) == "layer1.0.conv1" and inside_viewport(browser, tile("layer1.0.conv1"))
    browser.key("ArrowDown")
    assert h3(browser) == "layer1.0.bn1" and inside_viewport(browser, tile("layer1.0.bn1"))
    browser.key("End")
    assert inside_viewport(browser, browser.eval("document.activeElement.id"))
    browser.click("[data-view='module_flops'] button[data-action='reset']")
    assert browser.eval(facts) == original  # reset restores the exact static drawing
    # A lazily drawn view zooms the same way.
    browser.click("label[for='view-macs']")
    macs = f"map-macs-0-{nodes['layer1.0']['id']}"
    browser.click(f"#{macs}")
    browser.click("[data-view='macs'] button[data-action='zoom']")
    assert browser.eval(f"{TILE_TEXTS}('svg', {macs!r})")["x"] == "4.000"
    assert browser.errors() == [] and browser.requests() == []


def test_forward_order_in_map_keyboard_and_top(browser: Browser, tmp_path: Path) -> None:
    from test_views_browser import focus, h3
    from test_views_explorer_issue23 import forward_report

    open_page(browser, tmp_path, render_report(forward_report(), metric="module_flops"))
    labels = browser.eval(
        "[...document.querySelectorAll('.metric-panel[data-view=\"module_flops\"] a[data-map-node]')]"
        ".map(a => a.getAttribute('aria-label').split(',')[0])"
    )
    assert labels == ["(root)", "b", "a", "10", "2"]
    focus(browser, "#map-module_flops-0-node-4")  # b, called first
    seen = []
    for _ in range(3):
        browser.key("ArrowDown")
        seen.append(h3(browser))
    assert seen == ["a", "10", "2"]
    rows = browser.eval(
        "[...document.querySelectorAll("
        "'.metric-panel[data-view=\"module_flops\"] table.top-layers tbody tr')]"
        ".map(r => r.cells[1].textContent)"
    )
    assert rows == ["b · call #0", "a · call #0", "10 · call #0", "2 · call #0"]  # ties in call order
    types = browser.eval(
        "[...document.querySelectorAll('.metric-panel[data-view=\"module_flops\"] table.by-type tbody tr')]"
        ".map(r => [...r.cells].map(c => c.textContent))"
    )
    assert types == [["Linear", "3", "30 FLOPs", "75.0 %"], ["ReLU", "1", "10 FLOPs", "25.0 %"]]


def test_comparison_legend_columns_and_no_unknown(browser: Browser, tmp_path: Path) -> None:
    from test_views_explorer_issue23 import forward_report

    before = forward_report()
    after = finish([x for x in forward_report()["layers"] if x["path"] != "a"])
    open_page(browser, tmp_path, render_report(after, before=before, metric="module_flops"))
    panel = '.metric-panel[data-view="module_flops"]'
    legend = browser.eval(f"document.querySelector('{panel} .bar-legend').getBoundingClientRect().height")
    assert legend > 0
    swatches = browser.eval(
        f"[...document.querySelectorAll('{panel} .bar-legend .swatch')]"
        ".map(s => getComputedStyle(s).backgroundColor)"
    )
    bars = browser.eval(
        "['before', 'after'].map(b => getComputedStyle("
        f"document.querySelector('{panel} rect[data-bar=\"' + b + "
        "'\"]')).fill)"
    )
    assert swatches == bars  # the legend's colours are the bars' colours
    removed = browser.eval(
        f"[...document.querySelectorAll('{panel} #map-module_flops-0-node-3 text')].map(t => t.textContent)"
    )
    # "· complete" has no room on this tile: the change is shown whole without it, never cut
    assert removed[0] == "a · removed" and removed[-1] == "Δ -10 FLOPs (-100.0 %)"
    text = browser.eval("document.querySelector('main').innerText")
    assert "delta unknown" not in text and not re.search(r"\d[eE][+-]?\d", text)
    headers = browser.eval(
        f"[...document.querySelectorAll('{panel} table.top-layers th')].map(t => t.textContent)"
    )
    assert headers[-2:] == ["Before", "Δ (after minus before)"]
    assert browser.errors() == [] and browser.requests() == []


def test_script_inspector_lists_unrequested_metrics_apart(browser: Browser, tmp_path: Path) -> None:
    from test_views_explorer_issue23 import informational_report

    open_page(browser, tmp_path, render_report(informational_report(), metric="module_flops"))
    browser.click("#map-module_flops-0-node-0")  # the script redraws the inspector for (root)
    browser.click("#map-module_flops-0-node-1")  # and for 0, where both diagnostics are
    headings = browser.eval(
        "[...document.querySelectorAll('.metric-panel[data-view=\"module_flops\"] aside h4')]"
        ".map(h => [h.textContent, h.nextElementSibling.textContent])"
    )
    assert headings[:2] == [
        ["Diagnostics", "x_code [module_flops]: m"],
        [
            "Not requested (informational)",
            "unsupported_module_metric [receptive_field]: Module type not supported: Linear",
        ],
    ]


@pytest.mark.slow
def test_bert_12_to_6_comparison(browser: Browser, tmp_path: Path) -> None:
    """Issue 23's comparison target: two complete reports, no "delta unknown", short units, a legend."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    import torchscan

    torch.manual_seed(0)
    ids = torch.randint(0, 30000, (1, 128))
    reports = []
    for layers in (12, 6):
        model = transformers.BertModel(transformers.BertConfig(num_hidden_layers=layers)).eval()
        reports.append(json.loads(json.dumps(torchscan.crawl_module(model, args=(ids,)))))
    before, after = reports
    document = render_report(after, before=before, title="BERT-base: 12 → 6 layers")
    open_page(browser, tmp_path, document, "compare.html")
    cards = browser.eval("[...document.querySelectorAll('.card-change')].map(p => p.textContent)")
    assert cards[0] == "Before 22.40 GFLOPs → after 11.20 GFLOPs · Δ -11.20 GFLOPs (-50.0 %)"
    for view in VIEWS:
        browser.click(f"label[for='view-{view}']")
        text = browser.eval("document.querySelector('main').innerText")
        assert "delta unknown" not in text.lower(), view
        assert not re.search(r"\d[eE][+-]?\d", text), view
    browser.click("label[for='view-operator_flops']")
    deltas = browser.eval(
        "[...document.querySelectorAll('.metric-panel[data-view=\"operator_flops\"] a[data-map-node]')]"
        ".filter(a => ['encoder', 'encoder.layer.11'].includes(a.getAttribute('aria-label').split(',')[0]))"
        ".map(a => [...a.querySelectorAll('text')].pop().textContent)"
    )
    # The removed layer's tile is too narrow for any whole change line: it shows its (cut) name only,
    # never a cut number, and the rail lists it as too small to label (the full text returns when
    # zoomed).
    assert deltas[0] == "Δ -11.20 GFLOPs (-50.0 %) · complete" and deltas[1] == "11 · rem…"
    rail = browser.eval(
        "[...document.querySelectorAll('.metric-panel[data-view=\"operator_flops\"] .rail-card.small')]"
        ".map(c => c.querySelector('.rail-path').textContent)"
    )
    assert "encoder.layer.11" in rail
    assert browser.errors() == [] and browser.requests() == []
    if os.environ.get("TORCHSCAN_UPDATE_DOCS_IMAGE") == "1":
        browser.resize(1440, 1000)
        browser.eval("window.scrollTo(0, 0)")
        browser.screenshot(Path(__file__).resolve().parents[2] / "docs" / "images" / "explorer-compare.png")


def test_a_not_called_module_reads_so_in_the_inspector(browser: Browser, tmp_path: Path) -> None:
    report = not_called_report()
    open_page(browser, tmp_path, render_report(report, metric="parameters"), "not-called.html")
    node = "attn.out_proj"
    tile = browser.eval(
        "[...document.querySelectorAll('.metric-panel[data-view=\"parameters\"] a[data-map-node]')]"
        f".find(a => a.getAttribute('aria-label').startsWith({json.dumps(node)})).id"
    )
    browser.click(f"#{tile}")
    inspector = browser.eval(
        "document.querySelector('.metric-panel[data-view=\"parameters\"] aside').textContent"
    )
    assert "not called (the module never ran as a module call)" in inspector
    assert "72" in inspector  # out_proj: 8·8 + 8 parameters
    assert browser.errors() == [] and browser.requests() == []
