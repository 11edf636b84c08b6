"""What the operator-FLOPs method label means, for people cross-checking (issue 23 item 7).

Operator FLOPs carry ``method: torch.utils.flop_counter.FlopCounterMode`` — the contract: they are
counted under PyTorch's dispatch, with FlopCounterMode's formulas where it has one. The counting
convention ``torchscan_flops_v1`` adds formulas for operators FlopCounterMode alone scores 0 (the
CPU attention kernel, layer norm, pointwise and reductions, grouped expert products, optimizer
kernels...), so the total is often larger than FlopCounterMode's own (issue 23: 1.09× on Llama,
5.2× on Mixtral, whose experts run as ``aten._grouped_mm``). This
module splits a report's ``by_operator`` into the two parts and words the note that the table
footer, the explorer card and docs/operator-flops.md show. A view: it never imports torch, so the
operators FlopCounterMode has formulas for are a fixed list, checked against PyTorch by a test.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from torchscan.views.text import fixed, human

FLOP_COUNTER_METHOD = "torch.utils.flop_counter.FlopCounterMode"

# ``torch.utils.flop_counter.flop_registry`` of torch 2.14 (2.13 registers a subset), as the packet
# names ``by_operator`` uses. An operator outside this set scores 0 under FlopCounterMode alone.
FLOP_COUNTER_OPERATORS = frozenset(
    {
        "aten._convolution",
        "aten._efficient_attention_backward",
        "aten._efficient_attention_forward",
        "aten._flash_attention_backward",
        "aten._flash_attention_forward",
        "aten._scaled_dot_product_cudnn_attention",
        "aten._scaled_dot_product_cudnn_attention_backward",
        "aten._scaled_dot_product_efficient_attention",
        "aten._scaled_dot_product_efficient_attention_backward",
        "aten._scaled_dot_product_flash_attention",
        "aten._scaled_dot_product_flash_attention_backward",
        "aten._scaled_mm",
        "aten._slow_conv2d_forward",
        "aten.addmm",
        "aten.baddbmm",
        "aten.bmm",
        "aten.convolution",
        "aten.convolution_backward",
        "aten.convolution_overrideable",
        "aten.cudnn_convolution",
        "aten.mm",
        "flex_attention",
        "flex_attention_backward",
    }
)

CONVENTION_TEXT = (
    "Operator FLOPs: method torch.utils.flop_counter.FlopCounterMode = counted under PyTorch's "
    "dispatch with FlopCounterMode's formulas where it has one; the convention torchscan_flops_v1 "
    "adds formulas for operators FlopCounterMode alone scores 0, so its own total can be lower."
)


class MethodSplit(TypedDict):
    """``by_operator`` split by who has the formula; the two parts sum to the operator total."""

    flop_counter_flops: int
    added_flops: int
    added_operators: list[tuple[str, int]]  # (operator, FLOPs), largest first, positive only


def method_split(flop_report: Mapping[str, Any]) -> MethodSplit:
    """Split a FlopReport's ``by_operator`` (an AnalysisReport's ``operator_flops``) in two.

    ``flop_counter_flops`` is what FlopCounterMode alone would count for the same operators;
    ``added_flops`` what ``torchscan_flops_v1`` (or a caller's ``custom_mapping``) adds on top.
    """
    native = added = 0
    operators: list[tuple[str, int]] = []
    for name, flops in flop_report.get("by_operator", {}).items():
        if name in FLOP_COUNTER_OPERATORS:
            native += flops
        elif flops > 0:
            added += flops
            operators.append((name, flops))
    operators.sort(key=lambda item: (-item[1], item[0]))
    return {"flop_counter_flops": native, "added_flops": added, "added_operators": operators}


def _short(value: float) -> str:
    return human(value, "FLOPs")


def method_note(report: Mapping[str, Any], limit: int = 3) -> str | None:
    """One sentence on how the report's operator FLOPs relate to FlopCounterMode alone, or ``None``.

    ``report`` is an AnalysisReport (its ``operator_flops``) or a FlopReport. ``None`` when operator
    FLOPs were not counted with this method; when nothing was added the note says both agree.
    ``limit`` operators scored 0 by FlopCounterMode alone are named, largest first.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValueError(f"limit must be a non-negative int, got {limit!r}")
    flop_report = report.get("operator_flops", report)
    if not isinstance(flop_report, Mapping) or "by_operator" not in flop_report:
        return None
    total = flop_report.get("total") or {}
    if total.get("method") != FLOP_COUNTER_METHOD:
        return None
    split = method_split(flop_report)
    convention = flop_report.get("context", {}).get("counting_convention", "torchscan_flops_v1")
    if not split["added_flops"]:
        return (
            f"Operator FLOPs ({convention} on FlopCounterMode's dispatch) equal what FlopCounterMode "
            "alone counts here: every counted operator has a FlopCounterMode formula."
        )
    native = split["flop_counter_flops"]
    names = ", ".join(f"{name} {_short(flops)}" for name, flops in split["added_operators"][:limit])
    more = len(split["added_operators"]) - limit
    if more > 0:
        names = f"{names}, +{more} more" if names else f"{more} operator(s)"
    if native:
        ratio = fixed((native + split["added_flops"]) / native, 3)
        alone = f"{ratio}× what FlopCounterMode alone reports ({_short(native)})"
    else:
        alone = "FlopCounterMode alone reports 0 here"
    return (
        f"Operator FLOPs use {convention} on top of FlopCounterMode's dispatch: {alone}; FlopCounterMode "
        f"alone scores 0 for {names} ({_short(split['added_flops'])} in all)."
    )
