"""Hand-written MemoryReports that follow torchscan/report/memory_schema.py exactly (no torch).

The MLP figures mirror memory.md 4's example, Linear(16,32)-ReLU-Linear(32,8), float32, batch 4:
parameters (16*32+32 + 32*8+8) * 4 = 3,232 bytes; at the peak (in the optimizer step, before any
zero_grad) gradients are 3,232 bytes too and AdamW's exp_avg + exp_avg_sq another 6,464 bytes plus
four 4-byte ``step`` tensors (6,480); the input 4*16*4 = 256 bytes.
"""

from __future__ import annotations

import copy
from typing import Any

from torchscan.report.memory_schema import CATEGORIES, METHOD, PHASES
from torchscan.report.schema import metric_result


def bytes_result(value: int | None, scope: str, status: str = "complete") -> dict[str, Any]:
    """A ledger MetricResult in bytes (``value`` is the lower bound when partial)."""
    if status == "partial":
        return dict(metric_result("partial", known_value=value, unit="bytes", scope=scope, method=METHOD))
    if status == "unavailable":
        return dict(metric_result("unavailable", unit="bytes", scope=scope, method=METHOD))
    return dict(metric_result("complete", value, unit="bytes", scope=scope, method=METHOD))


AT_PEAK = {
    "parameters": 3232,
    "buffers": 0,
    "gradients": 3232,
    "optimizer_state": 6480,
    "activations": 0,
    "temporaries": 512,
    "inputs": 256,
}
PEAK = sum(AT_PEAK.values())  # 13,712
BASELINE = 3232 + 256


def _point(event: int, phase: str | None, **values: int) -> dict[str, Any]:
    by_category = {name: 0 for name in CATEGORIES}
    by_category.update(parameters=3232, inputs=256)
    by_category.update(values)
    return {"event": event, "phase": phase, "by_category": by_category}


def timeline() -> list[dict[str, Any]]:
    """Eight points: forward builds activations, backward frees them into gradients, then the step."""
    return [
        _point(0, None),
        _point(1, "forward", activations=512, temporaries=128),
        _point(2, "forward", activations=1152, temporaries=128),
        _point(3, "backward", activations=1152, gradients=1056, temporaries=512),
        _point(4, "backward", gradients=3232, temporaries=256),
        _point(5, "optimizer", gradients=3232, optimizer_state=3240, temporaries=512),
        _point(6, "optimizer", gradients=3232, optimizer_state=6480, temporaries=512),
        _point(7, None, gradients=3232, optimizer_state=6480),
    ]


def module_call(
    path: str, index: int, kind: str, saved: int | None, status: str = "complete"
) -> dict[str, Any]:
    """One ``by_module`` entry; ``allocated`` and ``peak_inside`` derived from ``saved`` for brevity."""
    known = saved or 0
    return {
        "path": path,
        "call_index": index,
        "module_type": kind,
        "activations_saved": bytes_result(saved, "module_call", status),
        "allocated": bytes_result(known + 128, "module_call"),
        "peak_inside": bytes_result(BASELINE + known + 128, "module_call"),
    }


def memory_report() -> dict[str, Any]:
    """A complete, valid MemoryReport of one MLP training step."""
    by_phase = {name: bytes_result(None, "workload_phase", "unavailable") for name in PHASES}
    by_phase.update(
        forward=bytes_result(BASELINE + 1152 + 128, "workload_phase"),
        backward=bytes_result(BASELINE + 1152 + 1056 + 512, "workload_phase"),
        optimizer=bytes_result(PEAK, "workload_phase"),
    )
    return {
        "schema_version": 1,
        "report_type": "memory",
        "context": {
            "torch_version": "2.14.1",
            "device": "cpu",
            "ledger_device": "cpu",
            "dtypes": ["float32"],
            "method": METHOD,
        },
        "peak": bytes_result(PEAK, "workload"),
        "baseline": bytes_result(BASELINE, "workload_start"),
        "at_peak": {
            "by_category": {name: bytes_result(value, "at_peak") for name, value in AT_PEAK.items()},
            "phase": "optimizer",
            "module": None,
        },
        "by_phase": by_phase,
        "by_module": [
            module_call("", 0, "torch.nn.modules.container.Sequential", 1152),
            module_call("0", 0, "torch.nn.modules.linear.Linear", 256),
            module_call("1", 0, "torch.nn.modules.activation.ReLU", 512),
            module_call("2", 0, "torch.nn.modules.linear.Linear", 384),
        ],
        "timeline": timeline(),
        "timeline_events": 41,
        "allocator": {},
        "diagnostics": [],
    }


def variant(report: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A deep copy of ``report`` with top-level keys replaced."""
    out = copy.deepcopy(report)
    out.update(changes)
    return out
