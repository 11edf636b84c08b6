"""Pure statistics of ``measure_scaling`` (attention-and-scaling.md 2): polynomial fits and exponents.

Counts are fitted exactly: Newton's divided differences in :class:`fractions.Fraction` give the
unique polynomial of degree at most ``n - 1`` through ``n`` points, and its degree is the highest
order whose divided difference is not zero. That polynomial is recorded only when its degree is at
most ``n - 2``: at least one point beyond the ``degree + 1`` that determine it confirms it (any
``n`` points have a polynomial of degree ``n - 1`` through them, which says nothing about the
counts). Latency is fitted by least squares, solved exactly in rationals over the float medians.
No torch, no floats until the result: the same inputs always give the same report.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

from torchscan.report.scaling_schema import EXACT_METHOD, LEAST_SQUARES_METHOD, PolynomialFit
from torchscan.report.schema import Number

Polynomial = list[Fraction]  # coefficients, lowest order first


def interpolate(xs: Sequence[int], ys: Sequence[Number]) -> Polynomial:
    """The lowest-degree polynomial through every ``(x, y)`` (distinct ``xs``), exact.

    Newton's divided differences, then the Newton form expanded into monomial coefficients; the
    highest non-zero divided difference sets the degree (``[0]`` when every ``y`` is zero).
    """
    if len(xs) != len(ys) or not xs:
        raise ValueError("interpolate needs as many values as sizes, at least one")
    table = [Fraction(y) for y in ys]
    newton = [table[0]]
    for order in range(1, len(xs)):
        table = [(table[i + 1] - table[i]) / (xs[i + order] - xs[i]) for i in range(len(table) - 1)]
        newton.append(table[0])
    degree = max((k for k, c in enumerate(newton) if c != 0), default=0)
    polynomial: Polynomial = [newton[degree]]
    for k in range(degree - 1, -1, -1):  # p = p · (x - xs[k]) + newton[k]
        shifted = [Fraction(0), *polynomial]
        for i, c in enumerate(polynomial):
            shifted[i] -= c * xs[k]
        shifted[0] += newton[k]
        polynomial = shifted
    return polynomial


def least_squares(xs: Sequence[int], ys: Sequence[Number], degree: int) -> Polynomial:
    """Coefficients of the degree-``degree`` polynomial minimising the squared residuals, exact.

    Needs more than ``degree`` distinct ``xs``; the normal equations are solved by Gaussian
    elimination over rationals, so no conditioning is lost however large the sizes.
    """
    if degree < 0 or len(xs) <= degree or len(xs) != len(ys):
        raise ValueError("least_squares needs more distinct sizes than the degree")
    size = degree + 1
    powers = [[Fraction(x) ** k for k in range(size)] for x in xs]
    targets = [Fraction(y) for y in ys]
    matrix = [
        [sum((row[i] * row[j] for row in powers), Fraction(0)) for j in range(size)]
        + [sum((row[i] * t for row, t in zip(powers, targets, strict=True)), Fraction(0))]
        for i in range(size)
    ]
    for column in range(size):
        pivot = next(r for r in range(column, size) if matrix[r][column] != 0)
        matrix[column], matrix[pivot] = matrix[pivot], matrix[column]
        lead = matrix[column][column]
        matrix[column] = [value / lead for value in matrix[column]]
        for r in range(size):
            if r != column and matrix[r][column] != 0:
                factor = matrix[r][column]
                matrix[r] = [a - factor * b for a, b in zip(matrix[r], matrix[column], strict=True)]
    return [matrix[k][size] for k in range(size)]


def evaluate(polynomial: Sequence[Fraction | int], x: int) -> Fraction:
    """``polynomial(x)`` exactly (Horner)."""
    total = Fraction(0)
    for coefficient in reversed(polynomial):
        total = total * x + coefficient
    return total


def exponent(xs: Sequence[int], ys: Sequence[Number | None]) -> float | None:
    """The log-log slope between the two largest sizes whose values are known and positive.

    ``log(y2 / y1) / log(x2 / x1)``; ``None`` when fewer than two such points exist. A slope of 2
    means the value quadruples when the size doubles, *between those two sizes only*.
    """
    known = [(x, y) for x, y in zip(xs, ys, strict=True) if y is not None and y > 0]
    if len(known) < 2:
        return None
    (x1, y1), (x2, y2) = known[-2], known[-1]
    return math.log(Fraction(y2) / Fraction(y1)) / math.log(Fraction(x2, x1))


def _plain(value: Fraction) -> Number:
    """An integral rational as ``int``, any other as the nearest ``float``."""
    return value.numerator if value.denominator == 1 else float(value)


def fit_series(
    xs: Sequence[int],
    ys: Sequence[Number | None],
    indices: Sequence[int],
    *,
    partial: bool,
    least_squares_degree: int | None = None,
) -> PolynomialFit:
    """The :class:`PolynomialFit` of one series; ``None`` in ``ys`` marks a point without a value.

    Without ``least_squares_degree`` the fit is exact (:data:`EXACT_METHOD`) or absent; with it,
    a least-squares polynomial of that degree, lowered to fit the points there are.
    """
    known = [(x, y) for x, y in zip(xs, ys, strict=True) if y is not None]
    method = EXACT_METHOD if least_squares_degree is None else LEAST_SQUARES_METHOD
    fit: PolynomialFit = {
        "status": "unavailable" if len(known) < 2 else "partial" if partial else "complete",
        "method": method,
        "degree": None,
        "coefficients": None,
        "residuals": [None] * len(xs),
        "exponent": exponent(xs, ys),
        "points": list(indices),
    }
    if len(known) < 2:
        return fit
    kx, ky = [x for x, _ in known], [y for _, y in known]
    if least_squares_degree is None:
        polynomial = interpolate(kx, ky)
        if len(polynomial) - 1 > len(known) - 2:  # nothing left to confirm it: no fit recorded
            return fit
        denominator = math.lcm(*(c.denominator for c in polynomial))
        fit["numerators"] = [int(c * denominator) for c in polynomial]
        fit["denominator"] = denominator
        fit["coefficients"] = [_plain(c) for c in polynomial]
    else:
        degree = max(0, min(least_squares_degree, len(known) - 1))
        polynomial = least_squares(kx, ky, degree)
        fit["coefficients"] = [float(c) for c in polynomial]
    fit["degree"] = len(polynomial) - 1
    fit["residuals"] = [
        None
        if y is None
        else _plain(Fraction(y) - evaluate(polynomial, x))
        if least_squares_degree is None
        else float(Fraction(y) - evaluate(polynomial, x))
        for x, y in zip(xs, ys, strict=True)
    ]
    return fit
