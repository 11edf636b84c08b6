"""Helpers shared by the module formulas: first-tensor walk, dense-real check, per-axis parameters.

Everything here reads metadata only (shape, dtype, layout), never values, so it is safe on meta tensors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from torchscan.formulas.registry import UnsupportedConfiguration

_STRIDED = torch.strided
# For ``isinstance`` on per-operator paths: ``list | tuple`` builds a union object at every evaluation.
SEQUENCES = (list, tuple)
DENSE_REASON = "Module formulas require real, dense, strided tensors."


def first_tensor(obj: Any) -> Tensor | None:
    """First tensor of ``obj`` in a depth-first walk of tuples, lists and mapping values, else ``None``.

    Mapping values are visited in iteration (insertion) order, so the walk is deterministic.
    """
    if isinstance(obj, Tensor):
        return obj
    if isinstance(obj, tuple | list):
        items: Any = obj
    elif isinstance(obj, Mapping):
        items = obj.values()
    else:
        return None
    for item in items:
        found = first_tensor(item)
        if found is not None:
            return found
    return None


def call_tensors(inputs: Any, output: Any) -> tuple[Tensor, Tensor]:
    """First input tensor and first output tensor of one call; ``ValueError`` when either is missing."""
    inp = first_tensor(inputs)
    out = first_tensor(output)
    if inp is None or out is None:
        raise ValueError("Module formulas need an input tensor and an output tensor.")
    return inp, out


def is_dense_real(tensor: Tensor) -> bool:
    """True for a strided, non-nested, non-complex tensor (meta tensors included)."""
    return tensor.layout is _STRIDED and not tensor.is_nested and not tensor.is_complex()


def require_dense(inp: Tensor, out: Tensor, reason: str = DENSE_REASON) -> None:
    """Raise :class:`UnsupportedConfiguration` with ``reason`` unless both tensors are dense and real."""
    if not (is_dense_real(inp) and is_dense_real(out)):
        raise UnsupportedConfiguration(reason)


def untouched(inp: Tensor, out: Tensor) -> bool:
    """True when the call reads and writes no element: every count of the call is 0 (A.4 rule 6).

    A formula's constant terms (parameters, epsilon, momentum) are only read when there is
    something to normalize or produce; a call with an empty input but a nonempty output
    (``Linear(0, 5)`` adds its bias) is not untouched.
    """
    return inp.numel() == 0 and out.numel() == 0


def own_tensor(module: Any, name: str) -> Any:
    """``getattr(module, name, None)`` for a parameter or buffer, read straight from the module's
    parameter and buffer tables (``nn.Module.__getattr__`` is slow and formulas run on every call);
    anything else (a parametrization property, a plain attribute) falls back to ``getattr``."""
    tables = module.__dict__
    for table in (tables.get("_parameters"), tables.get("_buffers")):
        if table is not None and name in table:
            return table[name]
    return getattr(module, name, None)


def param_count(module: Any) -> int:
    """Elements of the module's ``weight`` and ``bias`` that are present (``P`` of formulas.md)."""
    weight, bias = own_tensor(module, "weight"), own_tensor(module, "bias")
    return (0 if weight is None else weight.numel()) + (0 if bias is None else bias.numel())


def first_axis(value: int | Sequence[int]) -> int:
    """The first spatial axis of a per-axis module parameter (an int applies to every axis)."""
    return value if isinstance(value, int) else value[0]
