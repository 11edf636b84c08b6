"""The table of supplemental operator formulas (``torchscan_flops_v1``) and how formulas join it.

Formulas register once, by bare ``aten`` operator name (or, for a library's kernels, by namespace and
name), guarded by a B.7 *dtype rule*; the engine looks them up by normalized packet name. The formulas
themselves live in ``operators`` (element-wise, reductions, indexing), ``arithmetic_ops`` (real and
complex ``mul``/``add``/``sub``/``div``/``abs``, rounded division), ``operator_layers`` (softmax,
normalization, pooling, attention, recurrent), ``vision_ops`` (torchvision kernels, grid sampling)
and ``spectral_ops`` (FFT, weight norm, ``isin``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator

import torch

from torchscan.formulas.operator_common import DtypeRule, OperatorFormula, elements, floating_result

# --- registration --------------------------------------------------------------------------------

SUPPLEMENTAL_FORMULAS: dict[str, OperatorFormula] = {}
"""Normalized packet name (in-place ``_`` variants included) -> formula ``(args, kwargs, out) -> int``.
Used only for packets without a native PyTorch formula (B.2)."""


def packet_names(name: str) -> Iterator[str]:
    """``aten.<name>`` and, where PyTorch has one, its in-place variant ``aten.<name>_``."""
    yield f"aten.{name}"
    if not name.endswith("_") and hasattr(torch.ops.aten, f"{name}_"):
        yield f"aten.{name}_"


def register(*names: str, rule: DtypeRule = floating_result) -> Callable[[OperatorFormula], OperatorFormula]:
    """Register a shape formula under ``names`` (and their in-place variants), guarded by ``rule``.

    Raises ``TypeError`` for a name that is not a bare operator name and ``ValueError`` for a packet
    registered twice.
    """
    for name in names:
        if not isinstance(name, str) or not name or "." in name:
            raise TypeError(f"supplemental formulas register bare aten operator names, got {name!r}")
    keys = [key for name in names for key in packet_names(name)]
    for key in keys:
        if key in SUPPLEMENTAL_FORMULAS:
            raise ValueError(f"{key} already has a supplemental formula")

    def decorate(formula: OperatorFormula) -> OperatorFormula:
        guarded = _guard(formula, rule)
        for key in keys:
            SUPPLEMENTAL_FORMULAS[key] = guarded
        return formula

    return decorate


def register_library(
    namespace: str, *names: str, rule: DtypeRule = floating_result
) -> Callable[[OperatorFormula], OperatorFormula]:
    """Register a shape formula for a library's operators (``"torchvision", "nms"`` → ``torchvision.nms``).

    Only names are recorded: the library is never imported, so its formulas apply exactly when the
    library itself registered and dispatched the operator. Library operators have no in-place
    variants here. Raises like :func:`register`.
    """
    if not isinstance(namespace, str) or not namespace.isidentifier() or namespace == "aten":
        raise TypeError(f"library formulas register under a library namespace, got {namespace!r}")
    for name in names:
        if not isinstance(name, str) or not name or "." in name:
            raise TypeError(f"library formulas register bare operator names, got {name!r}")
    keys = [f"{namespace}.{name}" for name in names]
    for key in keys:
        if key in SUPPLEMENTAL_FORMULAS:
            raise ValueError(f"{key} already has a supplemental formula")

    def decorate(formula: OperatorFormula) -> OperatorFormula:
        guarded = _guard(formula, rule)
        for key in keys:
            SUPPLEMENTAL_FORMULAS[key] = guarded
        return formula

    return decorate


def _guard(formula: OperatorFormula, rule: DtypeRule) -> OperatorFormula:
    """``formula`` behind its dtype ``rule``: 0 for a call the rule excludes, an ``int`` otherwise."""

    @functools.wraps(formula)
    def guarded(args: tuple, kwargs: dict, out: object) -> int:
        return int(formula(args, kwargs, out)) if rule(args, kwargs, out) else 0

    guarded.dtype_rule = rule  # type: ignore[attr-defined]  # read by analysis/dispatch/fast_counts.py
    return guarded


def supplemental_formula(packet_name: str) -> OperatorFormula | None:
    """The supplemental formula for a normalized packet name (``"aten.add_"``), or ``None``."""
    return SUPPLEMENTAL_FORMULAS.get(packet_name)


# --- factories shared by the element-wise families -----------------------------------------------


def per_output(cost: int) -> OperatorFormula:
    """Factory: ``cost`` FLOPs per output element (broadcasting counts the output)."""

    def formula(args: tuple, kwargs: dict, out: object) -> int:
        return cost * elements(out)

    formula.__name__ = formula.__qualname__ = f"output_elements_x{cost}"
    formula.__doc__ = f"{cost} FLOP(s) per output element."
    return formula


def per_input(cost: int) -> OperatorFormula:
    """Factory: ``cost`` FLOPs per element of the first input."""

    def formula(args: tuple, kwargs: dict, out: object) -> int:
        return cost * elements(args[0])

    formula.__name__ = formula.__qualname__ = f"input_elements_x{cost}"
    formula.__doc__ = f"{cost} FLOP(s) per input element."
    return formula
