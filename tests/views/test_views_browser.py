"""Real headless Chromium checks of the explorer (render.md 7.11-7.13), driven over CDP.

Uses the system Chromium (``apt-get install chromium``) through ``websocket-client``; no browser is
downloaded. Skipped only when no Chromium binary or websocket-client is installed.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from view_reports import P, keyboard_report, m, resnet50_report

from torchscan.views.common.embed import decode
from torchscan.views.render import render_report

pytest.importorskip("websocket", reason="websocket-client is not installed (pip install websocket-client)")
from cdp_browser import Browser, chromium_binary

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        chromium_binary() is None, reason="Chromium is not installed (apt-get install chromium)"
    ),
]
DOCS_IMAGE = Path(__file__).resolve().parents[2] / "docs" / "images" / "explorer.png"


@pytest.fixture
def browser() -> Iterator[Browser]:
    instance = Browser()
    yield instance
    instance.close()


def open_page(browser: Browser, tmp_path: Path, document: str, name: str = "page.html") -> None:
    path = tmp_path / name
    path.write_text(document, encoding="utf-8")
    browser.load(path)


def node_id(document_data: dict[str, Any], path: str, view: str = "module_flops", group: int = 0) -> str:
    return next(n["id"] for n in document_data["maps"][view]["groups"][group]["nodes"] if n["path"] == path)


def ids_of(browser: Browser) -> dict[str, str]:
    # The page embeds its data compactly (torchscan.views.common.embed); decode it here, not in the page.
    text = browser.eval("document.getElementById('torchscan-data').textContent")
    groups = decode(json.loads(text))["maps"]["module_flops"]["groups"]
    return {n["path"]: n["id"] for n in groups[0]["nodes"]}


def mixed_report() -> dict[str, Any]:
    report = keyboard_report()
    report["layers"][4]["metrics"]["module_flops"]["method"] = "zzz_custom_formula"
    return report


def unknown_branch_report() -> dict[str, Any]:
    report = keyboard_report()
    for x in report["layers"][1:5]:
        x["metrics"]["module_flops"] = m("unavailable", None)
    report["totals"]["module_flops"] = m("partial", 14, scope="forward")
    return report


def baseline_pair() -> tuple[dict[str, Any], dict[str, Any]]:
    from view_reports import finish, layer

    after = finish([layer("", "Sequential"), layer("0", "Identity", flops=0, macs=0, dmas=0)])
    before = finish([layer("", "Sequential"), layer("0", "Sine", flops=None, status="unavailable")])
    before["diagnostics"] = [
        {
            "code": "unsupported_module_metric",
            "severity": "warning",
            "metric": "module_flops",
            "path": "0",
            "message": "Sine has no formula",
        },
        {
            "code": "uncounted_operator",
            "severity": "warning",
            "metric": "flops",
            "operator": "aten.sin",
            "message": "aten.sin was not counted",
        },
    ]
    return after, before


def hostile_k() -> dict[str, Any]:
    report = keyboard_report()
    report["context"]["model_type"] = P
    for x in report["layers"][1:]:
        x["type"] = P + x["type"]
    report["layers"][1]["path"] = P
    for x in report["layers"][2:5]:
        x["path"] = P + x["path"][1:]
    report["diagnostics"].append({"code": "x", "severity": "warning", "metric": "module_flops", "message": P})
    return report


def test_offline_loads_without_errors(browser: Browser, tmp_path: Path) -> None:
    after, before = baseline_pair()
    documents = {
        "k.html": render_report(keyboard_report(), metric="module_flops"),
        "mixed.html": render_report(mixed_report(), metric="module_flops"),
        "baseline.html": render_report(after, before=before, metric="module_flops"),
        "unknown.html": render_report(unknown_branch_report(), metric="module_flops"),
        "hostile.html": render_report(hostile_k(), title=P, metric="module_flops"),
        "hostile.svg": render_report(hostile_k(), title=P, format="svg"),
        "k.svg": render_report(keyboard_report(), format="svg"),
        "resnet.html": render_report(resnet50_report(), metric="module_flops"),
    }
    for name, document in documents.items():
        open_page(browser, tmp_path, document, name)
        assert browser.requests() == [], name
        assert browser.errors() == [], name
        assert browser.eval("typeof window.pwned") == "undefined"
        assert browser.eval("document.querySelectorAll('img, image, foreignObject, iframe').length") == 0
        assert browser.eval("document.querySelectorAll('svg script').length") == 0
        if name.endswith(".html"):
            # Large reports draw panels other than the initial one on first selection: visit those.
            lazy = "[...document.querySelectorAll('.metric-panel[data-lazy]')].map(p => p.dataset.view)"
            for view in browser.eval(lazy):
                browser.click(f"label[for='view-{view}']")
            assert browser.errors() == [], name
            current = browser.eval(
                "[...document.querySelectorAll('.metric-panel')].map(p => p.querySelectorAll("
                "'a[data-map-node][aria-current=\"true\"]').length)"
            )
            assert current == [1, 1, 1, 1, 1, 1], name


def test_baseline_diagnostics_links(browser: Browser, tmp_path: Path) -> None:
    after, before = baseline_pair()
    open_page(browser, tmp_path, render_report(after, before=before, metric="module_flops"))
    ids = ids_of(browser)
    browser.click(f"#map-module_flops-0-{ids['0']}")
    links = browser.eval(
        "[...document.querySelectorAll('aside[data-inspector] a[href^=\"#before-diagnostic-\"]')]"
        ".filter(a => a.offsetParent).map(a => a.textContent)"
    )
    assert len(links) >= 2 and any(text.startswith("Global") for text in links)
    browser.click("aside[data-inspector] a[href^='#before-diagnostic-']")
    assert browser.eval("document.activeElement.id").startswith("before-diagnostic-")
    assert browser.eval("document.activeElement.getBoundingClientRect().height > 0")


def focus(browser: Browser, selector: str) -> None:
    browser.eval(f"document.querySelector({selector!r}).focus()")


def h3(browser: Browser) -> str:
    return browser.eval(
        "document.querySelector('.metric-panel[data-view=\"module_flops\"] aside h3').textContent"
    )


def inside_viewport(browser: Browser, tile_id: str) -> bool:
    return browser.eval(
        f"(() => {{ const t = document.getElementById({tile_id!r}); const r = "
        "t.querySelector('rect[data-tile]');"
        " const box = t.ownerSVGElement.getAttribute('viewBox').split(' ').map(Number);"
        " const x = +r.getAttribute('x'), y = +r.getAttribute('y'), w = +r.getAttribute('width'),"
        " h = +r.getAttribute('height');"
        " const inBox = x >= box[0] - 0.01 && y >= box[1] - 0.01 && x + w <= box[0] + box[2] + 0.01"
        " && y + h <= box[1] + box[3] + 0.01;"
        " const b = r.getBoundingClientRect(); return inBox && b.top >= 0 && b.bottom <= innerHeight; })()"
    )


def test_keyboard_navigation(browser: Browser, tmp_path: Path) -> None:
    open_page(browser, tmp_path, render_report(keyboard_report(), metric="module_flops"))
    ids = ids_of(browser)
    tile = lambda path: f"map-module_flops-0-{ids[path]}"  # noqa: E731
    focus(browser, f"#{tile('0.0')}")
    browser.key("ArrowDown")  # 0.1 (Identity, zero width) has no tile and is skipped
    assert h3(browser) == "0.2"
    assert browser.eval("document.activeElement.id") == tile("0.2")
    browser.key(" ")
    assert browser.eval("document.activeElement.tagName") == "H3"
    browser.click(f"#{tile('1')}")
    current = browser.eval(
        '[...document.querySelectorAll(\'[data-view="module_flops"] a[aria-current="true"]\')].map(a => a.id)'
    )
    assert current == [tile("1")]
    assert (
        browser.eval(f"getComputedStyle(document.querySelector('#{tile('1')} rect')).fill")
        == "rgb(242, 177, 52)"
    )
    # Collapse and reset.
    browser.click(f"#{tile('0')}")
    browser.click("[data-view='module_flops'] button[data-action='collapse']")
    assert browser.eval(f"document.getElementById({tile('0.0')!r}).hasAttribute('hidden')")
    assert browser.eval(
        f"document.querySelector('.rail-card[data-node-id=\"{ids['0.1']}\"]').offsetParent !== null"
    )
    assert (
        browser.eval(
            'document.querySelector(\'[data-view="module_flops"] '
            'button[data-action="collapse"]\').textContent'
        )
        == "Expand branch"
    )
    browser.click("[data-view='module_flops'] button[data-action='reset']")
    assert not browser.eval(f"document.getElementById({tile('0.0')!r}).hasAttribute('hidden')")
    # Zoom, parent.
    browser.click(f"#{tile('0')}")
    before_box = browser.eval("document.querySelector('svg.module-map').getAttribute('viewBox')")
    browser.click("[data-view='module_flops'] button[data-action='zoom']")
    assert browser.eval("document.querySelector('svg.module-map').getAttribute('viewBox')") != before_box
    focus(browser, f"#{tile('0')}")
    browser.key("End")
    assert h3(browser) == "1" and inside_viewport(browser, tile("1"))
    browser.key("Home")
    assert h3(browser) == "(root)" and inside_viewport(browser, tile(""))
    browser.click(f"#{tile('0')}")
    browser.click("[data-view='module_flops'] button[data-action='zoom']")
    focus(browser, f"#{tile('0')}")
    browser.key("ArrowLeft")
    assert h3(browser) == "(root)" and inside_viewport(browser, tile(""))
    browser.click(f"#{tile('0')}")
    browser.click("[data-view='module_flops'] button[data-action='up']")
    assert h3(browser) == "(root)" and inside_viewport(browser, tile(""))
    # Tab focuses without selecting; Enter then selects.
    browser.click(f"#{tile('0.2')}")
    focus(browser, f"#{tile('0.2')}")
    browser.key("Tab")
    assert browser.eval("document.activeElement.id") == tile("1")
    assert h3(browser) == "0.2" and inside_viewport(browser, tile("1"))
    browser.key("Enter")
    assert h3(browser) == "1"
    # Switching views keeps the path; arrow keys on the radios switch views.
    browser.click(f"#{tile('0.0')}")
    browser.click("label[for='view-parameters']")
    assert browser.eval("document.querySelector('[data-view=\"parameters\"] aside h3').textContent") == "0.0"
    browser.click("label[for='view-module_flops']")
    focus(browser, "#view-module_flops")
    browser.key("ArrowRight")  # issue 15: Operator FLOPs now follows Module FLOPs
    assert browser.eval("document.querySelector('input[name=view]:checked').id") == "view-operator_flops"
    browser.key("ArrowRight")
    assert browser.eval("document.querySelector('input[name=view]:checked').id") == "view-macs"
    # Enter on an inspector evidence link opens and focuses the call details.
    browser.eval("document.querySelector('[data-view=\"macs\"] aside .call-card a').focus()")
    browser.key("Enter")
    active = browser.eval(
        "[document.activeElement.tagName, document.activeElement.id, document.activeElement.open]"
    )
    assert active[0] == "DETAILS" and active[1].startswith("call-") and active[2] is True


def test_mixed_groups_and_unknown_branch(browser: Browser, tmp_path: Path) -> None:
    open_page(browser, tmp_path, render_report(mixed_report(), metric="module_flops"))
    groups = decode(json.loads(browser.eval("document.getElementById('torchscan-data').textContent")))
    data = [
        [g["id"], g["method"], next(n["id"] for n in g["nodes"] if n["path"] == "0.2")]
        for g in groups["maps"]["module_flops"]["groups"]
    ]
    custom = next(g for g in data if g[1] == "zzz_custom_formula")
    browser.click(f"#{custom[0]}-{custom[2]}")
    browser.click("label[for='view-macs']")
    browser.click("label[for='view-module_flops']")
    assert (
        browser.eval(f"document.getElementById('{custom[0]}-{custom[2]}').getAttribute('aria-current')")
        == "true"
    )
    inspector = browser.eval("document.querySelector('[data-view=\"module_flops\"] aside').textContent")
    assert "complete 60 FLOPs" in inspector and "Method: zzz_custom_formula" in inspector
    for group_id, _, _ in data:
        first = browser.eval(
            f"document.querySelector('svg[data-group-id=\"{group_id}\"] a[data-map-node]').id"
        )
        browser.click(f"#{first}")
        browser.click("[data-view='module_flops'] button[data-action='collapse']")
    browser.click("[data-view='module_flops'] button[data-action='reset']")
    assert browser.eval("document.querySelectorAll('[data-view=\"module_flops\"] [hidden]').length") == 0
    open_page(
        browser, tmp_path, render_report(unknown_branch_report(), metric="module_flops"), "unknown.html"
    )
    ids = ids_of(browser)
    assert browser.eval(f"document.getElementById('map-module_flops-0-{ids['0']}')") is None
    browser.click(f".rail-card[data-node-id='{ids['0']}']")
    assert h3(browser) == "0"
    assert browser.eval(
        'document.querySelector(\'[data-view="module_flops"] button[data-action="zoom"]\').disabled'
    )


def test_narrow_layout(browser: Browser, tmp_path: Path) -> None:
    browser.resize(390, 844)
    for report in (keyboard_report(), resnet50_report()):
        open_page(browser, tmp_path, render_report(report, metric="module_flops"))
        assert browser.eval("document.documentElement.scrollWidth") <= 390
        assert (
            browser.eval(
                "document.querySelector('details.appendix').open = true, document.documentElement.scrollWidth"
            )
            <= 390
        )
        aside = browser.eval(
            "(() => { const a = document.querySelector('[data-view=\"module_flops\"] aside')"
            '.getBoundingClientRect(); const m = document.querySelector(\'[data-view="module_flops"] '
            ".map-column').getBoundingClientRect(); return [a.top, m.bottom]; })()"
        )
        assert aside[0] >= aside[1]  # the inspector stacks under the map


def test_no_javascript_fallback(tmp_path: Path) -> None:
    browser = Browser(javascript=False)
    try:
        open_page(browser, tmp_path, render_report(keyboard_report(), metric="module_flops"))
        assert browser.errors() == []
        browser.click("label[for='view-parameters']")
        visible = browser.eval(
            "[...document.querySelectorAll('.metric-panel')].filter(p => p.offsetParent)"
            ".map(p => p.dataset.view)"
        )
        assert visible == ["parameters"]
        assert (
            browser.eval(
                "document.querySelector('[data-view=\"parameters\"] svg.module-map')"
                ".getBoundingClientRect().width"
            )
            > 0
        )
        assert browser.eval(
            'document.querySelector(\'[data-view="parameters"] button[data-action="zoom"]\').disabled'
        )
        # The hierarchy and call evidence exist without script.
        browser.eval("document.querySelector('details.appendix').open = true")
        summary = "document.querySelector('section.tree details > summary')"
        browser.eval(f"{summary}.focus()")
        browser.key("Enter")
        assert browser.eval("document.querySelector('section.tree details').open") is False
        browser.key(" ")
        assert browser.eval("document.querySelector('section.tree details').open") is True
        browser.eval("document.querySelector('details.appendix').open = false")
        browser.eval("location.hash = '#call-2'")
        # Closed details reveal a targeted call's evidence through CSS (::details-content), no script.
        pre = browser.eval(
            "(() => { const r = document.querySelector('#call-2 pre').getBoundingClientRect();"
            " return [r.height, r.top >= 0 && r.top < innerHeight]; })()"
        )
        assert pre[0] > 0 and pre[1] is True
    finally:
        browser.close()


def test_screenshot_for_docs(browser: Browser, tmp_path: Path) -> None:
    """The explorer on a ResNet-50-shaped report, screenshotted.

    Written to the temporary folder; with ``TORCHSCAN_UPDATE_DOCS_IMAGE=1`` it refreshes
    docs/images/explorer.png instead (so test runs never dirty the checkout by default).
    """
    report = _resnet_report()
    browser.resize(1440, 1000)
    open_page(browser, tmp_path, render_report(report, title="ResNet-50 module costs"))
    assert browser.errors() == []
    target = DOCS_IMAGE if os.environ.get("TORCHSCAN_UPDATE_DOCS_IMAGE") == "1" else tmp_path / "explorer.png"
    target.parent.mkdir(parents=True, exist_ok=True)
    browser.screenshot(target)
    assert target.stat().st_size > 10_000


def _resnet_report() -> dict[str, Any]:
    try:
        from view_models import resnet50_crawl

        return resnet50_crawl()
    except ImportError:
        return copy.deepcopy(resnet50_report())
