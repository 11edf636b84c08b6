"""Per-module formula functions callable on one observed call (formulas.md A.1).

These are the public compatibility entry points over the formula registries. They are the only
place that turns "module type not recognised" into a warning. ``module_flops``, ``module_macs`` and
``module_dmas`` treat a call they cannot count the same way, one rule for all three (truth.md 6):

* an unrecognised type (no registered family, or an older family whose ``forward`` was changed,
  signalled by :class:`~torchscan.formulas.registry.NotRecognised`) emits
  ``UserWarning("Module type not supported: <ClassName>")`` and returns ``0``, whatever the
  arguments (``module_rf``: ``(1.0, 1.0, 0.0)``);
* a recognised type raises: ``ValueError`` when the call exposes no input or no output tensor,
  ``NotImplementedError`` (precisely :class:`~torchscan.formulas.registry.UnsupportedConfiguration`)
  with the spec's reason for a configuration its formula does not cover.

The only differences are the spec's own per-metric conventions: ``Identity`` and ``Flatten`` count
0 FLOPs whatever the input's dtype or layout (A.1), and a zero-batch ``MultiheadAttention`` has
FLOPs but no MACs or DMAs (extensions spec 15.6). A nested (ragged) call of a row-wise family
(:mod:`torchscan.formulas.ragged`) is counted on its rows, as ``crawl_module`` counts it.

Counts describe a nominal dense algorithm: they are not kernel instruction counts, not bytes, not
latency. None of these functions builds a ``MetricResult``; ``crawl_module`` does that.
"""

from __future__ import annotations

import warnings
from typing import Any

from torch import Tensor, nn

from torchscan.formulas import ragged, registry  # importing the package registers every family
from torchscan.formulas.attention import NATIVE_TYPES
from torchscan.formulas.attention_costs import native_dmas, native_flops, native_macs
from torchscan.formulas.attention_layers import native_spec
from torchscan.formulas.tensors import first_tensor

__all__ = ["module_dmas", "module_flops", "module_macs", "module_rf"]

UNRECOGNISED_RF = (1.0, 1.0, 0.0)


MISSING_TENSORS = "Module formulas need an input tensor and an output tensor."


def _ordered(inputs: Any) -> tuple[Any, ...]:
    """The ordered input tuple: a tuple or list as given, any other single value as a 1-tuple."""
    return tuple(inputs) if isinstance(inputs, tuple | list) else (inputs,)


def _call(module: nn.Module, inputs: Any, out: Any) -> tuple[tuple[Any, ...], Tensor, Tensor, Any]:
    """``(ordered inputs, first input tensor, first output tensor, output)`` of a recognised type.

    Raises ``ValueError`` when either tensor is missing (the same for all three metrics); a nested
    call of a row-wise family becomes its dense stand-in (:func:`torchscan.formulas.ragged.dense_call`).
    """
    ordered = _ordered(inputs)
    inp, first_out = first_tensor(ordered), first_tensor(out)
    if inp is None or first_out is None:
        raise ValueError(MISSING_TENSORS)
    if inp.is_nested or first_out.is_nested:
        stand_in = ragged.dense_call(module, ordered, inp, first_out)
        if stand_in is not None:
            ordered, inp, first_out = stand_in
            return ordered, inp, first_out, first_out
    return ordered, inp, first_out, out


def _unsupported(module: nn.Module, fallback: Any) -> Any:
    warnings.warn(f"Module type not supported: {type(module).__name__}", UserWarning, stacklevel=4)
    return fallback


def _apply(table: registry.FormulaRegistry[Any], module: nn.Module, fallback: Any, *args: Any) -> Any:
    """Run the formula of ``module``'s type, or warn and return ``fallback`` when it is not recognised."""
    formula = table.lookup(type(module))
    if formula is not None:
        try:
            return formula(module, *args)
        except registry.NotRecognised:
            pass
    return _unsupported(module, fallback)


def _first_tensors(
    table: registry.FormulaRegistry[Any], module: nn.Module, inp: Any, out: Any
) -> tuple[Any, Any]:
    """The first input and output tensors a MACs, DMAs or receptive-field formula reads.

    An unrecognised type gets its arguments back unread (:func:`_apply` then warns and returns 0).
    """
    if table.lookup(type(module)) is None:
        return inp, out
    _, first_in, first_out, _ = _call(module, inp, out)
    return first_in, first_out


def _native(module: nn.Module, inputs: Any, field: str) -> int | None:
    """The complete-call estimate ``crawl_module`` gives a native attention/Transformer type.

    ``None`` for every other type. These types need the whole ordered input tuple (query, key and
    value; src and tgt), so a lone tensor is only their first argument. A configuration the
    native boundary refuses (training mode, a subclass, complex parameters...) raises
    ``NotImplementedError`` with its reason, exactly as the analysis reports it unavailable.
    """
    if type(module) not in NATIVE_TYPES:
        return None
    args = _ordered(inputs)
    if field == "module_flops" and type(module) is nn.MultiheadAttention:
        # The narrower module-FLOP boundary of extensions-and-transformers.md 15.6, as the analysis.
        return native_flops(native_spec(module, args, {}, strict=False))
    cost = {"module_flops": native_flops, "macs": native_macs, "dmas": native_dmas}[field]
    return cost(native_spec(module, args, {}))


def module_flops(module: nn.Module, inputs: Any, out: Any) -> int:
    """Module-formula FLOPs of one call of ``module``.

    ``inputs`` is the call's input tuple ordered by the ``forward`` signature (a lone tensor is
    accepted as a one-element tuple) and ``out`` the whole output. Not operator FLOPs: the two
    methods are never interchangeable (formulas.md B.11).
    """
    native = _native(module, inputs, "module_flops")
    if native is not None:
        return native
    ordered, output = _ordered(inputs), out
    if registry.flops.lookup(type(module)) is not None:
        ordered, _, _, output = _call(module, inputs, out)
    return _apply(registry.flops, module, 0, ordered, output)


def module_macs(module: nn.Module, inp: Any, out: Any) -> int:
    """Multiply-accumulates of one call, from its first input tensor and first output tensor.

    ``inp``/``out`` may also be containers; their first tensor (depth-first) is used. For
    ``nn.MultiheadAttention`` and the ``nn.Transformer*`` types ``inp`` is the ordered input tuple
    (as for :func:`module_flops`), and the result equals ``crawl_module``'s.
    """
    native = _native(module, inp, "macs")
    if native is not None:
        return native
    return _apply(registry.macs, module, 0, *_first_tensors(registry.macs, module, inp, out))


def module_dmas(module: nn.Module, inp: Any, out: Any) -> int:
    """Logical element reads and writes of one call (DMAs): not bytes and not measured traffic.

    Inputs as for :func:`module_macs` (the ordered input tuple for the native attention types).
    """
    native = _native(module, inp, "dmas")
    if native is not None:
        return native
    return _apply(registry.dmas, module, 0, *_first_tensors(registry.dmas, module, inp, out))


def module_rf(module: nn.Module, inp: Any, out: Any) -> tuple[float, float, float] | None:
    """Local ``(receptive_field, effective_stride, effective_padding)`` of one call (formulas.md A.6).

    ``None`` means the spatial receptive field is meaningless for the family (not applicable). A
    transposed convolution reports a negative field and a fractional stride by convention.
    """
    first = _first_tensors(registry.receptive_field, module, inp, out)
    return _apply(registry.receptive_field, module, UNRECOGNISED_RF, *first)  # type: ignore[no-any-return]
