"""Hand-built FlopReport and ProfileReport dicts for the page tests (views-3.md 4); no torch.

They follow torchscan/report/schema.py exactly. The FlopReport's numbers are chosen so every share
is checkable by hand: operators 600 + 300 + 100 = 1,000 FLOPs (60.0 %, 30.0 %, 10.0 %), module
labels Net 1,000 (100.0 %) > Net.encoder 900 (90.0 %) > Net.encoder.0 600 (60.0 %), Net.head 100.
"""

from __future__ import annotations

from typing import Any

from torchscan.report.schema import OPERATOR_METHOD, metric_result


def flops(value: int | None, status: str = "complete", scope: str = "workload") -> dict[str, Any]:
    """An operator-FLOPs MetricResult (``value`` is the lower bound when partial)."""
    if status == "partial":
        return dict(
            metric_result("partial", known_value=value, unit="FLOPs", scope=scope, method=OPERATOR_METHOD)
        )
    if status == "unavailable":
        return dict(metric_result("unavailable", unit="FLOPs", scope=scope, method=OPERATOR_METHOD))
    return dict(metric_result("complete", value, unit="FLOPs", scope=scope, method=OPERATOR_METHOD))


def flop_report(status: str = "complete") -> dict[str, Any]:
    """A FlopReport of one forward: three operators, an inclusive module tree, an ignored view."""
    return {
        "schema_version": 1,
        "context": {
            "torch_version": "2.14.1",
            "method": OPERATOR_METHOD,
            "counting_convention": OPERATOR_METHOD,
            "attention": "mask-aware",
            "flop_counter_operators": ["aten.mm"],
        },
        "total": flops(1000, status),
        "by_phase": {
            "forward": flops(1000, status, "workload_phase"),
            "backward": flops(0, "complete", "workload_phase"),
            "optimizer": flops(0, "complete", "workload_phase"),
            "recompute": flops(0, "complete", "workload_phase"),
        },
        "by_module": {"Net": 1000, "Net.encoder": 900, "Net.encoder.0": 600, "Net.head": 100},
        "by_operator": {"aten.add": 100, "aten.mm": 600, "aten.relu": 300},
        "ignored_operators": {"aten.view": {"calls": 2, "reason": "Metadata-only tensor view."}},
        "diagnostics": [],
    }


def profile_row(operator: str, cpu: float, device: float | None = None, calls: int = 1, **extra: Any) -> dict:
    """One grouped profiler row (input shapes ``[[2, 3]]``, 64 net bytes unless given)."""
    return {
        "operator": operator,
        "calls": calls,
        "input_shapes": extra.get("input_shapes", [[2, 3]]),
        "cpu_self_seconds": cpu,
        "device_self_seconds": device,
        "cpu_net_bytes": extra.get("cpu_net_bytes", 64),
    }


def profile_report(device_time: bool = False) -> dict[str, Any]:
    """A ProfileReport: aten::addmm in two shape groups (20 µs + 10 µs), aten::relu 5 µs."""
    rows = [
        profile_row("aten::addmm", 20e-6, 40e-6 if device_time else None, input_shapes=[[8, 4], [4, 4]]),
        profile_row("aten::addmm", 10e-6, 30e-6 if device_time else None, calls=2, input_shapes=[[2, 4]]),
        profile_row("aten::relu", 5e-6, 1e-6 if device_time else None, cpu_net_bytes=-128),
    ]
    return {
        "schema_version": 1,
        "context": {
            "torch_version": "2.14.1",
            "device": "cuda:0" if device_time else "cpu",
            "method": "torch.profiler.profile",
            "operator_groups": 7,
            "limit": 3,
            "device_time_supported": device_time,
        },
        "operators": rows,
        "diagnostics": [],
    }
