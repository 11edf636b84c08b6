"""Shared vocabulary of the operator-level formulas and the B.7 dtype rules (formulas.md B.7–B.9).

An operator formula receives what ``__torch_dispatch__`` received — the real positional ``args``,
the real ``kwargs`` and the real output — and returns a Python ``int``. It reads shapes, dtypes,
Python scalars and keyword options only: never tensor values (meta tensors work) and never a tensor
operation (so nothing it does can be dispatched or counted).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import torch

OperatorFormula = Callable[[tuple, dict, object], int]
"""``formula(args, kwargs, out) -> int`` with the arguments and output as dispatched."""


class UnsupportedOperatorFormula(Exception):
    """A supplemental formula cannot describe this call; ``str(exc)`` is the spec's exact reason.

    The engine turns it into an ``unsupported_operator_formula`` diagnostic and counts the call as 0
    (a lower bound, never a complete zero).
    """


def arg(args: tuple, kwargs: dict, index: int, name: str, default: Any = None) -> Any:
    """Return schema argument ``name`` (position ``index``), from kwargs, args, or ``default``."""
    if name in kwargs:
        return kwargs[name]
    if len(args) > index:
        return args[index]
    return default


def iter_tensors(obj: object) -> Iterator[torch.Tensor]:
    """Yield the tensors of ``obj`` in a depth-first walk of tuples, lists and mapping values."""
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (tuple, list)):
        for item in obj:
            yield from iter_tensors(item)
    elif isinstance(obj, dict):
        for item in obj.values():
            yield from iter_tensors(item)


def first_tensor(obj: object) -> torch.Tensor | None:
    """The first tensor of ``obj`` (depth-first), or ``None`` when it holds none."""
    if isinstance(obj, torch.Tensor):
        return obj
    return next(iter_tensors(obj), None)


def elements(obj: object) -> int:
    """Element count of the first tensor of ``obj`` (0 when there is none), from its shape only."""
    tensor = first_tensor(obj)
    return 0 if tensor is None else math.prod(tensor.shape)


def dim_size(tensor: torch.Tensor, dim: int) -> int:
    """Size of ``tensor`` along ``dim``; a 0-d tensor behaves as one element along its only axis."""
    return int(tensor.shape[dim]) if tensor.dim() > 0 else 1


# --- B.7: dtype rules ----------------------------------------------------------------------------

COMPLEX_REASON = "Supplemental FLOP formulas cover real arithmetic only."
INTERPOLATION_REASON = "Interpolation FLOPs require floating inputs."

DtypeRule = Callable[[tuple, dict, object], bool]
"""``rule(args, kwargs, out)``: True to count the call, False for an integer/boolean call that counts
0; raises :class:`UnsupportedOperatorFormula` for complex values."""


_FLOATING, _COMPLEX = 1, 2


_DTYPE_KINDS: dict[torch.dtype, int] = {}


def _dtype_kind(dtype: torch.dtype) -> int:
    kind = _DTYPE_KINDS.get(dtype)
    if kind is None:
        kind = _COMPLEX if dtype.is_complex else _FLOATING if dtype.is_floating_point else 0
        _DTYPE_KINDS[dtype] = kind
    return kind


# Values that never hold a floating or complex value: skipped without the isinstance chain below.
_PLAIN = frozenset({int, bool, str, type(None)})


def _value_kinds(obj: object) -> int:
    """Bit mask of floating (1) / complex (2) tensors, Python scalars and dtypes inside ``obj``."""
    if isinstance(obj, torch.Tensor):
        return _dtype_kind(obj.dtype)
    if isinstance(obj, (tuple, list)):
        return _items_kinds(obj)
    if isinstance(obj, dict):
        return _items_kinds(obj.values())
    if isinstance(obj, torch.dtype):
        return _dtype_kind(obj)
    if isinstance(obj, complex):
        return _COMPLEX
    return _FLOATING if isinstance(obj, (float, torch.SymFloat)) else 0


def _items_kinds(items: Iterable[object]) -> int:
    """:func:`_value_kinds` of a container: the items' masks or-ed, plain ints and ``None`` skipped.

    Runs for every counted call of a supplemental formula (operator arguments are mostly tensors,
    sizes and flags), so the common items are handled inline rather than by recursion.
    """
    kinds = 0
    tensor = torch.Tensor
    for item in items:
        if type(item) in _PLAIN:
            continue
        if isinstance(item, tensor):
            kinds |= _dtype_kind(item.dtype)
        elif type(item) is tuple or type(item) is list:
            kinds |= _items_kinds(item)
        else:
            kinds |= _value_kinds(item)
    return kinds


def _counts(values: tuple) -> bool:
    """True when ``values`` involve floating values; raises for complex ones (B.7.2)."""
    kinds = _items_kinds(values)
    if kinds & _COMPLEX:
        raise UnsupportedOperatorFormula(COMPLEX_REASON)
    return bool(kinds & _FLOATING)


def involves_floating(args: tuple, kwargs: dict, out: object = None) -> bool:
    """Input rule (comparisons, ``all``/``any``): any floating tensor argument, scalar or dtype."""
    return _counts((args, kwargs))


def floating_result(args: tuple, kwargs: dict, out: object) -> bool:
    """Default rule (real-models.md 2.2): the call counts unless its **result** is integer/boolean.

    ``sigmoid`` of an int tensor produces floating values and counts; ``int64 + 1`` does not. A call
    without a tensor result falls back to the input rule. Complex inputs or results raise (B.7.2).
    """
    floating = _counts((args, kwargs, out))
    result = first_tensor(out)
    return floating if result is None else result.dtype.is_floating_point


def division_result(args: tuple, kwargs: dict, out: object = None) -> bool:
    """``div``: true division always counts (it promotes integers to floating values); a rounded
    division (``rounding_mode`` ``"floor"``/``"trunc"``) counts when its **result** is floating
    (truth.md 3: divide and round) and 0 when it is integer (B.7.1). ``floor_divide`` always rounds:
    it takes the plain result rule, :func:`floating_result`. Complex values raise (B.7.2) unless a
    complex-aware rule (:func:`complex_counted`) admits them first."""
    if kwargs.get("rounding_mode") is None:
        _counts((args, kwargs))
        return True
    return floating_result(args, kwargs, out)


def is_rounded_division(args: tuple, kwargs: dict) -> bool:
    """Whether a ``div`` call rounds its quotient (``rounding_mode`` ``"floor"`` or ``"trunc"``)."""
    return kwargs.get("rounding_mode") is not None


def is_complex_value(value: object) -> bool:
    """Whether one operand is complex: a complex tensor, a Python ``complex``, or a complex dtype."""
    return bool(_value_kinds(value) & _COMPLEX)


def complex_counted(rule: DtypeRule) -> DtypeRule:
    """The dtype rule of a formula written for complex values too (truth.md 3: complex ``mul``,
    ``add``, ``sub``, ``div``, ``abs``, ...): a call with a complex operand always counts (the formula
    prices its real arithmetic), any other call follows ``rule`` (integer/boolean results count 0).

    Only the operands (``args`` and keyword operands other than ``out``) decide: a complex ``out=``
    buffer receiving real arithmetic is no complex arithmetic, and ``rule`` still rejects it (B.7.2).
    """

    def counted(args: tuple, kwargs: dict, out: object = None) -> bool:
        operands = [value for key, value in kwargs.items() if key != "out"] if kwargs else []
        if _items_kinds(args) & _COMPLEX or _items_kinds(operands) & _COMPLEX:
            return True
        return rule(args, kwargs, out)

    counted.__name__ = counted.__qualname__ = f"complex_counted_{getattr(rule, '__name__', 'rule')}"
    counted.real_rule = rule  # type: ignore[attr-defined]  # the rule of real calls (analysis/dispatch/fast_counts.py)
    return counted


def filled_tensor(args: tuple, kwargs: dict, out: object = None) -> bool:
    """``masked_fill``: only the filled tensor's dtype decides (not the mask, value or buffer)."""
    return _counts((args[0],))


def tensor_operands(args: tuple, kwargs: dict, out: object = None) -> bool:
    """``addcmul``/``addcdiv``: the three tensor operands decide; coefficient and buffer do not."""
    return _counts(tuple(args[:3]))


def reduction_dtype(args: tuple, kwargs: dict, out: object = None) -> bool:
    """``sum``/``mean``: requested ``dtype``, else the ``out`` buffer's dtype, else the input's."""
    dtype = kwargs.get("dtype")
    if dtype is None:
        buffer = first_tensor(kwargs.get("out"))
        dtype = (buffer if buffer is not None else args[0]).dtype
    return _counts((dtype,))


def floating_input(args: tuple, kwargs: dict, out: object = None) -> bool:
    """Interpolation weights are real: a non-floating input is unsupported rather than free."""
    if not _counts((args[0],)):
        raise UnsupportedOperatorFormula(INTERPOLATION_REASON)
    return True


def first_operand(args: tuple, kwargs: dict, out: object = None) -> bool:
    """Library kernels whose arithmetic is that of their first tensor (``nms`` boxes, ``roi_align``
    features): an integer result (kept indices) or a float option (IoU threshold) does not decide."""
    return _counts((args[0],))


POWER_SUM_SIMPLE_ORDERS = (1, 2)
"""Orders whose ``|x|^ord`` is one operation per element (``abs``, a square); any other order —
0 and ±inf included, which ``Σ|x|^ord`` evaluates as powers (``|x|^0 = 1``), not as a count or a
maximum — takes ``abs`` and ``pow``."""


def power_sum_flops(elements_in: int, elements_out: int, order: object) -> int:
    """``Σ |x|^ord`` over rows: 1 operation per element for :data:`POWER_SUM_SIMPLE_ORDERS`, else 2
    (``abs``, ``pow``), and ``k − 1`` adds (or comparisons) per reduced row of ``k``."""
    per_element = 1 if order in POWER_SUM_SIMPLE_ORDERS else 2
    return per_element * elements_in + max(elements_in - elements_out, 0)


def round_half_up(value: float) -> int:
    """``value`` rounded to the nearest integer, halves upwards (formulas are non-negative counts)."""
    return math.floor(value + 0.5)
