"""A hand-written ScalingReport (no torch): four sequence lengths, one failed point, hand-known counts."""

from __future__ import annotations

from typing import Any

from torchscan.measure.scaling_report import build_fits, grid
from torchscan.report.metric import metric_result

SEQ = [16, 32, 64, 128, 256]
# Hand-chosen counts: aten.bmm grows as 256·n², aten.addmm as 1,000·n; CausalSelfAttention holds the
# bmm and 100·n of the addmm, MLP the other 900·n.
BMM, ADDMM = (lambda n: 256 * n * n), (lambda n: 1000 * n)


def _flops(status: str, value: int | None) -> Any:
    known = {"complete": value, "partial": value, "unavailable": None}[status]
    method = "example_operator_method" if status != "unavailable" else "unavailable"
    if status == "partial":
        return metric_result("partial", known_value=known, unit="FLOPs", scope="workload", method=method)
    return metric_result(status, known, unit="FLOPs", scope="workload", method=method)  # type: ignore[arg-type]


def scaling_report(
    *, partial_at: int | None = None, failed_at: int | None = 2, latency: bool = False, axes: Any = None
) -> dict[str, Any]:
    """The report ``measure_scaling`` would build for those counts (fits from the pure builder)."""
    axes = axes or {"seq": SEQ}
    metrics = ["flops", "latency"] if latency else ["flops"]
    points: list[dict[str, Any]] = []
    for index, sizes in enumerate(grid(axes)):
        n = sizes["seq"] * sizes.get("batch", 1)
        point: dict[str, Any] = {"index": index, "sizes": sizes}
        if index == failed_at:
            point["flops"] = _flops("unavailable", None)
            point["by_operator"] = {"flops": {}}
            point["by_module_type"] = {"flops": {}}
            point["errors"] = {"flops": "RuntimeError"}
        else:
            status = "partial" if index == partial_at else "complete"
            point["flops"] = _flops(status, BMM(n) + ADDMM(n))
            point["by_operator"] = {"flops": {"aten.bmm": BMM(n), "aten.addmm": ADDMM(n)}}
            point["by_module_type"] = {
                "flops": {
                    "CausalSelfAttention": BMM(n) + 100 * n,
                    "MLP": 900 * n,
                    "TinyGPT": BMM(n) + ADDMM(n),
                }
            }
        if latency:
            seconds = 1e-3 + 1e-7 * n * n + (1e-5 if index % 2 else 0.0)  # a little noise
            point["latency"] = metric_result(
                "complete",
                seconds,
                unit="seconds",
                scope="warmed_block_average",
                method="torch.utils.benchmark.Timer",
            )
            point["latency_iqr"] = metric_result(
                "complete",
                1e-5,
                unit="seconds",
                scope="warmed_block_average",
                method="torch.utils.benchmark.Timer",
            )
        points.append(point)
    fits, notes = build_fits(axes, points, metrics)  # type: ignore[arg-type]
    return {
        "schema_version": 1,
        "report_type": "scaling",
        "context": {
            "torchscan_version": "0.0.test",
            "torch_version": "2.14.1",
            "python_version": "3.11.7",
            "device": None,
            "metrics": metrics,
            "workload": "module",
            "model_type": "TinyGPT",
        },
        "axes": {name: list(values) for name, values in axes.items()},
        "points": points,
        "fits": fits,
        "diagnostics": notes,
    }
