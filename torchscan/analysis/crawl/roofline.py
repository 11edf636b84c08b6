"""Arithmetic intensity and roofline time of an analysis, under the caller's stated facts.

training-and-hardware.md 3. For each full-mode layer that carries ``module_flops`` and ``dmas``, and
for the totals: bytes = DMAs × the element size of the call's floating dtype,
``arithmetic_intensity`` = module FLOPs ÷ bytes (``FLOPs/byte``) and ``roofline_seconds`` =
max(FLOPs ÷ peak, bytes ÷ bandwidth) (``seconds``, method ``roofline_model``).

What these numbers do NOT mean: they are a model, never a measurement. DMAs are the logical element
reads and writes of the staged dense algorithm of formulas.md, not hardware traffic: a convolution
reads each input element once per output channel and kernel tap, where real kernels reuse it from
caches. Roofline time is therefore a lower bound only for that algorithm under the stated peak and
bandwidth; measured convolutions usually run faster than it, and any call can run slower.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

import torch

from torchscan.report.diagnostics import deduplicate, diagnostic
from torchscan.report.hardware import ROOFLINE_METHOD, Labels
from torchscan.report.schema import (
    AnalysisReport,
    Diagnostic,
    HardwareFacts,
    LayerReport,
    MetricResult,
    Status,
)

INTENSITY_METHOD = "module_flops_over_dma_bytes"


@cache
def floating_element_size(dtype_name: str) -> int | None:
    """Bytes per element of a floating dtype named as in reports (``"torch.float16"`` -> 2), else None."""
    dtype = getattr(torch, dtype_name.removeprefix("torch."), None)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        return None
    return dtype.itemsize


def _tensor_dtypes(meta: Any) -> Iterator[str]:
    """Dtype names of every tensor in one value-metadata tree (analysis.md 5.4), in order.

    The tree holds tensors (``kind`` tensor or nested_tensor), tuples and lists (``items``),
    mappings (``items`` of ``{"value": ...}`` entries) and leaves without tensors.
    """
    if not isinstance(meta, Mapping):
        return
    if meta.get("kind") in ("tensor", "nested_tensor") and isinstance(meta.get("dtype"), str):
        yield meta["dtype"]
    for item in meta.get("items", ()) if isinstance(meta.get("items"), list) else ():
        yield from _tensor_dtypes(item.get("value") if meta.get("kind") == "mapping" else item)


def _call_dtypes(call: Mapping[str, Any]) -> Iterator[str]:
    """Tensor dtypes of a call's arguments (a CallIO): positional first, then keyword."""
    for meta in call.get("args", ()):
        yield from _tensor_dtypes(meta)
    for meta in call.get("kwargs", {}).values():
        yield from _tensor_dtypes(meta)


def call_element_size(layer: LayerReport) -> int | None:
    """Element size of the call's floating dtype: its first floating input tensor, else its output's.

    An embedding reads integer indices and writes floats: the output decides there. ``None`` when
    no tensor of the call is floating (bytes are then unknown, not zero).
    """
    for name in (*_call_dtypes(layer["input"]), *_tensor_dtypes(layer["output"])):
        size = floating_element_size(name)
        if size is not None:
            return size
    return None


def to_bytes(dmas: MetricResult | None, size: int | None, scope: str) -> MetricResult:
    """DMAs × element size, with the DMAs' status; unavailable without either."""
    labels = Labels("bytes", scope, INTENSITY_METHOD)
    if dmas is None or size is None or dmas["known_value"] is None:
        return labels("unavailable")
    return labels(dmas["status"], dmas["known_value"] * size)


def arithmetic_intensity(
    flops: MetricResult | None, moved: MetricResult, scope: str, method: str = INTENSITY_METHOD
) -> MetricResult:
    """FLOPs ÷ bytes (``FLOPs/byte``): module FLOPs over DMA bytes unless ``method`` says otherwise.

    ``measure_generation`` passes operator FLOPs over operator bytes with its own method label.

    Partial FLOPs over complete bytes is a lower bound (``partial``). Partial bytes would make the
    ratio an upper bound, and zero bytes leave it undefined: both are ``unavailable``.
    """
    labels = Labels("FLOPs/byte", scope, method)
    if flops is None or flops["known_value"] is None or moved["status"] != "complete" or not moved["value"]:
        return labels("unavailable")
    return labels(flops["status"], flops["known_value"] / moved["value"])


def roofline_seconds(
    flops: MetricResult | None, moved: MetricResult, peak: float, bandwidth: float | None, scope: str
) -> MetricResult:
    """max(FLOPs ÷ peak, bytes ÷ bandwidth) in seconds: the DMA convention's algorithm, stated facts.

    Both terms grow with their inputs, so a partial input gives a partial (lower-bound) result; an
    unavailable input, or no stated bandwidth, gives ``unavailable``.
    """
    labels = Labels("seconds", scope, ROOFLINE_METHOD)
    if bandwidth is None or flops is None or flops["known_value"] is None or moved["known_value"] is None:
        return labels("unavailable")
    value = roofline_time(flops["known_value"], moved["known_value"], peak, bandwidth)
    if value is None:
        return labels("unavailable")  # beyond the float range: add_roofline says so in a diagnostic
    status: Status = "complete" if flops["status"] == moved["status"] == "complete" else "partial"
    return labels(status, value)


def roofline_time(flops: float, moved: float, peak: float, bandwidth: float) -> float | None:
    """max(flops ÷ peak, bytes ÷ bandwidth), or ``None`` when it exceeds the float range.

    Any finite rate > 0 is a valid stated fact, so a tiny one (``5e-324`` bytes/s) can make the time
    of a few bytes overflow to infinity; that time is then unknown, never infinite nor an error.
    """
    try:
        value = max(flops / peak, moved / bandwidth)
    except OverflowError:  # an int numerator too large for a float division
        return None
    return value if math.isfinite(value) else None


def _sum_bytes(parts: list[MetricResult]) -> MetricResult:
    """Bytes over every row with DMAs: complete only when every row's bytes are complete."""
    labels = Labels("bytes", "forward", INTENSITY_METHOD)
    known = [part["known_value"] for part in parts if part["known_value"] is not None]
    if not known:
        return labels("unavailable")
    complete = all(part["status"] == "complete" for part in parts)
    return labels("complete" if complete else "partial", sum(known))


def add_roofline(report: AnalysisReport, hardware: HardwareFacts) -> None:
    """Add the two figures to every full-mode layer with module FLOPs and to the totals, in place.

    Also copies the stated facts into ``context.hardware``. A layer with DMAs but no floating
    tensor gets an ``unsupported_module_metric`` diagnostic: its bytes are unknown, not zero.
    """
    report["context"]["hardware"] = hardware
    if report["context"].get("analysis_mode") == "structure":
        return  # structure mode computes no module formulas (analysis.md 4): nothing to divide
    peak, bandwidth = hardware["peak_flops_per_second"], hardware.get("memory_bandwidth_bytes_per_second")
    parts: list[MetricResult] = []
    notes: list[Diagnostic] = []
    overflows: list[Diagnostic] = []  # one per path: repeated calls of one module fold together
    for layer in report["layers"]:
        metrics = layer["metrics"]
        if "module_flops" not in metrics:
            continue  # containers and covered calls carry no module FLOPs of their own
        size = call_element_size(layer)
        if size is None and "dmas" in metrics:
            notes.append(
                diagnostic(
                    "unsupported_module_metric",
                    "no floating-point tensor in the call: bytes (DMAs x element size) are unknown",
                    metric="arithmetic_intensity",
                    path=layer["path"],
                )
            )
        moved = to_bytes(metrics.get("dmas"), size, "module_call")
        if "dmas" in metrics:
            parts.append(moved)
        metrics["arithmetic_intensity"] = arithmetic_intensity(metrics["module_flops"], moved, "module_call")
        metrics["roofline_seconds"] = roofline_seconds(
            metrics["module_flops"], moved, peak, bandwidth, "module_call"
        )
        if _overflowed(metrics["module_flops"], moved, metrics["roofline_seconds"], bandwidth):
            overflows.append(_out_of_range(layer["path"]))
    totals = report["totals"]
    moved = _sum_bytes(parts)
    totals["arithmetic_intensity"] = arithmetic_intensity(totals.get("module_flops"), moved, "forward")
    totals["roofline_seconds"] = roofline_seconds(
        totals.get("module_flops"), moved, peak, bandwidth, "forward"
    )
    if _overflowed(totals.get("module_flops"), moved, totals["roofline_seconds"], bandwidth):
        overflows.append(_out_of_range(None))
    report["diagnostics"].extend(notes + deduplicate(overflows))


def _overflowed(
    flops: MetricResult | None, moved: MetricResult, result: MetricResult, bandwidth: float | None
) -> bool:
    """Whether ``result`` is unavailable only because the time left the float range."""
    known = flops is not None and flops["known_value"] is not None and moved["known_value"] is not None
    return known and bandwidth is not None and result["status"] == "unavailable"


def _out_of_range(path: str | None) -> Diagnostic:
    return diagnostic(
        "roofline_out_of_range",
        "the roofline time under the stated peak and bandwidth exceeds the float range "
        "(a stated rate is extremely small): it is unavailable, not infinite",
        metric="roofline_seconds",
        path=path,
    )
