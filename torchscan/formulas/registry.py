"""One registry per metric, keyed by module type and resolved through the MRO.

Formulas are small pure functions. A formula returns a number (or ``None`` for "not applicable"
receptive fields) and raises :class:`UnsupportedConfiguration` (a ``NotImplementedError``) with the
spec's wording when the module's configuration is outside what it describes. Formulas never warn,
print, or build reports.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from torch import nn

F = TypeVar("F", bound=Callable[..., Any])


class UnsupportedConfiguration(NotImplementedError):
    """A recognised module type in a configuration its formula does not cover."""


class NotRecognised(LookupError):
    """The registered family does not describe this module after all (formulas.md A.3).

    Raised by the older families (Linear, convolutions, BatchNorm, LayerNorm, legacy activations,
    pooling, dropout, Identity/Flatten/Unflatten) when the module's ``forward`` is not the family's
    native ``forward``. Callers treat it exactly like a failed :meth:`FormulaRegistry.lookup`: the
    module type is not recognised (``partial`` 0 with ``unsupported_module_metric`` in reports, the
    ``Module type not supported`` warning in ``torchscan.modules``). It is deliberately *not* a
    ``NotImplementedError``, so it can never be mistaken for :class:`UnsupportedConfiguration`.
    """


# The four formulas of a module class (see :func:`leaf_formulas`); emptied by every registration.
_LEAF_PLANS: dict[type, tuple[Callable[..., Any], ...] | None] = {}


class FormulaRegistry(Generic[F]):
    """Maps module classes to formulas of one metric; lookups walk ``type(module).__mro__``."""

    def __init__(self, metric: str) -> None:
        self.metric = metric
        self._table: dict[type[nn.Module], F] = {}
        self._cache: dict[type, F | None] = {}

    def register(self, *module_types: type[nn.Module]) -> Callable[[F], F]:
        """Decorator registering one formula for each of ``module_types``.

        Raises ``TypeError`` for a key that is not an ``nn.Module`` subclass and ``ValueError`` for
        a type registered twice in this metric's table.
        """
        for module_type in module_types:
            if not (isinstance(module_type, type) and issubclass(module_type, nn.Module)):
                raise TypeError(f"{self.metric} formulas register nn.Module subclasses, got {module_type!r}")
            if module_type in self._table:
                raise ValueError(f"{module_type.__name__} already has a {self.metric} formula")

        def decorate(formula: F) -> F:
            for module_type in module_types:
                self._table[module_type] = formula
            self._cache.clear()
            _LEAF_PLANS.clear()
            return formula

        return decorate

    def lookup(self, module_type: type) -> F | None:
        """Return the formula of the closest registered class in the MRO, or ``None``."""
        try:
            return self._cache[module_type]
        except KeyError:
            found = next((self._table[k] for k in module_type.__mro__ if k in self._table), None)
            self._cache[module_type] = found
            return found

    def __contains__(self, module_type: type) -> bool:
        return self.lookup(module_type) is not None

    def registered_directly(self, module_type: type) -> bool:
        """True when ``module_type`` itself holds a formula (not one inherited through its MRO)."""
        return module_type in self._table


# The four module-formula tables (formulas.md Part A). Signatures:
#   flops(module, inputs: tuple, output) -> int          (whole ordered inputs and output)
#   macs / dmas(module, inp: Tensor, out: Tensor) -> int (first input / output tensor)
#   receptive_field(module, inp, out) -> (rf, stride, padding) | None (None: not applicable)
flops: FormulaRegistry[Callable[..., int]] = FormulaRegistry("module_flops")
macs: FormulaRegistry[Callable[..., int]] = FormulaRegistry("macs")
dmas: FormulaRegistry[Callable[..., int]] = FormulaRegistry("dmas")
receptive_field: FormulaRegistry[Callable[..., tuple[float, float, float] | None]] = FormulaRegistry(
    "receptive_field"
)


def has_native_forward(module: nn.Module, native_type: type[nn.Module]) -> bool:
    """True when ``module`` runs ``native_type.forward`` unchanged (no override, no instance patch)."""
    return "forward" not in module.__dict__ and type(module).forward is native_type.forward


def defined_in_torch(module_type: type) -> bool:
    """True for a class defined in PyTorch itself (``torch.*``), whose forward the families describe."""
    return str(getattr(module_type, "__module__", "")).partition(".")[0] == "torch"


def may_refuse(module_type: type) -> bool:
    """True when a leaf's module formula may not describe the forward it runs (real-models.md 1 (b)).

    Built-in families describe PyTorch's own classes: a class defined outside PyTorch that inherits a
    formula through its MRO (torchvision's ``LayerNorm2d(nn.LayerNorm)``, transformers'
    ``FalconLinear(nn.Linear)``, OPT's learned positional ``Embedding``) runs a forward the family may
    refuse (``NotRecognised``, the exact-native rule of A.3). The recorder keeps such a call's
    operators so that, when the formula refuses, the call is estimated from them instead of being left
    unknown. A formula that accepts the call still wins (its operators then go unused). PyTorch's own
    subclasses (``BatchNorm2d`` of ``_BatchNorm``) keep the family's forward and are not watched. An
    instance whose ``forward`` was replaced is not watched either: formulas.md C9 keeps it incomplete
    (the object claims a native type it no longer behaves as).
    """
    return not flops.registered_directly(module_type) and not defined_in_torch(module_type)


def leaf_formulas(module_type: type) -> tuple[Callable[..., Any], ...] | None:
    """``(flops, macs, dmas, receptive_field)`` formulas of a class when it has all four, else ``None``.

    Looked up once per class (until the next registration): the estimator runs it on every leaf call.
    """
    try:
        return _LEAF_PLANS[module_type]
    except KeyError:
        tables: tuple[FormulaRegistry[Any], ...] = (flops, macs, dmas, receptive_field)
        found: tuple[Callable[..., Any], ...] = tuple(
            formula for table in tables if (formula := table.lookup(module_type)) is not None
        )
        plan = found if len(found) == len(tables) else None
        _LEAF_PLANS[module_type] = plan
        return plan
