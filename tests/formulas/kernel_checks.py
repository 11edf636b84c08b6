"""Shared helpers of the families.md §2 kernel tests: one workload measured under every grad mode."""

from __future__ import annotations

from collections.abc import Callable

import torch

from torchscan.measure.flops import measure_flops

GRAD_MODES = (torch.enable_grad, torch.no_grad, torch.inference_mode)
# families.md 1: PyTorch may pick another product kernel for the same math inside aten.matmul's
# composite when autograd is bypassed (docs/operator-flops.md lists the cases); nothing else may move
PRODUCT_KERNELS = frozenset({"aten.mm", "aten.bmm"})


def _up_to_product_kernel(by_operator: dict[str, int]) -> dict[str, int]:
    """``by_operator`` with ``aten.mm`` and ``aten.bmm`` summed under one key."""
    merged = {name: value for name, value in by_operator.items() if name not in PRODUCT_KERNELS}
    products = [value for name, value in by_operator.items() if name in PRODUCT_KERNELS]
    if products:
        merged["aten.mm|aten.bmm"] = sum(products)
    return merged


def measured(workload: Callable[[], object]) -> dict:
    """The ``measure_flops`` report of ``workload``, checked identical under every grad mode.

    Value, status, ``by_operator`` and diagnostics must not depend on the grad mode: the kernels of
    families.md §2 are reached directly or through a composite PyTorch decomposes identically. The one
    documented exception: a product counted as ``aten.mm`` in one mode may be ``aten.bmm`` in another.
    """
    reports = []
    for mode in GRAD_MODES:
        with mode():
            reports.append(measure_flops(workload))
    first = reports[0]
    for other in reports[1:]:
        assert other["total"] == first["total"]
        assert _up_to_product_kernel(other["by_operator"]) == _up_to_product_kernel(first["by_operator"])
        assert other["diagnostics"] == first["diagnostics"]
    return first


def complete(workload: Callable[[], object]) -> tuple[int, dict[str, int]]:
    """``(value, by_operator)`` of a workload that must be complete under every grad mode."""
    report = measured(workload)
    assert report["total"]["status"] == "complete", report["diagnostics"]
    assert report["diagnostics"] == []
    return report["total"]["value"], report["by_operator"]


def unsupported(workload: Callable[[], object], operator: str) -> str:
    """The message of the one ``unsupported_operator_formula`` diagnostic (partial, never a zero)."""
    report = measured(workload)
    assert report["total"]["status"] == "partial"
    [entry] = report["diagnostics"]
    assert entry["code"] == "unsupported_operator_formula" and entry["operator"] == operator
    return entry["message"]
