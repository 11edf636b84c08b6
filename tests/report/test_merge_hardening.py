"""merge_reports hardening (issue #20, item 2): huge world sizes, benchmark distributed parts, and
the diagnostics of each rank kept in the merged report (truth rule 2)."""

from __future__ import annotations

import copy
import json
import time
import tracemalloc

import pytest
from test_merge_reports import benchmark_report, flop_report

from torchscan.report.merge import merge_reports
from torchscan.report.validate import validate_report
from torchscan.report.validate.merged import validate_merged_report
from torchscan.views.merged.page import merged_summary
from torchscan.views.render import render_report


@pytest.mark.parametrize("world_size", [10**6, 10**12])
def test_a_huge_world_size_costs_what_the_reports_cost(world_size):
    # Before: a set of range(world_size) (MemoryError at 10**12) and a 7.9 MB message at 10**6.
    tracemalloc.start()
    started = time.perf_counter()
    try:
        merged = merge_reports([flop_report(r, world_size=world_size) for r in (0, 7)])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 2
    assert peak < 1_000_000  # bytes: independent of world_size
    (entry,) = merged["diagnostics"]
    assert entry["code"] == "missing_ranks"
    last = world_size - 1
    assert f"{world_size - 2} rank(s) are missing: ranks [1-6, 8-{last}]" in entry["message"]
    assert merged["totals"]["operator_flops"]["status"] == "partial"
    validate_merged_report(json.loads(json.dumps(merged)))
    assert "missing_ranks" in render_report(merged)


def test_many_gaps_are_named_up_to_a_cap_and_counted():
    reports = [flop_report(r, world_size=100) for r in range(0, 100, 2)]  # every odd rank missing
    (entry,) = merge_reports(reports)["diagnostics"]
    # 50 runs of one rank each: 16 named (1, 3, ..., 31), the other 34 counted
    assert (
        "50 rank(s) are missing: ranks [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31, "
        in (entry["message"])
    )
    assert "and 34 more ranges]" in entry["message"]
    assert len(entry["message"]) < 400


def test_missing_first_and_last_ranks_are_runs():
    (entry,) = merge_reports([flop_report(r, world_size=8) for r in (2, 3, 5)])["diagnostics"]
    assert "5 rank(s) are missing: ranks [0-1, 4, 6-7]" in entry["message"]


def _benchmark_with_flops(rank):
    report = benchmark_report(rank, 0.002, 1000)
    report["operator_flops"] = flop_report(rank)
    return report


@pytest.mark.parametrize(
    ("where", "value", "message"),
    [
        (("communication",), {}, r"operator_flops\.communication\.total_bytes"),
        (("communication",), "none", r"operator_flops\.communication"),
        (("communication", "by_operator"), [], r"operator_flops\.communication\.by_operator"),
        (("communication", "total_bytes", "known_value"), 5, r"operator_flops\.communication\.total_bytes"),
        (("logical_total",), {}, r"operator_flops\.logical_total"),
        (("logical_total", "scope"), "workload", r"operator_flops\.logical_total"),
        (("context",), "gloo", r"operator_flops\.context"),
        (("context", "distributed"), {"backend": "gloo"}, r"operator_flops\.context\.distributed"),
    ],
)
def test_benchmark_distributed_parts_are_validated(where, value, message):
    # Before: never checked, so merge raised KeyError (report/merge.py) and render accepted them.
    bad = _benchmark_with_flops(0)
    target = bad["operator_flops"]
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    with pytest.raises(ValueError, match=message):
        validate_report(bad)
    with pytest.raises(ValueError, match=message):
        render_report(bad)
    with pytest.raises(ValueError, match=rf"reports\[0\]\.{message}"):
        merge_reports([bad, _benchmark_with_flops(1)])


def test_benchmarks_with_distributed_flops_still_merge():
    merged = merge_reports([_benchmark_with_flops(0), _benchmark_with_flops(1)])
    assert merged["totals"]["communication_bytes"]["value"] == 2048
    assert merged["totals"]["logical_operator_flops"]["value"] == 65_536


UNCOUNTED = {
    "code": "uncounted_operator",
    "severity": "warning",
    "metric": "operator_flops",
    "message": "aten.special_op has no formula: 3 calls uncounted",
    "operator": "aten.special_op",
}


@pytest.mark.parametrize("kind", ["flop", "benchmark"])
def test_a_partial_rank_keeps_its_diagnostics_with_its_rank(kind):
    # Before: the merged total was partial and nothing in the merged report said why.
    partial = flop_report(1, status="partial")
    partial["diagnostics"].append(UNCOUNTED)
    if kind == "benchmark":
        reports = [_benchmark_with_flops(0), benchmark_report(1, 0.003, 800)]
        reports[1]["operator_flops"] = partial
        reports[1]["diagnostics"] = [UNCOUNTED]
    else:
        reports = [flop_report(0), partial]
    before = copy.deepcopy(reports)
    merged = merge_reports(reports)
    assert reports == before  # the inputs keep their diagnostics untouched
    assert merged["totals"]["operator_flops"]["status"] == "partial"
    assert merged["diagnostics"] == [{**UNCOUNTED, "rank": 1}]
    validate_merged_report(json.loads(json.dumps(merged)))
    assert "rank 1: <code>uncounted_operator</code>" in render_report(merged)
    assert "rank 1: uncounted_operator: aten.special_op" in merged_summary(merged)


def test_missing_ranks_come_before_rank_diagnostics_in_rank_order():
    reports = [flop_report(r, world_size=4) for r in (3, 0)]
    for report in reports:
        report["diagnostics"].append(
            {**UNCOUNTED, "message": f"on rank {report['context']['distributed']['rank']}"}
        )
    merged = merge_reports(reports)
    assert [(d["code"], d.get("rank")) for d in merged["diagnostics"]] == [
        ("missing_ranks", None),
        ("uncounted_operator", 0),
        ("uncounted_operator", 3),
    ]


@pytest.mark.parametrize("rank", [5, -1, "0", True])
def test_a_merged_diagnostic_names_a_merged_rank(rank):
    merged = merge_reports([flop_report(0), flop_report(1)])
    merged["diagnostics"].append({**UNCOUNTED, "rank": rank})
    with pytest.raises(ValueError, match=r"^diagnostics\[0\]\.rank"):
        validate_merged_report(merged)
