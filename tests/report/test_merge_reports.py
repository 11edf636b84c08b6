"""merge_reports (distributed.md 4) on hand-built per-rank reports: pure, torch-free."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest

from torchscan.report.merge import merge_reports
from torchscan.report.schema import COMMUNICATION_METHOD, OPERATOR_METHOD, metric_result
from torchscan.report.validate import validate_report
from torchscan.report.validate.merged import validate_merged_report
from torchscan.report.validate.operators import validate_flop_report


def _flops(status, value, scope="workload"):
    if status == "partial":
        return metric_result("partial", known_value=value, unit="FLOPs", scope=scope, method=OPERATOR_METHOD)
    return metric_result(status, value, unit="FLOPs", scope=scope, method=OPERATOR_METHOD)


def flop_report(rank, world_size=2, executed=32_768, logical=65_536, sent=1024, status="complete"):
    """The FlopReport one rank of the DTensor matmul example would produce."""
    phases = {
        name: metric_result("complete", 0, unit="FLOPs", scope="workload_phase", method=OPERATOR_METHOD)
        for name in ("backward", "optimizer", "recompute")
    }
    phases["forward"] = {**_flops(status, executed), "scope": "workload_phase"}
    report = {
        "schema_version": 1,
        "context": {
            "torch_version": "2.14.1",
            "method": OPERATOR_METHOD,
            "counting_convention": "torchscan_flops_v1",
            "distributed": {
                "backend": "gloo",
                "world_size": world_size,
                "rank": rank,
                "mesh": [{"name": "dim0", "size": world_size}],
            },
        },
        "total": _flops(status, executed),
        "by_phase": phases,
        "by_module": {},
        "by_operator": {"aten.mm": executed},
        "ignored_operators": {},
        "diagnostics": [],
        "logical_total": _flops("complete", logical, "global"),
        "communication": {
            "total_bytes": metric_result(
                "complete", sent, unit="bytes", scope="workload", method=COMMUNICATION_METHOD
            ),
            "by_operator": {"_c10d_functional.all_reduce": {"calls": 1, "bytes": sent}},
        },
    }
    validate_flop_report(report)
    return report


TIMER = "torch.utils.benchmark"


def _seconds(value):
    return metric_result("complete", value, unit="seconds", scope="warmed_blocks", method=TIMER)


def benchmark_report(rank, latency, peak, world_size=2):
    """A measure_workload-like BenchmarkReport of one rank (latency and peak memory measured)."""
    return {
        "schema_version": 1,
        "context": {
            "work_unit": "samples",
            "distributed": {"backend": "gloo", "world_size": world_size, "rank": rank, "mesh": None},
        },
        "inputs": {},
        "totals": {
            "first_call_latency": _seconds(latency * 2),
            "latency": _seconds(latency),
            "latency_iqr": _seconds(0.0),
            "throughput": metric_result(
                "complete", 1 / latency, unit="samples/s", scope="warmed_blocks", method=TIMER
            ),
            "peak_memory": metric_result(
                "complete", peak, unit="bytes", scope="pytorch_tensor_bytes", method="torch.profiler"
            ),
        },
        "measurement": {"number_per_run": 1, "raw_times_seconds": [latency], "measured_calls": 1},
    }


def test_two_ranks_sum_executed_and_keep_logical_once():
    merged = merge_reports([flop_report(0), flop_report(1)])
    validate_merged_report(merged)
    assert merged["report_type"] == "merged"
    assert merged["ranks"] == [0, 1] and merged["world_size"] == 2
    assert merged["totals"]["operator_flops"] == metric_result(
        "complete", 65_536, unit="FLOPs", scope="sum_over_ranks", method=OPERATOR_METHOD
    )
    assert merged["totals"]["logical_operator_flops"]["value"] == 65_536
    assert merged["totals"]["logical_operator_flops"]["scope"] == "global"
    assert merged["totals"]["communication_bytes"]["value"] == 2048
    assert merged["imbalance"]["operator_flops"]["value"] == 1.0
    assert merged["per_rank"][0]["totals"]["operator_flops"] == flop_report(0)["total"]
    assert merged["diagnostics"] == []


def test_three_of_four_ranks_are_partial_with_missing_ranks():
    merged = merge_reports([flop_report(r, world_size=4) for r in (0, 1, 3)])
    executed = merged["totals"]["operator_flops"]
    assert executed["status"] == "partial" and executed["known_value"] == 3 * 32_768
    assert merged["totals"]["communication_bytes"]["status"] == "partial"
    assert merged["totals"]["logical_operator_flops"]["status"] == "complete"  # taken once, not summed
    assert merged["imbalance"]["operator_flops"]["status"] == "unavailable"
    (entry,) = merged["diagnostics"]
    assert entry["code"] == "missing_ranks" and "[2]" in entry["message"]
    validate_report(json.loads(json.dumps(merged)))


def test_partial_rank_makes_the_sum_partial():
    merged = merge_reports([flop_report(0, status="partial"), flop_report(1)])
    assert merged["totals"]["operator_flops"]["status"] == "partial"
    assert merged["totals"]["operator_flops"]["known_value"] == 65_536


def test_logical_totals_that_disagree_are_unavailable():
    merged = merge_reports([flop_report(0), flop_report(1, logical=65_000)])
    assert merged["totals"]["logical_operator_flops"]["status"] == "unavailable"
    assert [d["code"] for d in merged["diagnostics"]] == ["logical_total_mismatch"]


def test_benchmarks_merge_by_slowest_rank_and_maximum_memory():
    reports = [benchmark_report(0, 0.002, 1000), benchmark_report(1, 0.003, 800)]
    merged = merge_reports(reports)
    # latency: the slowest rank's block average; memory: the largest rank's, never a sum
    assert merged["totals"]["latency"]["value"] == 0.003
    assert merged["totals"]["latency"]["scope"] == "max_over_ranks"
    assert merged["totals"]["peak_memory"]["value"] == 1000
    assert merged["totals"]["peak_memory"]["scope"] == "max_over_ranks"
    assert merged["imbalance"]["latency"]["value"] == pytest.approx(0.003 / 0.0025)
    assert merged["per_rank"][1]["totals"] == reports[1]["totals"]
    assert "operator_flops" not in merged["totals"]


def test_inputs_are_not_modified():
    reports = [flop_report(1), flop_report(0)]
    before = copy.deepcopy(reports)
    merged = merge_reports(reports)
    merged["per_rank"][0]["totals"]["operator_flops"]["value"] = -1
    assert reports == before


@pytest.mark.parametrize(
    ("reports", "message"),
    [
        ([], "empty"),
        ([{"schema_version": 1}], r"reports\[0\] is not a FlopReport"),
        ([flop_report(0), 7], r"reports\[1\] is not a report"),
        ([flop_report(0), flop_report(0)], "duplicate ranks"),
        ([flop_report(0), flop_report(1, world_size=4)], "world sizes"),
        ([flop_report(0), benchmark_report(1, 0.1, 1)], "mix report types"),
    ],
)
def test_bad_inputs_are_refused(reports, message):
    with pytest.raises(ValueError, match=message):
        merge_reports(reports)


def test_mixed_counting_conventions_are_refused():
    other = flop_report(1)
    other["context"]["counting_convention"] = "another_convention"
    with pytest.raises(ValueError, match="conventions"):
        merge_reports([flop_report(0), other])


def test_a_report_without_distributed_context_is_refused():
    report = flop_report(0)
    del report["context"]["distributed"]
    with pytest.raises(ValueError, match=r"context\.distributed"):
        merge_reports([report])


def test_reports_must_be_a_sequence():
    with pytest.raises(TypeError, match="reports must be a list or tuple"):
        merge_reports(flop_report(0))  # type: ignore[arg-type]


def test_invalid_merged_report_is_named():
    merged = merge_reports([flop_report(0), flop_report(1)])
    merged["ranks"] = [1, 1]
    with pytest.raises(ValueError, match=r"^ranks"):
        validate_merged_report(merged)


def test_merge_does_not_import_torch():
    code = (
        "import sys; from torchscan.report.merge import merge_reports; "
        "import torchscan.views.merged.page, torchscan.report.validate.merged; "
        "sys.exit(1 if 'torch' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
