"""Reuse of one analysis' silent leaf estimates across calls that the formulas cannot tell apart.

A deep model repeats the same layer: a 1,000-pair ``Linear+ReLU`` stack runs one configuration of
each type a thousand times, ResNet's blocks and BERT's layers a dozen times. Module formulas are pure
functions of the module's configuration, its own parameters' and buffers' shapes and the call's
tensors' metadata (formulas.md A.2: never values), so two calls that agree on all of that get the
same six numbers. :func:`leaf_key` spells that agreement out; the estimator stores the six numbers of
a call that its formulas estimated completely and silently, and builds the next matching call's
results from them instead of running the four formulas again.

The key is deliberately narrow, so that a hit can never differ from a fresh evaluation:

* only PyTorch's own module classes (defined in ``torch.*``) with TorchScan's own formulas (a
  caller-registered formula may read anything) and no instance-level ``forward``;
* every attribute the instance holds enters the key, except PyTorch's bookkeeping (parameter,
  buffer and child tables, hook tables); an attribute that is not a plain value (a tensor outside
  the parameter table, a callable, a dict) disables the memo for the call;
* own parameters and buffers enter by name, shape and dtype;
* the call passes plain dense tensors positionally (no keywords, no subclasses such as fake or
  distributed tensors, no sparse or nested layouts) and returns one; their shapes and dtypes enter.

The memo lives for one analysis: nothing is carried between reports or threads.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import torch
from torch import nn

# Values an attribute may hold and still be compared by equality in a key.
_PLAIN = frozenset({int, float, bool, str, type(None)})
_STRUCTURE = frozenset({"_parameters", "_buffers", "_modules", "_non_persistent_buffers_set"})
_STRIDED = torch.strided
_TENSOR = torch.Tensor

_ELIGIBLE: dict[tuple[type, tuple[Callable[..., Any], ...]], bool] = {}


def _eligible(cls: type, plan: tuple[Callable[..., Any], ...]) -> bool:
    """PyTorch's own class estimated by TorchScan's own formulas (decided once per class and plan)."""
    key = (cls, plan)
    known = _ELIGIBLE.get(key)
    if known is None:
        known = str(cls.__module__).partition(".")[0] == "torch" and all(
            str(getattr(formula, "__module__", "")).startswith("torchscan.formulas.") for formula in plan
        )
        _ELIGIBLE[key] = known
    return known


def _plain(value: Any) -> Any:
    """A plain scalar, or a tuple/list of them, with its type; else the :data:`_NO` marker.

    Types are kept because equal values of different types (``1``, ``1.0``, ``True``) compare and
    hash alike, yet a formula may return an ``int`` for one and a ``float`` for the other.
    """
    kind = type(value)
    if kind in _PLAIN:
        return kind, value
    if kind is tuple or kind is list:
        items = tuple((type(item), item) for item in value)
        if all(item[0] in _PLAIN for item in items):
            return kind, items
    return _NO


_NO = object()


def _tensors(table: dict[str, Any]) -> tuple[Any, ...] | None:
    """Names, shapes and dtypes of a module's own parameter or buffer table."""
    if not table:
        return ()
    parts: list[Any] = []
    for name, tensor in table.items():
        if tensor is None:
            parts.append((name, None))
        elif isinstance(tensor, _TENSOR) and tensor.layout is _STRIDED:
            parts.append((name, tensor.shape, tensor.dtype))
        else:
            return None
    return tuple(parts)


def _call_tensor(value: Any) -> tuple[Any, ...] | None:
    """Shape and dtype of a plain dense tensor argument or output; None for anything else."""
    if type(value) is not _TENSOR or value.layout is not _STRIDED or value.is_nested:
        return None
    return value.shape, value.dtype


def leaf_key(
    module: nn.Module,
    plan: tuple[Callable[..., Any], ...],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    output: Any,
) -> Hashable | None:
    """Everything the built-in formulas may read about this call, or None when the memo must not apply."""
    cls = type(module)
    state = module.__dict__
    if kwargs or not args or "forward" in state or not _eligible(cls, plan):
        return None
    parts: list[Any] = [cls, plan]
    for arg in args:
        described = _call_tensor(arg)
        if described is None:
            return None
        parts.append(described)
    described = _call_tensor(output)
    if described is None:
        return None
    parts.append(described)
    for name, value in state.items():
        kind = type(value)
        if kind in _PLAIN:  # most attributes: sizes, flags, rates (the type kept, see _plain)
            parts.append(name)
            parts.append(kind)
            parts.append(value)
            continue
        if name in _STRUCTURE or (name[0] == "_" and "hook" in name):
            continue
        plain = _plain(value)
        if plain is _NO:
            return None
        parts.append(name)
        parts.append(plain)
    params = _tensors(module._parameters)
    buffers = _tensors(module._buffers)
    if params is None or buffers is None:
        return None
    parts.append(params)
    parts.append(buffers)
    return tuple(parts)
