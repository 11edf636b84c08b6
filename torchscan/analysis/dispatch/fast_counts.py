"""One pass over an ordinary operator call: operand checks, dtype rule and formula together (issue #36).

The observer's general path counts a call of a TorchScan formula in three passes, each a walk over the
operands: the layout check (:mod:`torchscan.analysis.dispatch.operand_checks`), the formula's B.7 dtype rule
(``formulas/operator_common.py``), then the formula. Most calls are ordinary: dense real tensors,
plain Python values and lists of them, real tensor results. For those the three rules that guard
almost every element-wise, product, convolution and reduction formula (``floating_result``,
``any_dtype``, ``division_result``, also behind ``complex_counted``, and ``reduction_dtype``) reduce
to a look at one dtype, so :func:`fast_counter` builds, once per overload, a counter that checks the
operands in one walk and calls the formula itself.

A fast counter answers only what the general path would answer: it returns ``None`` (the observer
then counts the call on the general path, which records what went wrong) for anything else — an
operand it does not recognise, a sparse or nested layout, a complex value or dtype, a result that is
neither a tensor nor a tuple of tensors (a rounded division's must be one tensor), a formula that
raises :class:`~torchscan.formulas.operators.UnsupportedOperatorFormula` or returns a negative count.
Formulas are pure, so running one again there changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchscan.formulas.operator_common import (
    UnsupportedOperatorFormula,
    division_result,
    floating_result,
    reduction_dtype,
)
from torchscan.formulas.product_ops import any_dtype

FastCounter = Callable[[tuple[Any, ...], dict[str, Any], Any], int | None]
"""``counter(args, kwargs, out)``: the call's FLOPs, or ``None`` when the general path must count it."""

_ANY, _RESULT, _DIVISION, _REDUCTION = range(4)
_MODES = {any_dtype: _ANY, floating_result: _RESULT, division_result: _DIVISION, reduction_dtype: _REDUCTION}
# Operand types no dtype rule and no layout check looks into (a float never makes a call complex).
_PLAIN = frozenset({int, bool, float, str, type(None), torch.device, torch.memory_format, torch.layout})
_COMPLEX = frozenset(d for d in vars(torch).values() if isinstance(d, torch.dtype) and d.is_complex)
_TENSOR = torch.Tensor
_STRIDED = torch.strided


def _plain(value: Any) -> bool:
    """Whether one operand is a dense real tensor, a plain value, a real dtype, or a sequence of those."""
    if isinstance(value, _TENSOR):
        return value.layout is _STRIDED and not value.is_nested and value.dtype not in _COMPLEX
    cls = type(value)
    if cls is list or cls is tuple:
        for item in value:
            if type(item) in _PLAIN:
                continue
            if not isinstance(item, _TENSOR) or not _plain(item):
                return False
        return True
    if cls is torch.dtype:
        return not value.is_complex
    return False


def fast_counter(formula: Callable[..., int] | None) -> FastCounter | None:
    """The one-pass counter of a registered TorchScan formula, or ``None`` when its rule needs the
    general path (``involves_floating``, ``reduction_dtype``... read operand kinds this pass skips)."""
    rule = getattr(formula, "dtype_rule", None)
    raw = getattr(formula, "__wrapped__", None)
    if rule is None or raw is None:
        return None
    # complex_counted(rule) admits complex operands first; a call this pass accepts has none
    mode = _MODES.get(getattr(rule, "real_rule", rule))
    if mode is None:
        return None
    plain_types = _PLAIN

    def count(args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> int | None:
        if isinstance(out, _TENSOR):
            if out.dtype in _COMPLEX:
                return None
            result = out
        elif type(out) is tuple and out and mode != _DIVISION:
            # A result of several tensors (native_batch_norm, native_layer_norm, max_pool2d's values
            # and indices): the result rule reads the first, as floating_result's first_tensor does.
            for item in out:
                if not isinstance(item, _TENSOR) or item.dtype in _COMPLEX:
                    return None
            result = out[0]
        else:
            return None
        for value in args:
            if isinstance(value, _TENSOR):  # the common operand, checked inline
                if value.layout is not _STRIDED or value.is_nested or value.dtype in _COMPLEX:
                    return None
            elif type(value) not in plain_types and not _plain(value):
                return None
        if kwargs:
            for value in kwargs.values():
                if type(value) not in plain_types and not _plain(value):
                    return None
            if mode == _DIVISION and kwargs.get("rounding_mode") is not None and not out.is_floating_point():
                return 0  # a rounded division with an integer result (B.7.1)
        if mode == _RESULT and not result.is_floating_point():
            return 0  # an integer or boolean result counts 0 (real-models.md 2.2)
        if mode == _REDUCTION and not reduction_dtype(args, kwargs, out):
            # the rule reads one dtype (requested, else the out buffer's, else the input's); the walk
            # above excluded complex ones, so it cannot raise here
            return 0  # an integer or boolean accumulation counts 0 (B.7)
        try:
            flops = int(raw(args, kwargs, out))
        except UnsupportedOperatorFormula:
            return None
        return flops if flops >= 0 else None

    return count
