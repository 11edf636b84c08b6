"""The memory page of views-3.md 5: own bytes, the per-module stacked view, both runs on one axis."""

from __future__ import annotations

import copy
import xml.etree.ElementTree as ET

from memory_reports import bytes_result, memory_report
from view_parse import parse_html

from torchscan import render_report
from torchscan.views.memory.modules_svg import module_rows
from torchscan.views.memory.own_bytes import call_parents, own_bytes
from torchscan.views.memory.timeline_svg import timeline_top

NS = "{http://www.w3.org/2000/svg}"


def call(path: str, index: int, allocated: int | None, saved: int | None, status: str = "complete") -> dict:
    return {
        "path": path,
        "call_index": index,
        "module_type": "M",
        "activations_saved": bytes_result(
            saved, "module_call", status if saved is not None else "unavailable"
        ),
        "allocated": bytes_result(
            allocated, "module_call", status if allocated is not None else "unavailable"
        ),
        "peak_inside": bytes_result(allocated or 0, "module_call"),
    }


# root(1000) -> block(700) -> block.a(300), block.b(250); head(100); block again (call #1, 60)
CALLS = [
    call("", 0, 1000, 600),
    call("block", 0, 700, 500),
    call("block.a", 0, 300, 300),
    call("block.b", 0, 250, 100),
    call("head", 0, 100, 0),
    call("block", 1, 60, 0),
]


def test_calls_nest_by_start_order_and_path() -> None:
    assert call_parents(CALLS) == [-1, 0, 1, 1, 0, 0]
    # own = inclusive minus nested: root 1000 - (700 + 100 + 60) = 140, block 700 - 550 = 150
    assert [o.value for o in own_bytes(CALLS, "allocated")] == [140, 150, 300, 250, 100, 60]
    assert [o.value for o in own_bytes(CALLS, "activations_saved")] == [100, 100, 300, 100, 0, 0]


def test_own_bytes_are_unknown_unless_they_can_be_known() -> None:
    calls = copy.deepcopy(CALLS)
    calls[3] = call("block.b", 0, 250, 100, "partial")  # a nested lower bound: the parent's own is unknown
    own = own_bytes(calls, "allocated")
    assert own[1].value is None and own[3].value == 250 and own[3].partial
    calls = copy.deepcopy(CALLS)
    calls[1] = call("block", 0, 500, 500)  # nested calls sum above it: they do not nest, never negative
    assert own_bytes(calls, "allocated")[1].value is None
    calls = copy.deepcopy(CALLS)
    calls[0] = call("", 0, None, None)
    assert own_bytes(calls, "allocated")[0].value is None


def test_the_per_module_view_stacks_own_saved_and_other_bytes() -> None:
    report = memory_report()
    report["by_module"] = copy.deepcopy(CALLS)
    rows = module_rows(report)
    # largest own allocated first: block.a 300, block.b 250, block 150, root 140, head 100, block #1 60
    assert [(report["by_module"][r["index"]]["path"], r["saved"], r["other"]) for r in rows] == [
        ("block.a", 300, 0),
        ("block.b", 100, 150),
        ("block", 100, 50),
        ("", 100, 40),
        ("head", 0, 100),
        ("block", 0, 60),
    ]
    page = render_report(report, title="t")
    svg = page.split('<svg xmlns="http://www.w3.org/2000/svg" role="img" class="memory-modules"')[1].split(
        "</svg>"
    )[0]
    root = ET.fromstring('<svg xmlns="http://www.w3.org/2000/svg" ' + svg + "</svg>")
    segments = [(r.get("data-segment"), r.find(f"{NS}title").text) for r in root.iter(f"{NS}rect")]  # type: ignore[union-attr]
    assert segments[0] == (
        "saved",
        "activations (saved for backward) · block.a call #0 (M) · 300 B own · storage shapes are not "
        "recorded in a MemoryReport",
    )
    assert (
        "other",
        "temporaries and outputs (allocated, not saved) · block.b call #0 (M) · 150 B own · "
        "storage shapes are not recorded in a MemoryReport",
    ) in segments


def test_before_and_after_share_one_bytes_axis() -> None:
    before, after = memory_report(), memory_report()
    for point in before["timeline"]:  # the baseline run held 4 KiB more activations at every point
        point["by_category"]["activations"] += 4096
    before["at_peak"]["by_category"]["activations"] = bytes_result(4096, "at_peak")
    before["peak"] = bytes_result(before["peak"]["value"] + 4096, "workload")
    for phase in ("forward", "backward", "optimizer"):
        before["by_phase"][phase] = bytes_result(before["by_phase"][phase]["value"] + 4096, "workload_phase")
    top = max(timeline_top(before), timeline_top(after))
    assert top == timeline_top(before) == 13_712 + 4096
    page = parse_html(render_report(after, before=before, title="ckpt"))
    figures = [f for f in page.find_all("figure") if f.attrs.get("data-timeline")]
    assert [f.attrs["data-timeline"] for f in figures] == ["before", "after"]
    for svg in (render_report(after, before=before, format="svg", title="ckpt"),):
        root = ET.fromstring(svg)
        panels = root.findall(f"{NS}svg")
        ticks = [
            [
                t.text
                for t in p.iter(f"{NS}text")
                if t.get("font-size") == "11" and t.get("text-anchor") == "end"
            ][:5]
            for p in panels
        ]
        assert ticks[0] == ticks[1]  # one bytes axis: equal ticks, 0 to 17,808 bytes
        assert ticks[0][-1] == "17.39 KiB"  # 17,808 / 1,024
