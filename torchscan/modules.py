"""Per-module formula functions callable on one observed call (formulas.md A.1).

These are the public compatibility entry points over the formula registries. They are the only
place that turns "module type not recognised" into a warning: an unrecognised type (no registered
family, or an older family whose ``forward`` was changed, signalled by
:class:`~torchscan.formulas.registry.NotRecognised`) emits ``UserWarning("Module type not supported:
<ClassName>")`` and returns ``0`` (``module_rf``: ``(1.0, 1.0, 0.0)``). A recognised type in a
configuration its formula does not cover raises ``NotImplementedError`` (precisely
:class:`~torchscan.formulas.registry.UnsupportedConfiguration`) with the spec's reason.

Counts describe a nominal dense algorithm: they are not kernel instruction counts, not bytes, not
latency. None of these functions builds a ``MetricResult``; ``crawl_module`` does that.
"""

from __future__ import annotations

import warnings
from typing import Any

from torch import Tensor, nn

from torchscan.formulas import registry  # importing the package registers every family
from torchscan.formulas.attention import NATIVE_TYPES
from torchscan.formulas.attention_costs import native_dmas, native_flops, native_macs
from torchscan.formulas.attention_layers import native_spec
from torchscan.formulas.tensors import first_tensor

__all__ = ["module_dmas", "module_flops", "module_macs", "module_rf"]

UNRECOGNISED_RF = (1.0, 1.0, 0.0)


def _tensor(value: Any, role: str) -> Tensor:
    tensor = first_tensor(value)
    if tensor is None:
        raise ValueError(f"Module formulas need an {role} tensor.")
    return tensor


def _apply(table: registry.FormulaRegistry[Any], module: nn.Module, fallback: Any, *args: Any) -> Any:
    """Run the formula of ``module``'s type, or warn and return ``fallback`` when it is not recognised."""
    formula = table.lookup(type(module))
    if formula is not None:
        try:
            return formula(module, *args)
        except registry.NotRecognised:
            pass
    warnings.warn(f"Module type not supported: {type(module).__name__}", UserWarning, stacklevel=3)
    return fallback


def _native(module: nn.Module, inputs: Any, field: str) -> int | None:
    """The complete-call estimate ``crawl_module`` gives a native attention/Transformer type.

    ``None`` for every other type. These types need the whole ordered input tuple (query, key and
    value; src and tgt), so a lone tensor is only their first argument. A configuration the
    native boundary refuses (training mode, a subclass, complex parameters...) raises
    ``NotImplementedError`` with its reason, exactly as the analysis reports it unavailable.
    """
    if type(module) not in NATIVE_TYPES:
        return None
    args = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
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
    ordered = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    return _apply(registry.flops, module, 0, ordered, out)


def module_macs(module: nn.Module, inp: Any, out: Any) -> int:
    """Multiply-accumulates of one call, from its first input tensor and first output tensor.

    ``inp``/``out`` may also be containers; their first tensor (depth-first) is used. For
    ``nn.MultiheadAttention`` and the ``nn.Transformer*`` types ``inp`` is the ordered input tuple
    (as for :func:`module_flops`), and the result equals ``crawl_module``'s.
    """
    native = _native(module, inp, "macs")
    if native is not None:
        return native
    if registry.macs.lookup(type(module)) is not None:
        inp, out = _tensor(inp, "input"), _tensor(out, "output")
    return _apply(registry.macs, module, 0, inp, out)


def module_dmas(module: nn.Module, inp: Any, out: Any) -> int:
    """Logical element reads and writes of one call (DMAs): not bytes and not measured traffic.

    Inputs as for :func:`module_macs` (the ordered input tuple for the native attention types).
    """
    native = _native(module, inp, "dmas")
    if native is not None:
        return native
    if registry.dmas.lookup(type(module)) is not None:
        inp, out = _tensor(inp, "input"), _tensor(out, "output")
    return _apply(registry.dmas, module, 0, inp, out)


def module_rf(module: nn.Module, inp: Any, out: Any) -> tuple[float, float, float] | None:
    """Local ``(receptive_field, effective_stride, effective_padding)`` of one call (formulas.md A.6).

    ``None`` means the spatial receptive field is meaningless for the family (not applicable). A
    transposed convolution reports a negative field and a fractional stride by convention.
    """
    if registry.receptive_field.lookup(type(module)) is not None:
        inp, out = _tensor(inp, "input"), _tensor(out, "output")
    return _apply(registry.receptive_field, module, UNRECOGNISED_RF, inp, out)
