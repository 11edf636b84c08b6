"""Element-wise arithmetic whose cost depends on its operands' kinds (formulas.md B.8, truth.md 3).

``mul``, ``add``, ``sub``, ``rsub``, ``div`` (true and rounded), ``floor_divide``, ``abs``, ``neg`` and
``sgn`` count the real arithmetic of the values they combine. On real values each elementary
operation costs 1 per output element (B.8). On complex values the formulas price the real operations
a complex operation is made of (truth.md 3), with ``z = a + bi`` and ``w = c + di``:

======================  ==========================================================================
complex × complex        6: ``(ac − bd) + (ad + bc)i``, four multiplies and two additions
complex × real           2: each part scaled (either order)
complex ± any            2: the real and the imaginary parts are added (a real operand adds a zero
                         imaginary part: the spec prices every complex addition alike)
complex ÷ complex        11: numerator ``z·w̄`` 6, denominator ``c² + d²`` 3, two real divisions
complex ÷ real           2: each part divided
real ÷ complex           7: numerator ``a·w̄`` 2, denominator 3, two real divisions
``abs`` (complex)        4: ``√(a² + b²)``, two multiplies, an addition, a square root
``neg`` (complex)        2: both parts negated
``sgn`` (complex)        6: ``z / |z|``, the ``abs`` 4 and two real divisions
======================  ==========================================================================

Rounded division (``rounding_mode`` ``"floor"``/``"trunc"``, and ``floor_divide``) costs 2 per output
element on a floating result (divide, round) and 0 on an integer one (truth.md 3 supersedes B.7.3).
A caller's ``custom_mapping`` entry still replaces any of these counts (B.2). Formulas read dtypes
and shapes only.
"""

from __future__ import annotations

from collections.abc import Callable

from torchscan.formulas.operator_common import (
    OperatorFormula,
    arg,
    complex_counted,
    division_result,
    elements,
    floating_result,
    is_complex_value,
    is_rounded_division,
)
from torchscan.formulas.operator_registry import register

__all__ = ["product_cost"]


def product_cost(left: object, right: object) -> int:
    """Real FLOPs of one element-wise product of two operands (tensors or Python scalars): complex ×
    complex 6, complex × real 2, real × real 1."""
    complex_left, complex_right = is_complex_value(left), is_complex_value(right)
    if complex_left and complex_right:
        return 6
    return 2 if complex_left or complex_right else 1


@register("mul", rule=complex_counted(floating_result))
def multiply(args: tuple, kwargs: dict, out: object) -> int:
    """``mul(self, other)``: :func:`product_cost` per output element (broadcasting counts the output)."""
    return elements(out) * product_cost(args[0], arg(args, kwargs, 1, "other"))


def _add_sub(scaled_index: int) -> OperatorFormula:
    """Factory: ``add``/``sub`` (``self ± alpha·other``, ``scaled_index`` 1) and ``rsub``
    (``other − alpha·self``, ``scaled_index`` 0).

    Per output element: the addition (1 on real values, 2 when any operand is complex) and, when
    ``alpha ≠ 1``, the product ``alpha·operand`` at :func:`product_cost`. Real values: the B.8 row
    ``out · (1 + [alpha ≠ 1])``.
    """

    def formula(args: tuple, kwargs: dict, out: object) -> int:
        alpha = arg(args, kwargs, 2, "alpha", 1)
        operands = (args[0], arg(args, kwargs, 1, "other"))
        complex_call = any(is_complex_value(value) for value in (*operands, alpha))
        cost = 2 if complex_call else 1
        if alpha != 1:
            cost += product_cost(alpha, operands[scaled_index])
        return elements(out) * cost

    formula.__name__ = formula.__qualname__ = "reverse_subtract" if scaled_index == 0 else "add_subtract"
    formula.__doc__ = _add_sub.__doc__
    return formula


register("add", "sub", rule=complex_counted(floating_result))(_add_sub(1))
register("rsub", rule=complex_counted(floating_result))(_add_sub(0))


@register("div", rule=complex_counted(division_result))
def divide(args: tuple, kwargs: dict, out: object) -> int:
    """``div(self, other, rounding_mode=None)`` per output element.

    True division of real values 1; rounded division (``"floor"``, ``"trunc"``) of real values 2
    (divide, then round) when the result is floating — an integer result counts 0 (the dtype rule).
    Complex operands (torch rejects rounding them): complex ÷ complex 11, complex ÷ real 2, real ÷
    complex 7 (module docstring).
    """
    numerator, denominator = args[0], arg(args, kwargs, 1, "other")
    if is_complex_value(denominator):
        return elements(out) * (11 if is_complex_value(numerator) else 7)
    if is_complex_value(numerator):
        return 2 * elements(out)
    return elements(out) * (2 if is_rounded_division(args, kwargs) else 1)


@register("floor_divide")
def floor_divide(args: tuple, kwargs: dict, out: object) -> int:
    """``floor_divide(self, other)`` (``//``): a rounded division, 2 per output element (divide, floor)
    on a floating result; integer operands give an integer result and count 0 (Mixtral's
    ``positions // top_k``)."""
    return 2 * elements(out)


def _unary(real: int, complex_cost: int) -> Callable[[tuple, dict, object], int]:
    """Factory: ``real`` FLOPs per output element on real input, ``complex_cost`` on complex input."""

    def formula(args: tuple, kwargs: dict, out: object) -> int:
        return elements(out) * (complex_cost if is_complex_value(args[0]) else real)

    formula.__name__ = formula.__qualname__ = f"unary_x{real}_complex_x{complex_cost}"
    formula.__doc__ = f"{real} FLOP(s) per output element; {complex_cost} on a complex input."
    return formula


register("abs", rule=complex_counted(floating_result))(_unary(1, 4))
register("neg", rule=complex_counted(floating_result))(_unary(1, 2))
register("sgn", rule=complex_counted(floating_result))(_unary(1, 6))
# the materialised conjugate (hfft/ihfft conjugate their spectrum): the imaginary part negated, 1 per
# complex element; on real values the pointwise fallback's 1 per element, as before
register("_conj_physical", "conj_physical", rule=complex_counted(floating_result))(_unary(1, 1))
