"""Hand-written GenerationReports built from by_step lists that follow the wire schema exactly."""

from __future__ import annotations

import copy
from typing import Any

from torchscan.measure.generation import build_report
from torchscan.report.schema import (
    ATTENTION_KV_METHOD,
    OPERATOR_BYTES_METHOD,
    OPERATOR_METHOD,
    metric_result,
)

HARDWARE = {"name": "example", "peak_flops_per_second": 1e12, "memory_bandwidth_bytes_per_second": 1e11}


def _flops(value: int | None, scope: str, status: str = "complete") -> dict[str, Any]:
    return metric_result(status, value, unit="FLOPs", scope=scope, method=OPERATOR_METHOD)  # type: ignore[return-value, arg-type]


def _bytes(value: int | None, scope: str, method: str = OPERATOR_BYTES_METHOD) -> dict[str, Any]:
    status = "unavailable" if value is None else "complete"
    return metric_result(status, value, unit="bytes", scope=scope, method=method)  # type: ignore[return-value, arg-type]


# (input_tokens, flops, operator bytes, attention K/V bytes): a prefill of 4 tokens, two decode steps
STEPS = [(4, 1000, 800, 256), (1, 110, 500, 320), (1, 120, 520, 384)]
OUTSIDE = (10, 40)  # flops, bytes; outside steps there is no attention: K/V bytes unavailable


def flop_report(steps: list[tuple[int | None, int, int, int | None]] = STEPS) -> dict[str, Any]:
    """A FlopReport with by_step/outside_steps whose sums are exact (schema of generation.md 1)."""
    total = sum(step[1] for step in steps) + OUTSIDE[0]
    moved = sum(step[2] for step in steps) + OUTSIDE[1]
    zero = _flops(0, "workload_phase")
    return {
        "schema_version": 1,
        "context": {
            "torch_version": "2.13.0",
            "method": OPERATOR_METHOD,
            "counting_convention": "torchscan_flops_v1",
        },
        "total": _flops(total, "workload"),
        "by_phase": {
            "forward": _flops(total, "workload_phase"),
            "backward": zero,
            "optimizer": zero,
            "recompute": zero,
        },
        "by_module": {},
        "by_operator": {"aten.mm": total},
        "ignored_operators": {},
        "diagnostics": [
            {
                "code": "attention_not_fused",
                "severity": "warning",
                "metric": "attention_kv_bytes",
                "message": "The work outside steps ran no fused attention kernel.",
            }
        ],
        "operator_bytes": _bytes(moved, "workload"),
        "by_step": [
            {
                "index": index,
                "flops": _flops(flops, "step"),
                "operator_bytes": _bytes(moved_bytes, "step"),
                "attention_kv_bytes": _bytes(kv, "step", ATTENTION_KV_METHOD),
                "input_tokens": tokens,
            }
            for index, (tokens, flops, moved_bytes, kv) in enumerate(steps)
        ],
        "outside_steps": {
            "flops": _flops(OUTSIDE[0], "outside_steps"),
            "operator_bytes": _bytes(OUTSIDE[1], "outside_steps"),
            "attention_kv_bytes": _bytes(None, "outside_steps", ATTENTION_KV_METHOD),
        },
    }


def context(model_type: str = "TinyLM") -> dict[str, Any]:
    return {
        "torchscan_version": "0.0.test",
        "torch_version": "2.13.0",
        "model_type": model_type,
        "dtypes": ["torch.float32"],
        "device": "cpu",
        "batch_size": 1,
        "prompt_tokens": 4,
        "max_new_tokens": 3,
        "use_cache": True,
        "do_sample": False,
        "cache_class": "DynamicCache",
        "attention_implementation": "sdpa",
    }


def generation_report(hardware: bool = True, **context_changes: Any) -> dict[str, Any]:
    """The hand-written report, optionally with the example hardware facts."""
    report = build_report(
        flop_report(),
        {**context(), **context_changes},
        dict(HARDWARE) if hardware else None,  # type: ignore[arg-type]
    )
    return copy.deepcopy(dict(report))
