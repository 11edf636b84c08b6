"""Real headless Chromium checks of views-3.md 5-6: explorer search, tile percentages (also after a
zoom), the generation page; every page offline with no console errors.

Skipped when Chromium or websocket-client is missing (same harness as test_views_browser.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_explorer_views3 import blocks_report

from torchscan.views.render import render_report

pytest.importorskip("websocket", reason="websocket-client is not installed (pip install websocket-client)")
from cdp_browser import Browser, chromium_binary
from test_views_browser_explorer import open_page

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        chromium_binary() is None, reason="Chromium is not installed (apt-get install chromium)"
    ),
]


@pytest.fixture
def browser() -> Iterator[Browser]:
    instance = Browser()
    yield instance
    instance.close()


SELECTED = (
    "(() => { const panel = document.querySelector('.metric-panel[data-view=\"module_flops\"]');"
    " const tile = panel.querySelector('a[data-map-node][aria-current=\"true\"]');"
    " return [tile && tile.getAttribute('aria-label').split(',')[0],"
    " panel.querySelector('aside h3').textContent,"
    " document.activeElement === tile, document.getElementById('module-search-status').textContent]; })()"
)


def search(browser: Browser, text: str) -> list:
    browser.eval(
        "(() => { const box = document.getElementById('module-search'); box.value = ''; box.focus(); })()"
    )
    browser.send("Input.insertText", text=text)
    browser.key("Enter")
    return browser.eval(SELECTED)


def test_search_jumps_to_a_module_path(browser: Browser, tmp_path: Path) -> None:
    report = blocks_report()
    open_page(browser, tmp_path, render_report(report, metric="module_flops"))
    assert browser.eval("document.getElementById('module-search').disabled") is False
    options = browser.eval("[...document.querySelectorAll('#module-paths option')].map(o => o.value)")
    assert len(options) == 90 and options[:3] == ["b0", "b0.0", "b0.1"]
    # an exact path is selected as a click would: its tile current and focused, the inspector follows
    assert search(browser, "b17.0") == ["b17.0", "b17.0", True, "Showing b17.0."]
    # a part of a path: the shortest path containing it
    assert search(browser, "23") == ["b23", "b23", True, "Showing b23."]
    assert search(browser, "(root)")[:2] == ["(root)", "(root)"]
    status = search(browser, "decoder")[3]
    assert status == "No module path contains \u201cdecoder\u201d." and browser.errors() == []
    # a collapsed branch is expanded to show the found tile
    browser.eval(
        "document.getElementById('map-module_flops-0-' + "
        "[...document.querySelectorAll('a[data-map-node]')].find(a => a.getAttribute('aria-label')"
        ".startsWith('b5,')).getAttribute('data-node-id')).focus()"
    )
    browser.click('.metric-panel[data-view="module_flops"] button[data-action="collapse"]')
    found = search(browser, "b5.1")
    assert found[0] == "b5.1" and browser.eval(
        "!document.querySelector('a[data-map-node][aria-current=\"true\"]').hasAttribute('hidden')"
    )


def test_search_is_disabled_without_script(tmp_path: Path) -> None:
    instance = Browser(javascript=False)
    try:
        open_page(instance, tmp_path, render_report(blocks_report()))
        assert instance.eval("document.getElementById('module-search').disabled") is True
    finally:
        instance.close()


TILE_TEXTS = (
    "[...document.querySelectorAll('.metric-panel[data-view=\"module_flops\"] a[data-map-node]')]"
    ".filter(a => !a.hasAttribute('hidden')).map(a => [a.getAttribute('aria-label').split(',')[0],"
    " [...a.querySelectorAll('text')].map(t => t.textContent),"
    " parseFloat(a.querySelector('rect').getAttribute('width'))])"
)


def test_tiles_show_their_share_when_they_have_room_and_after_a_zoom(
    browser: Browser, tmp_path: Path
) -> None:
    report = blocks_report()
    data_total = sum((k + 1) * 51 for k in range(30))  # 23,715 FLOPs
    open_page(browser, tmp_path, render_report(report, metric="module_flops"))
    tiles = {path: (texts, width) for path, texts, width in browser.eval(TILE_TEXTS)}
    assert tiles["(root)"][0] == ["(root)", "23.71 kFLOPs · 100.0 %"]
    # b29.0: 1,500 of 23,715 FLOPs = 6.3 % of 892 px = 56 px: room for its share, not the whole line
    assert tiles["b29.0"][0] == ["0", "6.3 %"] and 1500 / data_total == pytest.approx(0.0633, abs=1e-4)
    hidden = sorted(path for path, (texts, _) in tiles.items() if len(texts) < 2)
    cards = browser.eval(
        '[...document.querySelectorAll(\'.metric-panel[data-view="module_flops"] .rail-card.small '
        ".rail-path')]"
        ".map(c => c.textContent)"
    )
    assert sorted(cards) == hidden  # the rail lists exactly the tiles the map cannot label
    # zoom into b29 (1,530 FLOPs): b29.0 spans 1,500 / 1,530 of 892 px and reads its whole line with
    # its share of the map; b29.1 (30 / 1,530 of 892 px = 17 px) still has no room for a value
    browser.eval(
        "[...document.querySelectorAll('a[data-map-node]')].find(a => a.getAttribute('aria-label')"
        ".startsWith('b29,')).focus()"
    )
    browser.key("Enter")
    browser.click('.metric-panel[data-view="module_flops"] button[data-action="zoom"]')
    zoomed = {path: texts for path, texts, _ in browser.eval(TILE_TEXTS)}
    assert zoomed["b29.0"] == ["0", "1.500 kFLOPs · 6.3 %"] and zoomed["b29.1"] == ["1"]
    # b3.0 (200 FLOPs: 8 px, unlabelled) zoomed into b3 (204 FLOPs) spans 874 px: the line it had no
    # room for comes back whole, worded by Python (tile.full), 200 / 23,715 = 0.8 % of the map
    assert tiles["b3.0"][0] == ["0"] or tiles["b3.0"][0] == []
    browser.eval(
        "[...document.querySelectorAll('a[data-map-node]')].find(a => a.getAttribute('aria-label')"
        ".startsWith('b3,')).focus()"
    )
    browser.key("Enter")
    browser.click('.metric-panel[data-view="module_flops"] button[data-action="zoom"]')
    zoomed = {path: texts for path, texts, _ in browser.eval(TILE_TEXTS)}
    assert zoomed["b3.0"] == ["0", "200 FLOPs · 0.8 %"]
    assert browser.errors() == []


def test_generation_page_in_the_browser(browser: Browser, tmp_path: Path) -> None:
    from tests.report.generation_reports import generation_report
    from tests.views.test_generation_page_views3 import timed

    report = timed(generation_report())
    open_page(browser, tmp_path, render_report(report, title="Generation"), "generation.html")
    text = browser.eval("document.querySelector('main').innerText")
    assert (
        "3.149 ms" in text
        and "Peak (stated)\t1.000 TFLOP/s" in text
        and "seconds" not in text.split("Context")[0]
    )
    panels = browser.eval(
        "[...document.querySelectorAll('svg.generation g[data-unit]')].map(g => [g.getAttribute('class'),"
        " g.getAttribute('data-unit'), g.getBoundingClientRect().height > 50])"
    )
    assert [p[:2] for p in panels] == [
        ["panel", "FLOPs"],
        ["panel", "bytes"],
        ["panel zoom", "FLOPs"],
        ["panel residuals", "FLOPs"],
        ["panel zoom", "bytes"],
        ["panel residuals", "bytes"],
        ["panel", "seconds"],
    ]
    assert browser.eval("document.querySelectorAll('svg.generation line.fit').length") == 2
    browser.resize(390, 844)
    assert browser.eval("document.documentElement.scrollWidth <= window.innerWidth")
    assert browser.errors() == [] and json.loads(json.dumps(report)) == report


PLOT_X = (
    '(([figure, event]) => { const svg = document.querySelector(`figure[data-timeline="${figure}"] svg`);'
    " const g = svg.querySelector('g.zoomable'); const first = +g.dataset.first, last = +g.dataset.last;"
    " const x = +g.dataset.x0 + (+g.dataset.x1 - +g.dataset.x0) * (event - first) / (last - first);"
    " const box = svg.getBoundingClientRect(); svg.scrollIntoView({block: 'center'});"
    " const box2 = svg.getBoundingClientRect();"
    " return [box2.left + x * box2.width / +svg.getAttribute('width'), box2.top + 200 * box2.height /"
    " +svg.getAttribute('height')]; })"
)


def mouse(browser: Browser, kind: str, point: list) -> None:
    browser.send("Input.dispatchMouseEvent", type=kind, x=point[0], y=point[1], button="left", clickCount=1)


def readout(browser: Browser, figure: str) -> str:
    return browser.eval(
        f"document.querySelector('figure[data-timeline=\"{figure}\"] .memory-readout').textContent"
    )


def test_memory_page_hover_zoom_and_both_runs(browser: Browser, tmp_path: Path) -> None:
    from memory_reports import memory_report

    from torchscan.views.common.number_style import quantity

    before, after = memory_report(), memory_report()
    open_page(browser, tmp_path, render_report(after, before=before, title="MLP"), "memory.html")
    assert browser.eval(
        "[...document.querySelectorAll('figure[data-timeline]')].map(f => f.dataset.timeline)"
    ) == [
        "before",
        "after",
    ]
    # hover the peak point (event 6): every category's live bytes in the page style
    mouse(browser, "mouseMoved", browser.eval(PLOT_X + "(['after', 6])"))
    expected = " · ".join(
        f"{name} {quantity(value, 'bytes')}"
        for name, value in (
            ("parameters", 3232),
            ("gradients", 3232),
            ("optimizer state", 6480),
            ("temporaries", 512),
            ("inputs", 256),
        )
    )
    assert readout(browser, "after") == f"Ledger event 6 · phase optimizer · live 13.39 KiB: {expected}"
    # the keyboard reads the neighbouring point: 3,232 + 256 + 3,232 + 3,240 + 512 = 10,472 bytes
    browser.eval("document.querySelector('figure[data-timeline=\"after\"] svg').focus()")
    browser.key("ArrowLeft")
    assert readout(browser, "after").startswith("Ledger event 5 · phase optimizer · live 10.23 KiB")
    # zoom in around the read point, then reset; the stretched words are hidden while zoomed
    buttons = 'figure[data-timeline="after"] button'
    assert browser.eval(f"[...document.querySelectorAll('{buttons}')].map(b => b.disabled)") == [
        False,
        True,
        True,
    ]
    browser.click(f'{buttons}[data-zoom="in"]')
    state = browser.eval(
        "(() => { const f = document.querySelector('figure[data-timeline=\"after\"]');"
        " return [f.dataset.zoom, f.querySelector('g.zoomable').getAttribute('transform'),"
        " f.querySelector('.phase-names').getAttribute('visibility'),"
        " [...f.querySelectorAll('text[data-event-tick]')].map(t => t.textContent)]; })()"
    )
    assert state[0] == "3-7" and state[1].startswith("translate(") and state[2] == "hidden"
    assert state[3] == ["3", "4", "5", "6", "7"]  # the event axis follows the zoom
    browser.click(f'{buttons}[data-zoom="reset"]')
    assert browser.eval("document.querySelector('figure[data-timeline=\"after\"]').dataset.zoom") == ""
    # a drag across the plot zooms to that range of events
    mouse(browser, "mousePressed", browser.eval(PLOT_X + "(['before', 1])"))
    mouse(browser, "mouseMoved", browser.eval(PLOT_X + "(['before', 4])"))
    mouse(browser, "mouseReleased", browser.eval(PLOT_X + "(['before', 4])"))
    assert browser.eval("document.querySelector('figure[data-timeline=\"before\"]').dataset.zoom") == "1-4"
    assert browser.errors() == [] and browser.requests() == []
