"""Issue 23 item 5 in the command line's text views (cli/format.py, cli/hardware.py): human units."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from torchscan.cli.format import benchmark, change, comparison, count, phase_lines, seconds
from torchscan.cli.hardware import hardware_lines
from torchscan.report.schema import metric_result

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "views"))
from view_reports import benchmark_report, m

E_NOTATION = re.compile(r"\d[eE][+-]?\d")


def _flops(value: int, status: str = "complete") -> dict:
    return metric_result(status, value, unit="FLOPs", scope="forward", method="torchscan_module_formula")


def _diff(before: int, after: int) -> dict:
    return {"status": "complete", "delta": after - before, "before": _flops(before), "after": _flops(after)}


def test_counts_and_durations_never_use_e_notation() -> None:
    assert count(170_507.3) == "170,507" and count(12) == "12"
    assert seconds(0.000149641) == "149.6 µs" and seconds(0.25) == "250 ms"


def test_benchmark_lines_say_blocks_times_calls_and_readable_throughput() -> None:
    report = benchmark_report(0.000149641, 0.0000158882)
    report["totals"]["throughput"] = m("complete", 170_507.4, "images/s", "t", "warmed_blocks")
    text = benchmark(report, "net")
    assert "5 blocks × 4 calls per block" in text
    assert "median       149.6 µs per call" in text and "IQR          15.89 µs" in text
    assert "throughput   170,507 images/s" in text and not E_NOTATION.search(text)


def test_comparison_has_a_relative_change_column() -> None:
    diff = {
        "totals": {"module_flops": _diff(22_403_652_352, 11_202_909_952), "macs": _diff(0, 5)},
        "layers": {"added": [], "removed": [], "changed": []},
    }
    text = comparison(diff)
    header, _, flops, macs = text.splitlines()[:4]
    assert header.split() == ["total", "before", "after", "change", "delta"]
    # (11,202,909,952 - 22,403,652,352) / 22,403,652,352 = -0.49995 -> -50 %
    assert flops.split() == [
        "module_flops",
        "22,403,652,352",
        "11,202,909,952",
        "-50",
        "%",
        "-11,200,742,400",
    ]
    assert macs.split()[-2:] == ["-", "+5"]  # no relative change from 0
    assert change({"status": "partial", "delta": None, "before": None, "after": None}) == "-"


def test_phase_lines_give_shares_of_the_total() -> None:
    report = {
        "total": _flops(4_000),
        "by_phase": {
            "forward": _flops(1_000),
            "backward": _flops(2_000),
            "optimizer": _flops(1_000),
            "recompute": _flops(0),
        },
    }
    lines = phase_lines(report)
    assert lines[2] == "  forward    1,000 FLOPs (1 kFLOPs), 25 % of the total"
    assert lines[3] == "  backward   2,000 FLOPs (2 kFLOPs), 50 % of the total"
    assert lines[5] == "  recompute  0 FLOPs (0 FLOPs), 0 % of the total"


def test_hardware_lines_in_percent_and_flop_per_second() -> None:
    report = benchmark_report()
    report["context"]["hardware"] = {"name": "stated", "peak_flops_per_second": 1e11}
    unit, scope = "ratio", "warmed_block_average"
    report["totals"]["achieved_flops_per_second"] = m("complete", 1.98953e10, "FLOPs/s", "x", scope)
    report["totals"]["model_flops_utilization"] = m("complete", 0.198953, unit, "x", scope)
    report["totals"]["hardware_flops_utilization"] = m("complete", 0.0000123, unit, "x", scope)
    text = "\n".join(hardware_lines(report))
    assert "MFU          19.9 % of the stated peak" in text
    assert "HFU          0.00123 % of the stated peak" in text
    assert not E_NOTATION.search(text)


def test_diagnostic_lines_name_their_metric() -> None:
    from torchscan.cli.format import diagnostics_lines

    entry = {"code": "uncounted_operator", "metric": "flops", "operator": "aten.foo", "message": "no formula"}
    assert diagnostics_lines([entry]) == ["  uncounted_operator (flops) [aten.foo]: no formula"]


def test_flop_report_ends_with_the_method_note() -> None:
    from torchscan.cli.format import flop_report

    method = "torchscan_flops_v1"
    total = metric_result("complete", 3_000, unit="FLOPs", scope="workload", method=method)
    report = {
        "context": {
            "method": method,
            "counting_convention": "torchscan_flops_v1",
            "torch_version": "2.15.0",
            "flop_counter_operators": ["aten.mm"],
        },
        "total": total,
        "by_operator": {"aten.mm": 2_000, "aten.gelu": 1_000},
    }
    text = flop_report(report, "flops of net")
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Operator FLOPs use"))
    note = " ".join(line.strip() for line in lines[start:-2])
    assert all(len(line) <= 100 for line in lines[start:-2]) and lines[-2] == ""
    # the note is worded once for pages and terminal alike, in the page style (views-3.md 5)
    assert note == (
        "Operator FLOPs use torchscan_flops_v1: 2.000 kFLOPs are in operators that FlopCounterMode "
        "(torch 2.15.0) also has formulas for; FlopCounterMode alone scores 0 for aten.gelu 1.000 kFLOPs "
        "(1.000 kFLOPs in all)."
    )
    assert text.splitlines()[-1].startswith("status: complete")
