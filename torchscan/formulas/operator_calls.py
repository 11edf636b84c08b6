"""The record of one dispatched operator that functional formulas estimate (real-models.md §1).

The observer stores a :class:`OperatorCall` per operator of a frame: shapes and dtypes of its tensor
operands (:class:`TensorMeta`; a nested tensor only its dtype), its scalar arguments, never a value.
:mod:`torchscan.formulas.functional` estimates the calls at report-build time.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import torch

from torchscan.formulas.tensors import SEQUENCES as _SEQUENCES

# Operator kinds as the observer resolves them (torchscan.analysis.dispatch.observer; duplicated as plain ints
# so formulas never import the analysis layer).
CUSTOM, INHERITED, SUPPLEMENTAL, IGNORED, UNCOUNTED = range(5)


class TensorMeta(NamedTuple):
    """What a functional formula may know about one tensor operand: its shape and dtype."""

    shape: tuple[int, ...]
    dtype: torch.dtype

    def numel(self) -> int:
        """Elements of the tensor."""
        return math.prod(self.shape)


class NestedMeta(NamedTuple):
    """A nested (ragged) tensor operand: its dtype only. It has no shape, so no functional formula
    applies to a call that holds one (the call is left unestimated, never counted as 0)."""

    dtype: torch.dtype


class OperatorCall(NamedTuple):
    """One dispatched operator as the recorder keeps it (hashable: equal calls share an estimate)."""

    name: str
    kind: int
    flops: int
    complete: bool
    ignored: bool
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]
    out: Any


def _meta(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        try:
            return TensorMeta(value.shape, value.dtype)  # torch.Size is a tuple: no copy
        except RuntimeError:  # a nested tensor has no sizes (only the exception costs anything)
            if value.is_nested:
                return NestedMeta(value.dtype)
            raise
    if isinstance(value, _SEQUENCES):
        return tuple(_meta(v) for v in value)
    return value


def capture(
    name: str, kind: int, flops: int, complete: bool, ignored: bool, args: Any, kwargs: Any, out: Any
) -> OperatorCall:
    """The metadata of one call: tensors become :class:`TensorMeta`, lists become tuples."""
    items = tuple((k, _meta(v)) for k, v in kwargs.items()) if kwargs else ()
    return OperatorCall(name, kind, flops, complete, ignored, _meta(args), items, _meta(out))
