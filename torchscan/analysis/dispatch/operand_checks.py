"""Cheap checks of an operator call's operands: layouts the shape formulas cannot describe, complex values.

The operator observer runs them for every counted call (``analysis/dispatch/observer.py``): a sparse or nested
operand makes the call unsupported, a complex one makes a native count partial. They read tensor
metadata only (layout, nestedness, dtype), never values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from torchscan.formulas.tensors import SEQUENCES as _SEQUENCES


def layout_unsupported(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> bool:
    """Whether any tensor argument is sparse, nested or otherwise not dense strided."""
    return any_unsupported_layout(args) or (bool(kwargs) and any_unsupported_layout(kwargs.values()))


def _tensor_items(value: list[Any] | tuple[Any, ...]) -> list[Any] | tuple[Any, ...]:
    """The items of an operator's list argument that may hold tensors (``()`` for ``int[]`` lists).

    Operator list arguments are homogeneous by schema (``int[]``, ``Tensor[]``, ``Tensor?[]``), so a
    list whose first item is an int holds no tensor; strides, paddings and sizes are skipped cheaply.
    """
    return () if not value or type(value[0]) is int else value


def any_unsupported_layout(values: Any) -> bool:
    """Whether any of ``values`` (or a tensor inside a list of them) is not a dense strided tensor."""
    strided, tensor = torch.strided, torch.Tensor
    for value in values:
        if isinstance(value, tensor):
            if value.layout is not strided or value.is_nested:
                return True
        elif isinstance(value, _SEQUENCES):
            for item in _tensor_items(value):
                if isinstance(item, tensor) and (item.layout is not strided or item.is_nested):
                    return True
    return False


def any_complex(values: Any) -> bool:
    """Whether any of ``values`` is a complex tensor or Python complex number (or a list holds a
    complex tensor)."""
    tensor = torch.Tensor
    for value in values:
        if isinstance(value, tensor):
            if value.is_complex():
                return True
        elif isinstance(value, _SEQUENCES):
            for item in _tensor_items(value):
                if isinstance(item, tensor) and item.is_complex():
                    return True
        elif isinstance(value, complex):
            return True
    return False


UNSUPPORTED_LAYOUT = 1
COMPLEX_VALUE = 2


def operand_flags(values: Any) -> int:
    """:func:`any_unsupported_layout` (bit ``UNSUPPORTED_LAYOUT``) and :func:`any_complex`
    (bit ``COMPLEX_VALUE``) over ``values`` in one pass, for native formulas,
    which need both for every call."""
    strided, tensor = torch.strided, torch.Tensor
    flags = 0
    for value in values:
        if isinstance(value, tensor):
            if value.layout is not strided or value.is_nested:
                flags |= UNSUPPORTED_LAYOUT
            if value.is_complex():
                flags |= COMPLEX_VALUE
        elif isinstance(value, _SEQUENCES):
            for item in _tensor_items(value):
                if isinstance(item, tensor):
                    if item.layout is not strided or item.is_nested:
                        flags |= UNSUPPORTED_LAYOUT
                    if item.is_complex():
                        flags |= COMPLEX_VALUE
        elif isinstance(value, complex):
            flags |= COMPLEX_VALUE
    return flags
