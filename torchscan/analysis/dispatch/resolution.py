"""How each operator overload is counted: the per-overload decision and its counting helpers.

:func:`resolve` decides once per overload which formula counts its calls, or why they are ignored,
decomposed, tallied as communication or left uncounted (families.md 1, torch-versions.md 1): a
caller's ``custom_mapping`` first, then TorchScan's own classification — its reference-checked
``torchscan_flops_v1`` formulas, ignored tables, PyTorch's metadata, the pointwise fallback — and only
for an operator TorchScan never classified, PyTorch's ``FlopCounterMode`` formula ("inherited"),
trusted as complete only on the torch releases where the reference suite checked it
(``formulas/provenance.CHECKED_INHERITED``). A formula PyTorch starts registering never replaces one
of TorchScan's. :class:`~torchscan.analysis.dispatch.observer.OperatorObserver` applies the
decisions; this module holds no state and modifies nothing global: PyTorch's registry is read, never
written.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import torch

from torchscan.analysis.dispatch import distributed
from torchscan.analysis.dispatch.fast_counts import FastCounter, fast_counter
from torchscan.analysis.dispatch.kinds import (
    COMMUNICATION,
    CUSTOM,
    DECOMPOSED,
    IGNORED,
    INHERITED,
    SUPPLEMENTAL,
    UNCOUNTED,
)
from torchscan.analysis.dispatch.overload_schema import (
    foreach_base,
    functional_sibling,
    metadata_reason,
    tensor_free,
)
from torchscan.formulas import operators, optimizer_ops, provenance
from torchscan.formulas.tensors import SEQUENCES as _SEQUENCES
from torchscan.runtime.torch_versions import installed_release

_COMPOSITE = torch._C.DispatchKey.CompositeImplicitAutograd
_FLOP_COUNTER = "torch.utils.flop_counter"


def is_composite(func: Any) -> bool:
    """Whether ``func``'s C++ registration is ``CompositeImplicitAutograd`` (families.md 1 step 5).

    Such overloads reach a dispatch mode only when autograd is bypassed (``torch.inference_mode``);
    elsewhere the dispatcher runs that C++ kernel before the mode sees anything, so running it
    (:func:`run_composite`) observes exactly the operators ``torch.no_grad`` would. A Python-registered
    decomposition (``py_kernels``, which ``OpOverload.has_kernel_for_dispatch_key`` also reports) is not
    one: the operator has its own kernel, and its Python decomposition is not what runs outside
    inference mode.
    """
    try:
        return bool(torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), _COMPOSITE))
    except (AttributeError, RuntimeError, TypeError):  # not an OpOverload, or no schema
        return False


def run_composite(func: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
    """Run the C++ ``CompositeImplicitAutograd`` kernel of ``func`` (never a ``py_kernels`` entry).

    ``OpOverload.decompose`` prefers a Python decomposition when one is registered; this calls the
    kernel the dispatcher runs outside ``torch.inference_mode``. Only for :func:`is_composite` overloads.
    """
    return func._op_dk(_COMPOSITE, *args, **kwargs)


def native_registry() -> Mapping[Any, Callable[..., int]]:
    """PyTorch's own registered FLOP formulas, keyed by operator packet (read-only use)."""
    flop_counter = sys.modules.get(_FLOP_COUNTER)  # imported on first use (``import torchscan`` is light)
    if flop_counter is None:
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
    if isinstance(value, _SEQUENCES):
        return type(value)(_shapes(v) for v in value) if type(value) in _SEQUENCES else value
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
    """How the calls of one overload are counted: its kind, formula and what makes them partial."""

    name: str
    kind: int
    formula: Callable[..., int] | None
    reason: str | None = None
    # INHERITED only: whether the reference suite checked this FlopCounterMode formula on this torch.
    verified: bool = False
    # ``predicate(args, kwargs)``: this call is a plain indexing write, ignored with ``reason``.
    ignore_when: Callable[[tuple[Any, ...], Any], bool] | None = None
    # How the bytes of its calls are counted (:class:`torchscan.analysis.dispatch.operator_bytes.ByteRule`);
    # set only by an observer that counts bytes, so the FLOP-only path never computes it.
    bytes_rule: Any = None
    # The one-pass counter of an ordinary call (:mod:`torchscan.analysis.dispatch.fast_counts`), or None.
    fast: FastCounter | None = None


def is_pytorch_formula(formula: Callable[..., int]) -> bool:
    """Whether a registry entry is PyTorch's own (not one registered by other code)."""
    return getattr(formula, "__module__", None) == "torch.utils.flop_counter"


def inherited_verified(packet_name: str, formula: Callable[..., int], release: str | None = None) -> bool:
    """Whether PyTorch's formula for ``packet_name`` was checked by the reference suite on ``release``
    (default: the installed torch). A formula another library registered is never checked.
    """
    if not is_pytorch_formula(formula):
        return False
    checked = provenance.CHECKED_INHERITED.get(packet_name, ())
    return (installed_release() if release is None else release) in checked


# Classification kinds (:func:`classify_overload`) -> the resolution kind (``Entry.kind``) each counts with.
CLASSIFICATION_KINDS = {
    "custom": CUSTOM,
    "inherited": INHERITED,
    "supplemental": SUPPLEMENTAL,
    "pointwise": SUPPLEMENTAL,
    "foreach": SUPPLEMENTAL,
    "ignored": IGNORED,
    "decomposed": DECOMPOSED,
    "communication": COMMUNICATION,
    "uncounted": UNCOUNTED,
}
# Classification kinds a buffer variant (out= or in-place) takes from its functional sibling; a
# decomposed sibling is not followed (the variant has its own kernel, which is what runs).
_SIBLING_KINDS = frozenset({"custom", "inherited", "supplemental", "pointwise", "ignored"})


def _decide(
    func: Any, custom: Mapping[Any, Any], native_formulas: Mapping[Any, Any]
) -> tuple[str, str | None, Any]:
    """``(kind, reason, counted_as)``: ``counted_as`` is the overload whose packet's formula counts."""
    packet = func.overloadpacket
    name = str(packet)
    if packet in custom:
        return "custom", None, func
    schema = getattr(func, "_schema", None)
    if schema is not None and tensor_free(schema):  # no tensor in or out: no tensor work to count
        # a named table's reason (profiler bookkeeping) says more than the generic scalar one
        reason = operators.ignored_reason(name) or distributed.ignored_reason(name)
        return "ignored", reason or operators.SCALAR_REASON, func
    if name in operators.NEAREST_RESAMPLING:  # before decomposition: never decomposed (step 4)
        return "ignored", operators.ignored_reason(name), func
    if is_composite(func):
        return "decomposed", None, func
    if operators.supplemental_formula(name) is not None:
        conditional = name in operators.IGNORED_UNLESS_ACCUMULATING
        return "supplemental", operators.INDEXING_REASON if conditional else None, func
    reason = operators.ignored_reason(name) or distributed.ignored_reason(name)
    if reason is not None:
        return "ignored", reason, func
    if distributed.is_communication(name):
        return "communication", None, func
    reason = metadata_reason(func)
    if reason is not None:
        return "ignored", reason, func
    sibling = functional_sibling(func)
    if sibling is not None:
        kind, reason, counted_as = _decide(sibling, custom, native_formulas)
        if kind in _SIBLING_KINDS:
            return kind, reason, counted_as
    base = foreach_base(func)
    if base is not None:  # a caller's formula for the base is not applied to lists (other convention)
        kind, reason, _ = _decide(base, {}, native_formulas)
        if kind == "ignored":
            return kind, reason, func
        if kind in ("supplemental", "pointwise") and reason is None:
            return "foreach", None, base
    if torch.Tag.pointwise in getattr(func, "tags", ()):
        return "pointwise", None, func
    if packet in native_formulas:  # only where TorchScan has nothing of its own (torch-versions.md 1)
        return "inherited", None, func
    return "uncounted", None, func


def _classify(
    func: Any, custom: Mapping[Any, Any], native_formulas: Mapping[Any, Any]
) -> tuple[str, str | None]:
    kind, reason, _ = _decide(func, custom, native_formulas)
    return kind, reason


def classify_overload(
    op: Any,
    custom_mapping: Mapping[Any, Any] | None = None,
    native_formulas: Mapping[Any, Any] | None = None,
) -> tuple[str, str | None]:
    """How TorchScan counts every call of one ``OpOverload``, decided without a call: ``(kind, reason)``.

    ``kind`` is one of ``"custom"`` (a ``custom_mapping`` packet), ``"supplemental"`` (one of TorchScan's
    own ``torchscan_flops_v1`` formulas), ``"inherited"`` (PyTorch's ``FlopCounterMode`` formula, for an
    operator TorchScan has nothing of its own for; torch-versions.md 1), ``"pointwise"``
    (the pointwise fallback, real-models.md 2.2), ``"foreach"`` (a unary ``_foreach_<op>``: the
    formula of ``<op>`` summed over the list, :func:`foreach_base`), ``"ignored"``, ``"decomposed"`` (a C++
    ``CompositeImplicitAutograd`` overload: its parts are classified one by one when it runs),
    ``"communication"`` (a collective, tallied as bytes) or ``"uncounted"``. ``reason`` is the exact
    ignored reason for ``"ignored"``; for a ``"supplemental"`` formula that ignores plain writes
    (``index_put`` without accumulation) it is the reason those calls get; otherwise ``None``.

    It is the decision :func:`resolve` makes for real counting, in the order of families.md 1 as
    amended by torch-versions.md 1 (``native_formulas`` defaults to PyTorch's registry, read at run
    time). What it does *not* say: whether an ``"inherited"`` formula was checked on this torch
    (:func:`inherited_verified`); a formula kind may
    still report one call ``unsupported_operator_formula`` (a sparse or nested argument, complex
    values, an option the formula rejects); an operator outside ``aten`` without a formula or tag is
    ``"uncounted"`` by design. Raises nothing for a non-overload: its kind is ``"uncounted"``.
    """
    if not isinstance(op, torch._ops.OpOverload):
        return "uncounted", None
    formulas = native_registry() if native_formulas is None else native_formulas
    return _classify(op, custom_mapping or {}, formulas)


# Decisions without a caller mapping, kept across analyses (issue #24): a decision reads only the
# overload, PyTorch's formula registry and TorchScan's tables, so it is recomputed only when the
# registries change size (a formula registered since) or another registry object is passed. Each
# observer still builds its own Entry from it, so per-analysis state is never shared.
_DECISIONS: dict[Any, tuple[str, str | None, Any]] = {}
# resolve()'s entries without a caller mapping, copied for each use, with the name of the table
# formula behind each and that formula as it was then
_ENTRIES: dict[Any, tuple[Entry, str, Any]] = {}
_DECISIONS_STATE: list[tuple[int, int, int] | None] = [None]


def _state(native_formulas: Mapping[Any, Any]) -> tuple[int, int, int]:
    """What the remembered decisions depend on: the registry object and both registries' sizes."""
    return (id(native_formulas), len(native_formulas), len(operators.SUPPLEMENTAL_FORMULAS))


def _forget_if_changed(native_formulas: Mapping[Any, Any]) -> None:
    """Drop the kept decisions and entries when PyTorch's registry or TorchScan's table changed."""
    state = _state(native_formulas)
    if _DECISIONS_STATE[0] != state:
        _DECISIONS.clear()
        _ENTRIES.clear()
        _DECISIONS_STATE[0] = state


def _decision(
    func: Any, custom: Mapping[Any, Any], native_formulas: Mapping[Any, Any]
) -> tuple[str, str | None, Any]:
    """:func:`_decide`, remembered per overload when there is no caller mapping."""
    if custom:
        return _decide(func, custom, native_formulas)
    _forget_if_changed(native_formulas)
    decision = _DECISIONS.get(func)
    if decision is None:
        decision = _DECISIONS[func] = _decide(func, custom, native_formulas)
    return decision


_FAST: dict[Any, FastCounter | None] = {}  # formula -> its one-pass counter, built once per process


def _fast(formula: Callable[..., int] | None) -> FastCounter | None:
    counter = _FAST.get(formula, False)
    if counter is False:
        counter = _FAST[formula] = fast_counter(formula)
    return counter  # type: ignore[return-value]


def resolve(
    func: Any, custom: Mapping[Any, Callable[..., int]], native_formulas: Mapping[Any, Callable[..., int]]
) -> Entry:
    """Decide how the calls of one overload are counted (see :func:`_resolve`); a fresh entry.

    Without a caller mapping the entry is copied from one kept per overload while the decisions are
    (issue #36: an analysis resolves each overload it meets, and building the entry again each time
    was a visible share of a small model's analysis).
    """
    if custom:
        return _resolve(func, custom, native_formulas)
    _forget_if_changed(native_formulas)
    known = _ENTRIES.get(func)
    # the formula is the one TorchScan's table holds now (a test may swap one for another)
    if known is not None and operators.supplemental_formula(known[1]) is known[2]:
        return replace(known[0])
    template = _resolve(func, custom, native_formulas)
    if template.kind == INHERITED:  # PyTorch's formula is read from its registry each time
        return template
    key = str(_decision(func, custom, native_formulas)[2].overloadpacket)
    _ENTRIES[func] = (template, key, operators.supplemental_formula(key))
    return replace(template)


def _resolve(
    func: Any, custom: Mapping[Any, Callable[..., int]], native_formulas: Mapping[Any, Callable[..., int]]
) -> Entry:
    """Decide how the calls of one overload are counted (the observer caches the decision).

    ``custom`` holds the caller's formulas already wrapped (:func:`wrap_caller_formula`),
    ``native_formulas`` PyTorch's registry (:func:`native_registry`). The decision is
    :func:`classify_overload`'s (families.md 1, torch-versions.md 1): caller formula > nearest
    resampling ignored > a C++ composite decomposed > TorchScan's formula > the ignored tables >
    metadata (tags, alias schemas, complex views) > data-dependent selection > pointwise fallback >
    PyTorch's inherited formula > uncounted. C++ composites are decomposed even when a formula exists
    for their packet so that ``torch.inference_mode`` counts exactly the operators ``torch.no_grad``
    would (real-models.md 2.3). An inherited entry records whether its formula was checked on this
    torch (``verified``); the observer leaves an unchecked one's count out of the totals.
    """
    kind_name, reason, counted_as = _decision(func, custom, native_formulas)
    name = str(func.overloadpacket)  # reported under its own name ...
    packet = counted_as.overloadpacket  # ... counted by its functional sibling's formula (out=, in-place)
    key = str(packet)
    kind = CLASSIFICATION_KINDS[kind_name]
    if kind_name == "custom":
        return Entry(name, kind, custom[packet])
    if kind_name == "inherited":
        native = native_formulas[packet]
        return Entry(name, kind, native_caller(native), verified=inherited_verified(key, native))
    if kind_name == "supplemental":
        formula = operators.supplemental_formula(key)
        entry = Entry(name, kind, formula)
        predicate = operators.IGNORED_UNLESS_ACCUMULATING.get(key)
        if predicate is not None:
            entry.ignore_when, entry.reason = predicate, reason
        else:
            entry.fast = _fast(formula)
        return entry
    if kind_name == "pointwise":
        formula = operators.pointwise_fallback()
        return Entry(name, kind, formula, fast=_fast(formula))
    if kind_name == "foreach":  # counted_as is the per-tensor base overload
        base_kind, _, _ = _decision(counted_as, {}, native_formulas)
        per_tensor = operators.pointwise_fallback() if base_kind == "pointwise" else None
        per_tensor = per_tensor or operators.supplemental_formula(key)
        assert per_tensor is not None  # _decide said the base has a formula
        return Entry(name, kind, optimizer_ops.foreach_each(per_tensor))
    return Entry(name, kind, None, reason)
