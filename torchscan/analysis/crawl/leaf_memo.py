"""Reuse of silent leaf estimates across calls that the module formulas cannot tell apart.

A deep model repeats the same layer: a 1,000-pair ``Linear+ReLU`` stack runs one configuration of
each type a thousand times, ResNet's blocks and BERT's layers a dozen times. Module formulas are pure
functions of the module's configuration, its own parameters' and buffers' shapes and the call's
tensors' metadata (formulas.md A.2: never values), so two calls that agree on all of that get the
same six results. :func:`leaf_key` spells that agreement out; the estimator stores the six results of
a call that its formulas estimated completely and silently, and gives them to the next matching call
instead of running the four formulas again.

The key is deliberately narrow, so that a hit can never differ from a fresh evaluation:

* only PyTorch's own module classes (defined in ``torch.*``) with TorchScan's own formulas (a
  caller-registered formula may read anything) and no instance-level ``forward``;
* every attribute the instance holds enters the key, except PyTorch's bookkeeping (parameter,
  buffer and child tables, hook tables). Plain scalars enter as they are, with their types;
  anything else (lists such as ``Conv2d(padding="same")``'s reversed padding, tuples of lists,
  dicts, enum members) enters through :func:`~torchscan.formulas.keys.canonical`, a copy that
  keeps types and order (truth.md 2: ``[1, 2]``, ``(1, 2)`` and ``"[1, 2]"`` are three keys, a
  list mutated between two calls gives the second call another key). A value it cannot key (a
  tensor outside the parameter table, a callable, an arbitrary object) disables the memo for the
  call: never a crash, never a wrong hit;
* own parameters and buffers enter by name, shape and dtype;
* the call passes plain dense tensors positionally (no keywords, no subclasses such as fake or
  distributed tensors, no sparse or nested layouts) and returns one; their shapes and dtypes enter.

The memo outlives one analysis, as PyTorch's formula lookups do: a test suite or a benchmark that
analyses the same architecture again reuses the estimates (the key holds classes, formulas, shapes and
plain values, never a module, tensor or report). It is bounded, and a registration that changes a
class's formulas changes the ``plan`` inside every new key, so an entry made under other formulas is
never found again. It stores plain numbers (issue #36): each report builds its MetricResults from
them, so within one report calls served by one entry share one set of MetricResults and no two
reports share one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from operator import itemgetter
from typing import Any

import torch
from torch import nn

from torchscan.formulas import registry
from torchscan.formulas.keys import UNKEYABLE, canonical

# Attribute values that enter a key as they are (with their types): immutable, and equal values of one
# type are interchangeable, except a float zero's sign (recorded beside them). Flat lists and tuples
# of them too (a list as a tuple copy, its type kept in ``types``).
_PLAIN = frozenset({int, float, bool, str, type(None)})
_SEQUENCES = frozenset({tuple, list})
_PLAIN_OR_SEQUENCE = _PLAIN | _SEQUENCES
_STRUCTURE = frozenset({"_parameters", "_buffers", "_modules", "_non_persistent_buffers_set"})
_STRIDED = torch.strided
_TENSOR = torch.Tensor
# Plain tensors and parameters only: a subclass (fake, distributed) may carry symbolic or global sizes.
_OWN_TENSOR_TYPES = frozenset({torch.Tensor, nn.Parameter})

_ELIGIBLE: dict[tuple[type, tuple[Callable[..., Any], ...]], bool] = {}


def _eligible(cls: type, plan: tuple[Callable[..., Any], ...]) -> bool:
    """PyTorch's own class estimated by TorchScan's own formulas (decided once per class and plan)."""
    key = (cls, plan)
    known = _ELIGIBLE.get(key)
    if known is None:
        known = registry.defined_in_torch(cls) and all(
            str(getattr(formula, "__module__", "")).startswith("torchscan.formulas.") for formula in plan
        )
        _ELIGIBLE[key] = known
    return known


class _Layout:
    """The attribute names of one instance-dict layout that enter a key, and a fast getter for them.

    One object per distinct tuple of attribute names (instances of a class share it): it stands for
    the names inside keys, so a key compares its names by identity.
    """

    __slots__ = ("values",)

    def __init__(self, names: tuple[str, ...]) -> None:
        kept = tuple(n for n in names if n not in _STRUCTURE and not (n[0] == "_" and "hook" in n))
        if len(kept) > 1:
            self.values: Callable[[dict[str, Any]], tuple[Any, ...]] = itemgetter(*kept)
        elif kept:
            only = kept[0]
            self.values = lambda state: (state[only],)
        else:
            self.values = lambda state: ()


_LAYOUTS: dict[tuple[str, ...], _Layout] = {}
_MAX_LAYOUTS = 4096


def zero_signs(values: tuple[Any, ...]) -> tuple[float, ...]:
    """The sign of every float zero among ``values`` and their items, in order (``-0.0 == 0.0``)."""
    signs: list[float] = []
    for value in values:
        for item in value if type(value) in _SEQUENCES else (value,):
            if type(item) is float and item == 0.0:
                signs.append(math.copysign(1.0, item))
    return tuple(signs)


# What a tuple of attribute types asks of :func:`_attributes`, decided once per tuple of types.
_SCALARS, _SCALARS_WITH_FLOATS, _SEQUENCES_TOO, _OTHER = 0, 1, 2, 3
_TYPE_PLANS: dict[tuple[type, ...], int] = {}


def _type_plan(types: tuple[type, ...]) -> int:
    plan = _TYPE_PLANS.get(types)
    if plan is None:
        if not _PLAIN_OR_SEQUENCE.issuperset(types):
            plan = _OTHER
        elif tuple in types or list in types:
            plan = _SEQUENCES_TOO
        else:
            plan = _SCALARS_WITH_FLOATS if float in types else _SCALARS
        if len(_TYPE_PLANS) >= _MAX_LAYOUTS:
            _TYPE_PLANS.clear()
        _TYPE_PLANS[types] = plan
    return plan


def _attributes(state: dict[str, Any]) -> tuple[Any, ...] | None:
    """The instance's configuration as a hashable key part, or None when it cannot be keyed.

    The common case, plain scalars and flat lists or tuples of them, is a 5-tuple: the values (lists
    copied as tuples), their types, the item types of each sequence, and the signs of float zeros.
    Types are kept because equal values of different types (``1``, ``1.0``, ``True``; ``[1, 2]`` and
    ``(1, 2)``) compare and hash alike, yet a formula may treat them differently; a NaN equals no
    other NaN object, which can only cost a miss. Anything else (a nested container, a dict, an enum)
    goes through :func:`~torchscan.formulas.keys.canonical` as a 2-tuple, so the two forms never
    compare equal; a value it cannot key refuses the memo.
    """
    names = tuple(state)
    layout = _LAYOUTS.get(names)
    if layout is None:
        if len(_LAYOUTS) >= _MAX_LAYOUTS:  # instances given attributes of their own: stay bounded
            _LAYOUTS.clear()
        layout = _LAYOUTS[names] = _Layout(names)
    values = layout.values(state)
    types = tuple(map(type, values))
    plan = _type_plan(types)
    if plan == _SCALARS:  # the common case (``Linear``, ``ReLU``): no sequence, no float
        return (layout, types, values, (), ())
    if plan == _SCALARS_WITH_FLOATS:
        return (layout, types, values, (), zero_signs(values))
    if plan == _SEQUENCES_TOO:
        items = tuple(tuple(map(type, value)) for value in values if type(value) in _SEQUENCES)
        if all(_PLAIN.issuperset(item) for item in items):
            if list in types:
                values = tuple(tuple(value) if type(value) is list else value for value in values)
            floats = float in types or any(float in item for item in items)
            return (layout, types, values, items, zero_signs(values) if floats else ())
    described = canonical(values)
    if described is UNKEYABLE:
        return None
    return (layout, described)


def _tensors(table: dict[str, Any]) -> tuple[Any, ...] | None:
    """Names, shapes and dtypes of own parameters or buffers; None for a tensor subclass or nested tensor."""
    if not table:
        return ()
    parts: list[Any] = []
    for name, tensor in table.items():
        if tensor is None:
            parts.append((name, None))
        elif type(tensor) in _OWN_TENSOR_TYPES and tensor.layout is _STRIDED and not tensor.is_nested:
            parts.append((name, tensor.shape, tensor.dtype))
        else:
            return None
    return tuple(parts)


def _call_tensor(value: Any) -> tuple[Any, ...] | None:
    """Shape and dtype of a plain dense tensor argument or output; None for anything else."""
    if type(value) is not _TENSOR or value.layout is not _STRIDED or value.is_nested:
        return None
    return value.shape, value.dtype


# Per class: ``(class, forward, plan)``, the part of every key that only the class decides. Rebuilt
# when the class's formulas (a registration makes a new plan) or its ``forward`` change.
_PREFIXES: dict[type, tuple[type, Callable[..., Any], tuple[Callable[..., Any], ...]]] = {}


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
    if kwargs or not args or "forward" in state:
        return None
    prefix = _PREFIXES.get(cls)
    forward = cls.forward
    if prefix is None or prefix[2] is not plan or prefix[1] is not forward:
        if not _eligible(cls, plan):
            return None
        prefix = _PREFIXES[cls] = (cls, forward, plan)
    # The call's tensors (the checks of _call_tensor, inlined: this runs for every leaf call).
    if len(args) == 1:
        arg = args[0]
        if type(arg) is not _TENSOR or arg.layout is not _STRIDED or arg.is_nested:
            return None
        inputs: tuple[Any, ...] = ((arg.shape, arg.dtype),)
    else:
        described = [_call_tensor(arg) for arg in args]
        if None in described:
            return None
        inputs = tuple(described)
    if type(output) is not _TENSOR or output.layout is not _STRIDED or output.is_nested:
        return None
    attributes = _attributes(state)
    if attributes is None:
        return None
    params = _tensors(module._parameters)
    buffers = _tensors(module._buffers)
    if params is None or buffers is None:
        return None
    return (prefix, inputs, (output.shape, output.dtype), attributes, params, buffers)


class LeafMemo:
    """The process-wide store: the plain estimate (numbers, never MetricResults) per :func:`leaf_key`.

    Estimates are immutable tuples, so analyses share them; each report builds its own MetricResults
    from them (:func:`torchscan.analysis.crawl.estimate.materialize`), so no two reports share a result.
    """

    def __init__(self, limit: int) -> None:
        self._results: dict[Hashable, Any] = {}
        self._limit = limit

    def get(self, key: Hashable) -> Any:
        """The estimate stored under ``key``, or None."""
        return self._results.get(key)

    def put(self, key: Hashable, estimate: Any) -> None:
        """Store ``estimate`` under ``key``, emptying the store first when it is full."""
        if len(self._results) >= self._limit:
            self._results.clear()
        self._results[key] = estimate

    def clear(self) -> None:
        """Forget every entry."""
        self._results.clear()


# The process-wide store every analysis reads: a key and a tuple of numbers per entry (well under
# 1 KiB), so at most a few MiB; a zoo model needs tens to a few hundred entries (ResNet-50: 50).
SHARED = LeafMemo(4096)
