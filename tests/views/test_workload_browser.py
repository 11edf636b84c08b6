"""Issue 23 item 5 in a real headless Chromium: the workload page's human units, phase split and
roofline, and the comparison's blocks × calls labels, offline, without script and without horizontal
scroll at 390 px. Skipped when Chromium or websocket-client is missing (same harness as the others)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_workload_page import _contradicting, _with_hardware
from view_reports import m

from torchscan.views.render import render_report

pytest.importorskip("websocket", reason="websocket-client is not installed (pip install websocket-client)")
from cdp_browser import Browser, chromium_binary

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        chromium_binary() is None, reason="Chromium is not installed (apt-get install chromium)"
    ),
]
FLOP_COUNTER = "torch.utils.flop_counter.FlopCounterMode"
E_NOTATION = re.compile(r"\d[eE][+-]?\d")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    instance = Browser()
    yield instance
    instance.close()


def _open(browser: Browser, tmp_path: Path, document: str, name: str) -> None:
    path = tmp_path / name
    path.write_text(document, encoding="utf-8")
    browser.load(path)
    assert browser.requests() == [] and browser.errors() == [], name


def _workload() -> dict:
    report = _with_hardware(2e10)
    report["totals"]["model_flops_utilization"] = m("complete", 0.02, "ratio", "x", "warmed_block_average")
    report["totals"]["hardware_flops_utilization"] = m("complete", 0.02, "ratio", "x", "warmed_block_average")
    flops = report["operator_flops"]
    for name, value in (("forward", 250_000_000), ("backward", 500_000_000), ("optimizer", 250_000_000)):
        flops["by_phase"][name] = m("complete", value, "FLOPs", FLOP_COUNTER, "workload_phase")
    return report


@pytest.mark.parametrize("width", [1200, 390])
def test_workload_page_reads_in_human_units_and_fits(browser: Browser, tmp_path: Path, width: int) -> None:
    browser.resize(width, 844)
    _open(browser, tmp_path, render_report(_workload()), f"workload-{width}.html")
    text = browser.eval("document.body.innerText")
    assert not E_NOTATION.search(text)
    assert "500.0 ms" in text and "2.000 GFLOP/s" in text and "2.0 %" in text  # latency 0.5 s, rate, MFU
    assert browser.eval("document.querySelectorAll('script').length") == 0
    # No sideways scroll: the figures shrink with the window.
    assert browser.eval("document.documentElement.scrollWidth <= window.innerWidth")
    phases = browser.eval(
        "[...document.querySelectorAll('svg.phase-bar rect')].map(r => "
        "[r.dataset.phase, Math.round(r.getBoundingClientRect().width)])"
    )
    assert [name for name, _ in phases] == ["forward", "backward", "optimizer"]
    forward, backward, optimizer = (size for _, size in phases)
    assert abs(backward - 2 * forward) <= 2 and abs(optimizer - forward) <= 1 and forward > 0
    roof = browser.eval(
        "(() => { const r = document.querySelector('svg.workload-roofline').getBoundingClientRect(); "
        "return [r.width, r.height]; })()"
    )
    assert min(250, width - 40) <= roof[0] <= min(600, width) and roof[1] > 100
    assert browser.eval("document.querySelectorAll('svg.workload-roofline line.workload-rate').length") == 1


def test_comparison_strips_are_labelled_in_the_browser(browser: Browser, tmp_path: Path) -> None:
    browser.resize(1200, 844)
    _open(browser, tmp_path, render_report(_contradicting()), "comparison.html")
    labels = browser.eval(
        "[...document.querySelectorAll('svg.strip-plot text.strip-layout')].map(t => t.textContent)"
    )
    assert labels == ["5 blocks × 4 calls", "10 blocks × 1 call"]
    note = browser.eval("document.querySelector('p.direction-note').innerText")
    assert note.startswith("Latency improved (-100.0 ms (-20.0 %)) while throughput fell")
    assert not E_NOTATION.search(browser.eval("document.body.innerText"))
