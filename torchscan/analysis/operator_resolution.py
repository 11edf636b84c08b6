"""How each operator overload is counted: the per-overload decision and its counting helpers.

:func:`resolve` decides once per overload which formula counts its calls (caller ``custom_mapping``
> PyTorch's native ``FlopCounterMode`` formula > TorchScan's supplemental ``torchscan_flops_v1``
formula, formulas.md B.2), or why they are ignored, decomposed, tallied as communication or left
uncounted. The helpers beside it check a call's tensors (layouts, complex dtypes) and run a native
formula cheaply. :class:`~torchscan.analysis.dispatch.OperatorObserver` applies the decisions; this
module holds no state and modifies nothing global: PyTorch's registry is read, never written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from torchscan.analysis import distributed
from torchscan.formulas import native_equivalents, operators

# Resolution kinds of one operator packet.
# COMMUNICATION: collectives, tallied as bytes by ``distributed`` (distributed.md 3), never FLOP gaps.
CUSTOM, NATIVE, SUPPLEMENTAL, IGNORED, UNCOUNTED, DECOMPOSED, COMMUNICATION = range(7)
_COMPOSITE = torch._C.DispatchKey.CompositeImplicitAutograd


def is_composite(func: Any) -> bool:
    """Whether ``func`` has a ``CompositeImplicitAutograd`` kernel (``OpOverload.decompose`` works).

    Such overloads reach a dispatch mode only when autograd is bypassed (``torch.inference_mode``);
    elsewhere the dispatcher decomposes them before the mode sees anything.

    Only the C++ registration counts (families.md 1.5): ``OpOverload.has_kernel_for_dispatch_key``
    also answers for Python ``py_impl`` decompositions, such as the one ``native_batch_norm`` keeps
    for AOT autograd, whose own checks raise other exceptions than the real kernel (a caller's
    ``ValueError`` came back as a ``RuntimeError``, issue #20 item 11).
    """
    try:
        return bool(torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), _COMPOSITE))
    except (AttributeError, RuntimeError):  # not an OpOverload, or an overload without a schema
        return False


def native_registry() -> Mapping[Any, Callable[..., int]]:
    """PyTorch's own registered FLOP formulas, keyed by operator packet (read-only use)."""
    from torch.utils import flop_counter

    registry = getattr(flop_counter, "flop_registry", None)
    if not isinstance(registry, Mapping):
        raise NotImplementedError(
            f"torch {torch.__version__}: torch.utils.flop_counter does not expose its formula mapping"
        )
    return registry


def validate_custom_mapping(custom_mapping: object) -> dict[Any, Callable[..., int]]:
    """Snapshot and check a caller mapping: keys must be operator packets, values callables.

    Raises ``TypeError`` (message mentions ``operator packets``) for overloads or non-operators.
    The caller's mapping is copied, never mutated.
    """
    if custom_mapping is None:
        return {}
    if not isinstance(custom_mapping, Mapping):
        raise TypeError(f"custom_mapping must be a mapping, got {type(custom_mapping).__name__}")
    snapshot: dict[Any, Callable[..., int]] = {}
    for key, formula in custom_mapping.items():
        if not isinstance(key, torch._ops.OpOverloadPacket):
            kind = "an operator overload" if isinstance(key, torch._ops.OpOverload) else type(key).__name__
            raise TypeError(
                f"custom_mapping keys must be operator packets such as torch.ops.aten.sin, got {kind} ({key})"
            )
        if not callable(formula):
            raise TypeError(f"custom_mapping formula for {key} must be callable")
        snapshot[key] = formula
    return snapshot


def wrap_caller_formula(formula: Callable[..., int]) -> Callable[..., int]:
    """Apply the installed counter's calling convention (shapes unless ``_get_raw``)."""
    if getattr(formula, "_get_raw", False):
        return formula
    from torch.utils.flop_counter import shape_wrapper

    return shape_wrapper(formula)


def _shapes(value: Any) -> Any:
    """Tensors replaced by their shapes, recursively: the native formulas' calling convention.

    Equivalent to ``torch.utils.flop_counter.shape_wrapper``'s ``tree_map`` but several times
    cheaper, which matters because it runs for every counted matrix product.
    """
    if isinstance(value, torch.Tensor):
        return value.shape
    if isinstance(value, list | tuple):
        return type(value)(_shapes(v) for v in value) if type(value) in (list, tuple) else value
    if isinstance(value, dict):
        return {k: _shapes(v) for k, v in value.items()}
    return value


def native_caller(formula: Callable[..., int]) -> Callable[..., int]:
    """Call a native formula with shapes; unwraps PyTorch's ``shape_wrapper`` when present."""
    inner = getattr(formula, "__wrapped__", None)
    if inner is None or getattr(formula, "_get_raw", False):
        return lambda *args, out_val=None, **kwargs: formula(*args, **kwargs, out_val=out_val)

    def call(*args: Any, out_val: Any = None, **kwargs: Any) -> int:
        return inner(*_shapes(args), out_shape=_shapes(out_val), **_shapes(kwargs))

    return call


@dataclass(slots=True)
class Entry:
    """How the calls of one overload are counted: its kind, formula and cached equivalence check."""

    name: str
    kind: int
    formula: Callable[..., int] | None
    reason: str | None = None
    # A direct equivalent of PyTorch's native formula (hot operators), trusted once ``checked``.
    equivalent: Callable[[tuple[Any, ...], Any], int] | None = None
    checked: bool = False
    # ``predicate(args, kwargs)``: this call is a plain indexing write, ignored with ``reason``.
    ignore_when: Callable[[tuple[Any, ...], Any], bool] | None = None


def is_pytorch_formula(formula: Callable[..., int]) -> bool:
    """Whether a registry entry is PyTorch's own (not one registered by other code)."""
    return getattr(formula, "__module__", None) == "torch.utils.flop_counter"


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
        elif isinstance(value, list | tuple):
            for item in _tensor_items(value):
                if isinstance(item, tensor) and (item.layout is not strided or item.is_nested):
                    return True
    return False


def has_complex(args: tuple[Any, ...], kwargs: Mapping[str, Any], out: Any) -> bool:
    """Whether a call's arguments or output hold a complex tensor or a Python complex number."""
    return _any_complex(args) or _any_complex(kwargs.values()) or _any_complex((out,))


def _any_complex(values: Any) -> bool:
    tensor = torch.Tensor
    for value in values:
        if isinstance(value, tensor):
            if value.is_complex():
                return True
        elif isinstance(value, list | tuple):
            for item in _tensor_items(value):
                if isinstance(item, tensor) and item.is_complex():
                    return True
        elif isinstance(value, complex):
            return True
    return False


def native_count(
    entry: Entry, formula: Callable[..., int], args: tuple[Any, ...], kwargs: Mapping[str, Any], out: Any
) -> int:
    """PyTorch's native count of one call, through its direct equivalent once that was checked.

    The first call of each overload runs both and keeps the equivalent only when they agree, so a
    PyTorch release that changes its convention is followed, never silently overridden.
    """
    equivalent = entry.equivalent
    if equivalent is not None:
        try:
            flops = int(equivalent(args, out))  # int(): symbolic sizes become plain ints, as below
        except (AttributeError, IndexError, TypeError, ValueError):  # an unexpected call form
            flops = None
        if flops is not None and entry.checked:
            return flops
        native = int(formula(*args, **kwargs, out_val=out))
        entry.checked = True
        if flops != native:
            entry.equivalent = None
        return native
    return int(formula(*args, **kwargs, out_val=out))


def resolve(
    func: Any, custom: Mapping[Any, Callable[..., int]], native_formulas: Mapping[Any, Callable[..., int]]
) -> Entry:
    """Decide how the calls of one overload are counted (the observer caches the decision).

    ``custom`` holds the caller's formulas already wrapped (:func:`wrap_caller_formula`),
    ``native_formulas`` PyTorch's registry (:func:`native_registry`). Precedence: caller formula >
    decomposition of a composite overload > PyTorch's native formula > supplemental formula >
    ignored > pointwise fallback > uncounted. Composite overloads are decomposed even when a formula
    exists for their packet so that ``torch.inference_mode`` counts exactly the operators
    ``torch.no_grad`` would (real-models.md 2.3).
    """
    packet = func.overloadpacket
    name = str(packet)
    if packet in custom:
        entry = Entry(name, CUSTOM, custom[packet])
    elif is_composite(func):
        entry = Entry(name, DECOMPOSED, None)
    elif packet in native_formulas:
        native = native_formulas[packet]
        entry = Entry(name, NATIVE, native_caller(native))
        if is_pytorch_formula(native):
            entry.equivalent = native_equivalents.EQUIVALENTS.get(name)
    elif (formula := operators.supplemental_formula(name)) is not None:
        entry = Entry(name, SUPPLEMENTAL, formula)
        predicate = operators.IGNORED_UNLESS_ACCUMULATING.get(name)
        if predicate is not None:
            entry.ignore_when, entry.reason = predicate, operators.INDEXING_REASON
    elif (reason := operators.ignored_reason(name) or distributed.ignored_reason(name)) is not None:
        entry = Entry(name, IGNORED, None, reason)
    elif distributed.is_communication(name):
        entry = Entry(name, COMMUNICATION, None)
    elif torch.Tag.pointwise in getattr(func, "tags", ()):
        entry = Entry(name, SUPPLEMENTAL, operators.pointwise_fallback())
    else:
        entry = Entry(name, UNCOUNTED, None)
    return entry
