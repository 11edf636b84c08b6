"""How a report's operator FLOPs relate to FlopCounterMode alone, for people cross-checking.

Operator FLOPs carry ``method: torchscan_flops_v1`` (truth.md 4): TorchScan's own formulas, each
checked by its reference suite, count every operator they cover on every torch (torch-versions.md
1). PyTorch's ``FlopCounterMode`` has formulas for a small set of operators (matrix products,
convolutions, some fused attention kernels) and scores every other operator 0 — layer norm, pointwise
and reductions, grouped expert products, optimizer kernels, the CPU attention kernel on older torches
— so TorchScan's total is often larger (issue 23: 1.09× on Llama, 5.2× on Mixtral), and where its
formula is wrong (the weight gradient of a grouped convolution, counted once per group) TorchScan's
is lower.

Which operators the installed FlopCounterMode has formulas for is read from its registry when the
report is made (``context.flop_counter_operators``): this module, a view that never imports torch,
splits ``by_operator`` by that list and words the note the table footer, the explorer card and
docs/operator-flops.md show. A report without that list (made before it existed) gets no note.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from torchscan.report.schema import OPERATOR_METHOD
from torchscan.views.common.number_style import quantity

CONVENTION_TEXT = (
    "Operator FLOPs: method torchscan_flops_v1 = TorchScan's reference-checked formulas on every "
    "operator they cover, whatever the installed torch's FlopCounterMode registers; FlopCounterMode "
    "alone scores 0 for every operator it has no formula for, so its own total is usually lower."
)


class MethodSplit(TypedDict):
    """``by_operator`` split by whether FlopCounterMode has a formula; the parts sum to the total."""

    flop_counter_flops: int
    added_flops: int
    added_operators: list[tuple[str, int]]  # (operator, FLOPs), largest first, positive only


def method_split(flop_report: Mapping[str, Any]) -> MethodSplit:
    """Split a FlopReport's ``by_operator`` (an AnalysisReport's ``operator_flops``) in two.

    ``flop_counter_flops`` is what ``torchscan_flops_v1`` counts in operators the installed
    FlopCounterMode also has a formula for (``context.flop_counter_operators``; its formula may
    count them differently); ``added_flops`` is the rest, which FlopCounterMode alone scores 0.
    """
    covered = set(flop_report.get("context", {}).get("flop_counter_operators", ()))
    native = added = 0
    operators: list[tuple[str, int]] = []
    for name, flops in flop_report.get("by_operator", {}).items():
        if name in covered:
            native += flops
        elif flops > 0:
            added += flops
            operators.append((name, flops))
    operators.sort(key=lambda item: (-item[1], item[0]))
    return {"flop_counter_flops": native, "added_flops": added, "added_operators": operators}


def _short(value: float) -> str:
    return quantity(value, "FLOPs")


def method_note(report: Mapping[str, Any], limit: int = 3) -> str | None:
    """One sentence on how the report's operator FLOPs relate to FlopCounterMode alone, or ``None``.

    ``report`` is an AnalysisReport (its ``operator_flops``) or a FlopReport. ``None`` when operator
    FLOPs were not counted with this method or the report does not say which operators the installed
    FlopCounterMode covers. ``limit`` operators FlopCounterMode alone scores 0 are named, largest first.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValueError(f"limit must be a non-negative int, got {limit!r}")
    flop_report = report.get("operator_flops", report)
    if not isinstance(flop_report, Mapping) or "by_operator" not in flop_report:
        return None
    context = flop_report.get("context", {})
    total = flop_report.get("total") or {}
    if total.get("method") != OPERATOR_METHOD or "flop_counter_operators" not in context:
        return None
    torch_version = context.get("torch_version", "?")
    split = method_split(flop_report)
    if not split["added_flops"]:
        return (
            f"Operator FLOPs ({OPERATOR_METHOD}): FlopCounterMode (torch {torch_version}) also has a "
            "formula for every counted operator; TorchScan uses its own checked ones "
            "(docs/operator-coverage.md lists where they differ)."
        )
    names = ", ".join(f"{name} {_short(flops)}" for name, flops in split["added_operators"][:limit])
    more = len(split["added_operators"]) - limit
    if more > 0:
        names = f"{names}, +{more} more" if names else f"{more} operator(s)"
    native = split["flop_counter_flops"]
    covered = (
        f"{_short(native)} are in operators that FlopCounterMode (torch {torch_version}) also has "
        "formulas for"
        if native
        else f"no counted operator has a FlopCounterMode formula (torch {torch_version})"
    )
    return (
        f"Operator FLOPs use {OPERATOR_METHOD}: {covered}; FlopCounterMode alone scores 0 for "
        f"{names} ({_short(split['added_flops'])} in all)."
    )
