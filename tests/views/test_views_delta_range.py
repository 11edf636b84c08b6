"""A delta beyond the float range is said as such in the views, not as "delta unknown" (issue 15)."""

from __future__ import annotations

import copy
import html
import re

from torch import nn

from torchscan import crawl_module, render_report
from torchscan.report.diff import metric_diff
from torchscan.report.schema import metric_result
from torchscan.views.common.text import missing_delta_text

BEYOND = "delta beyond float range (both sides complete; the difference does not fit a float)"


def _signed(number: float) -> dict:
    return metric_result("complete", number, unit="elements", scope="module_call", method="m", signed=True)


def test_missing_delta_text_names_the_reason() -> None:
    # 1.7e308 - (-1.7e308) = 3.4e308 > ~1.797e308: report/diff.py records delta_out_of_range.
    overflow = metric_diff(_signed(-1.7e308), _signed(1.7e308), "effective_padding")
    assert missing_delta_text(overflow) == f"unavailable · {BEYOND}"
    partial = metric_diff(
        metric_result("partial", 3, unit="FLOPs", scope="model", method="m"),
        metric_result("complete", 5, unit="FLOPs", scope="model", method="m"),
        "module_flops",
    )
    assert missing_delta_text(partial) == "partial · delta unknown (requires two complete measurements)"


def test_explorer_comparison_says_the_delta_overflowed() -> None:
    before = crawl_module(nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2)), (4,))
    after = copy.deepcopy(before)
    before["layers"][1]["metrics"]["effective_padding"] = _signed(-1.7e308)
    after["layers"][1]["metrics"]["effective_padding"] = _signed(1.7e308)
    before["totals"]["spread"] = _signed(-1.7e308)
    after["totals"]["spread"] = _signed(1.7e308)
    page = html.unescape(render_report(after, before=before))
    row = re.search(r'<tr><th scope="row">spread</th>.*?</tr>', page)
    assert row is not None and f"unavailable · {BEYOND}" in row.group(0)
    changed = re.search(r"<li>0 · call #0: [^<]*</li>", page)
    assert changed is not None and f"effective_padding: unavailable · {BEYOND}" in changed.group(0)


def test_card_and_snapshot_wording_share_the_reason() -> None:
    # The explorer's comparison cards (panel_data.change_words) say it too, not only the appendix.
    from torchscan.views.analysis.panel_data import change_words

    overflow = metric_diff(_signed(-1.7e308), _signed(1.7e308), "effective_padding")
    assert change_words(overflow) == f"unavailable · {BEYOND}"
