"""Every report kind renders, titled by title= (views-3.md 4-5); an unknown kind names the accepted ones."""

from __future__ import annotations

import copy
import json
import re
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from memory_reports import memory_report
from page_reports import flop_report, profile_report
from view_parse import parse_html
from view_reports import P, benchmark_comparison, benchmark_report, tiny_report

from tests.report.generation_reports import generation_report
from tests.report.scaling_reports import scaling_report
from tests.report.test_merge_reports import flop_report as rank_flop_report
from torchscan import render_report
from torchscan.report.merge import merge_reports
from torchscan.views.page_kinds import ACCEPTED_KINDS, PAGES

SVG = "{http://www.w3.org/2000/svg}"
TITLE = "Title <&> " + P


def kinds() -> dict[str, tuple[dict[str, Any], bool]]:
    """One report of each kind and whether it has an SVG form."""
    return {
        "analysis": (tiny_report(), True),
        "flop": (flop_report(), True),
        "profile": (profile_report(), True),
        "benchmark": (benchmark_report(), False),
        "benchmark_comparison": (benchmark_comparison(benchmark_report(), benchmark_report(0.25)), False),
        "merged": (merge_reports([rank_flop_report(1), rank_flop_report(0)]), False),
        "generation": (generation_report(), True),
        "memory": (memory_report(), True),
        "scaling": (scaling_report(), True),
    }


def test_the_table_covers_every_accepted_kind() -> None:
    assert {kind for kind, _ in ACCEPTED_KINDS} == set(PAGES) | {"analysis"} == set(kinds())


@pytest.mark.parametrize("kind", list(kinds()))
def test_title_is_the_page_title_for_every_kind(kind: str) -> None:
    report, has_svg = kinds()[kind]
    report = json.loads(json.dumps(report))
    kept = copy.deepcopy(report)
    html = render_report(report, title=TITLE)
    assert html == render_report(report, title=TITLE) and report == kept  # deterministic, pure
    page = parse_html(html)
    assert page.find_all("title")[0].text() == TITLE and page.find_all("h1")[0].text() == TITLE
    assert not page.find_all("img") and "pwned" not in html.rsplit("</main>", 1)[-1]
    external = re.findall(r'(?:src|href)="(?!#)[^"]*"', html)
    namespace = "http://www.w3.org/2000/svg"  # the SVG namespace name, never fetched
    assert external == [] and "http://" not in html.replace(namespace, "") and "https://" not in html
    if has_svg:
        root = ET.fromstring(render_report(report, format="svg", title=TITLE))
        assert root.find(f"{SVG}title").text == TITLE  # type: ignore[union-attr]
    else:
        with pytest.raises(ValueError, match="format"):
            render_report(report, format="svg")


@pytest.mark.parametrize(
    "candidate",
    [{"peak_bytes": 10, "status": "complete"}, {"schema_version": 1, "hello": 2}, [], "report", None, 3],
)
def test_unknown_kinds_name_every_accepted_kind(candidate: Any) -> None:
    with pytest.raises(ValueError) as caught:
        render_report(candidate)
    message = str(caught.value)
    assert "not a report kind render_report accepts" in message
    for _, label in ACCEPTED_KINDS:
        assert label in message


def test_options_that_do_not_apply_say_so() -> None:
    with pytest.raises(ValueError, match="before= is only for analysis and memory reports"):
        render_report(flop_report(), before=flop_report())
    with pytest.raises(ValueError, match="metric= selects a view of an analysis report"):
        render_report(profile_report(), metric="macs")
