"""Checks that a module really is the native family its registry entry describes (formulas.md A.3).

Two policies exist, matching the two generations of families:

* older families (Linear, convolutions, BatchNorm, LayerNorm, legacy activations, pooling, dropout,
  Identity/Flatten/Unflatten) accept subclasses but raise :class:`NotRecognised` when the forward
  that runs is not the native one — the caller then treats the module as an unrecognised type;
* newer families (A.5.6-A.5.8, GroupNorm, RMSNorm, A.5.13) require the exact native type with an
  unchanged forward and raise :class:`UnsupportedConfiguration` with the spec's reason otherwise.
"""

from __future__ import annotations

from torch import nn

from torchscan.formulas.registry import NotRecognised, UnsupportedConfiguration

PRIMITIVE_REASON = "Primitive estimates require exact native types with unchanged forward methods."
LAYOUT_REASON = "Layout estimates require unchanged native forwards."


# (module class, natives) -> whether the class keeps the forward of its closest class in ``natives``.
# Formulas run four times per layer call, so the MRO walk is done once per class.
_CLASS_KEEPS_FORWARD: dict[tuple[type, tuple[type[nn.Module], ...]], bool] = {}


def _class_keeps_forward(cls: type, natives: tuple[type[nn.Module], ...]) -> bool:
    key = (cls, natives)
    try:
        return _CLASS_KEEPS_FORWARD[key]
    except KeyError:
        base = next((k for k in cls.__mro__ if k in natives), None)
        keeps = base is not None and getattr(cls, "forward", None) is base.forward
        _CLASS_KEEPS_FORWARD[key] = keeps
        return keeps


def require_native_forward(module: nn.Module, natives: tuple[type[nn.Module], ...]) -> None:
    """Raise :class:`NotRecognised` unless ``module`` runs the forward of its closest class in ``natives``
    (same rule as :func:`~torchscan.formulas.registry.has_native_forward`, cached per class)."""
    if "forward" in module.__dict__ or not _class_keeps_forward(type(module), natives):
        raise NotRecognised(type(module).__name__)


def require_exact_native(module: nn.Module, natives: tuple[type[nn.Module], ...], reason: str) -> None:
    """Raise :class:`UnsupportedConfiguration` with ``reason`` unless ``type(module)`` is one of ``natives``
    and the instance has no replaced ``forward``."""
    if type(module) not in natives or "forward" in module.__dict__:
        raise UnsupportedConfiguration(reason)
