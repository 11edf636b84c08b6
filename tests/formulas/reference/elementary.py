"""Counting a re-implementation written with element-wise operators and sums (reference type (a)).

The harness's :class:`~reference.harness.TrivialCounter` records output elements per operator; a
re-implementation that reduces also needs the reduction's input size. :class:`ElementaryCounter`
applies the per-element convention of formulas.md A.4 to the operators a re-implementation may use —
one FLOP per output element of an add, subtract, multiply, divide, comparison, selection, ``exp``,
``log``, ``sqrt``, ``rsqrt``, ``abs``, … and ``k − 1`` adds (or comparisons) per reduction of ``k``
values — and fails on any other operator, so that no re-implementation hides work inside a fused
kernel. Views, copies, creation and indexing are free. Nothing here reads a TorchScan formula.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode

ONE_PER_OUTPUT = frozenset(
    (
        "add", "sub", "rsub", "mul", "div", "neg", "reciprocal", "sqrt", "rsqrt", "exp", "log", "abs",
        "sign", "sgn", "maximum", "minimum", "clamp_min", "clamp_max", "where", "gt", "lt", "ge", "le", "eq",
        "ne", "pow", "floor", "ceil", "trunc", "round", "erf", "log1p", "expm1",
    )
)  # fmt: skip
"""One FLOP per output element (formulas.md A.4.3; ``pow`` as real-models.md 2.2)."""

SCATTER_ADDS = frozenset(("index_add",))
"""One add per ``source`` element (argument 3) scattered into the destination."""

REDUCTIONS = frozenset(("sum", "amax", "amin"))
"""``in − out``: ``k − 1`` adds or comparisons per reduced row of ``k`` values (0 when empty)."""

PRODUCTS = frozenset(("mm", "bmm"))
"""Matrix products at ``2·MACs`` (the harness's and formulas.md's product convention), real operands."""

FREE = frozenset(
    (
        "view", "_unsafe_view", "reshape", "expand", "unsqueeze", "squeeze", "permute", "transpose", "t",
        "detach", "alias", "clone", "copy_", "_to_copy", "contiguous", "lift_fresh", "lift_fresh_copy",
        "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full",
        "full_like", "new_zeros", "new_ones", "new_full", "new_empty", "scalar_tensor", "fill_", "zero_",
        "arange", "select", "slice", "index", "index_select", "gather", "cat", "stack", "narrow", "split",
        "unbind", "as_strided", "_local_scalar_dense", "flip", "repeat", "constant_pad_nd", "scatter",
        "index_put", "diagonal",
    )
)  # fmt: skip
"""Views, copies, creation and indexing: data movement, 0 FLOPs."""


@dataclass
class ElementaryCounter(TorchDispatchMode):
    """FLOPs of a re-implementation under the per-element convention; ``by_operator`` for messages."""

    free_selection: bool = False
    """Selecting one of two computed branches (``where``) costs nothing: the convention of the backward
    and loss kernels (training-and-hardware.md 2, ``loss_ops``), which count the comparison only."""
    free: frozenset[str] = frozenset()
    """More operator names that cost nothing under a reference's stated convention (LAPACK Working
    Note 41 does not count sign flips: ``neg``, ``copysign``)."""
    flops: int = 0
    by_operator: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        super().__init__()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        base = name[:-1] if name.endswith("_") and name not in FREE else name  # in-place variants
        if base in FREE or base in self.free or (self.free_selection and base == "where"):
            return out
        result = out[0] if isinstance(out, tuple) else out
        if base in ONE_PER_OUTPUT:
            cost = result.numel()
        elif base in SCATTER_ADDS:
            cost = args[3].numel()
        elif base in REDUCTIONS:
            cost = max(math.prod(args[0].shape) - result.numel(), 0)  # an empty sum zero-fills
        elif base in PRODUCTS:
            cost = 2 * result.numel() * int(args[0].shape[-1])
        else:
            raise AssertionError(f"elementary reference used a non-elementary operator: {name}")
        self.flops += cost
        self.by_operator[base] += cost
        return out

    def __hash__(self) -> int:  # TorchDispatchMode instances are kept in sets by PyTorch
        return id(self)


def elementary_count(
    workload: Callable[[], object], free_selection: bool = False, free: frozenset[str] = frozenset()
) -> tuple[object, ElementaryCounter]:
    """Run ``workload`` once under a fresh :class:`ElementaryCounter`: ``(its result, the counter)``."""
    counter = ElementaryCounter(free_selection=free_selection, free=free)
    with counter:
        result = workload()
    return result, counter


def reduce_sum(tensor: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    """``sum`` keeping dims (an empty ``dims`` keeps the tensor: nothing to add)."""
    return tensor.sum(dim=dims, keepdim=True) if dims else tensor
