"""The pure fits of measure_scaling (attention-and-scaling.md 2): exact rationals, least squares."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchscan.measure.scaling_fit import evaluate, exponent, fit_series, interpolate, least_squares
from torchscan.report.scaling_schema import EXACT_METHOD, LEAST_SQUARES_METHOD


def test_interpolation_of_the_causal_pair_count_is_rational():
    # n(n+1)/2 = 0 + n/2 + n²/2: degree 2 with halves, exactly
    xs = [16, 32, 64, 128]
    assert interpolate(xs, [n * (n + 1) // 2 for n in xs]) == [0, Fraction(1, 2), Fraction(1, 2)]
    fit = fit_series(xs, [n * (n + 1) // 2 for n in xs], [0, 1, 2, 3], partial=False)
    assert fit["method"] == EXACT_METHOD and fit["status"] == "complete"
    assert fit["degree"] == 2 and fit["coefficients"] == [0, 0.5, 0.5]
    assert fit["numerators"] == [0, 1, 1] and fit["denominator"] == 2
    assert fit["residuals"] == [0, 0, 0, 0]
    # between 64 (2,080 pairs) and 128 (8,256 pairs): log(8256 / 2080) / log(2)
    assert fit["exponent"] == pytest.approx(math.log2(8256 / 2080))


def test_integer_polynomial_and_constant_series():
    xs = [1, 2, 3, 5]
    fit = fit_series(xs, [7 + 3 * x for x in xs], [0, 1, 2, 3], partial=False)
    assert (fit["degree"], fit["coefficients"], fit["denominator"]) == (1, [7, 3], 1)
    zero = fit_series(xs, [0, 0, 0, 0], [0, 1, 2, 3], partial=False)
    assert zero["degree"] == 0 and zero["coefficients"] == [0] and zero["exponent"] is None  # log of 0
    flat = fit_series([4, 8], [9, 9], [0, 1], partial=False)
    assert flat["degree"] == 0 and flat["coefficients"] == [9] and flat["exponent"] == 0.0


def test_no_polynomial_is_recorded_without_a_spare_point():
    # 2^n over four sizes: the interpolant has degree 3 = points - 1, which any 4 values have
    xs = [1, 2, 3, 4]
    fit = fit_series(xs, [2, 4, 8, 16], [0, 1, 2, 3], partial=False)
    assert fit["status"] == "complete" and fit["degree"] is None and fit["coefficients"] is None
    assert "numerators" not in fit and fit["residuals"] == [None] * 4
    assert fit["exponent"] == pytest.approx(math.log(16 / 8) / math.log(4 / 3))
    # two values that differ: a line goes through any two points, nothing confirms it
    assert fit_series([8, 16], [3, 5], [0, 1], partial=False)["degree"] is None


def test_missing_values_fewer_than_two_and_partial():
    xs = [10, 20, 30, 40]
    fit = fit_series(xs, [100, None, 900, 1600], [0, 1, 2, 3], partial=True)
    # 3 values of x²: degree 2 = 3 - 1 has no spare point, so none is recorded; still partial
    assert fit["status"] == "partial" and fit["degree"] is None and fit["residuals"] == [None] * 4
    linear = fit_series(xs, [10, None, 30, 40], [0, 1, 2, 3], partial=False)
    assert linear["degree"] == 1 and linear["coefficients"] == [0, 1]
    assert linear["residuals"] == [0, None, 0, 0]
    lonely = fit_series(xs, [None, None, 5, None], [4, 5, 6, 7], partial=False)
    assert lonely["status"] == "unavailable" and lonely["degree"] is None and lonely["exponent"] is None
    assert lonely["points"] == [4, 5, 6, 7]


def test_least_squares_by_hand():
    # y = 1, 2, 2 at x = 1, 2, 3: mean x 2, mean y 5/3, Sxy = (-1)(-2/3) + 0 + (1)(1/3) = 1, Sxx = 2
    # -> slope 1/2, intercept 5/3 - 1 = 2/3; residuals -1/6, 1/3, -1/6
    assert least_squares([1, 2, 3], [1, 2, 2], 1) == [Fraction(2, 3), Fraction(1, 2)]
    fit = fit_series([1, 2, 3], [1.0, 2.0, 2.0], [0, 1, 2], partial=False, least_squares_degree=1)
    assert fit["method"] == LEAST_SQUARES_METHOD and fit["degree"] == 1
    assert fit["coefficients"] == [2 / 3, 0.5] and "numerators" not in fit
    assert fit["residuals"] == pytest.approx([-1 / 6, 1 / 3, -1 / 6])
    # a degree above what the values allow is lowered: two values, at most a line
    assert fit_series([1, 2], [1.0, 3.0], [0, 1], partial=False, least_squares_degree=3)["degree"] == 1


def test_exponent_uses_the_two_largest_sizes_with_positive_values():
    assert exponent([1, 2, 4], [1, 4, 16]) == 2.0
    assert exponent([1, 2, 4], [1, 4, None]) == 2.0  # the largest size has no value
    assert exponent([1, 2, 4], [0, 0, 16]) is None
    assert exponent([1, 2], [None, 3]) is None


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.fractions(min_value=-1000, max_value=1000, max_denominator=12), min_size=1, max_size=5),
    st.lists(st.integers(1, 5000), min_size=7, max_size=7, unique=True),
    st.integers(0, 2),
)
def test_exact_fit_recovers_any_rational_polynomial(coefficients, sizes, spare):
    """A polynomial of degree d sampled at d + 2 or more sizes comes back exactly, with zero residuals."""
    while len(coefficients) > 1 and coefficients[-1] == 0:
        coefficients.pop()
    degree = len(coefficients) - 1
    xs = sorted(sizes)[: degree + 2 + spare]
    ys = [evaluate(coefficients, x) for x in xs]
    fit = fit_series(xs, ys, list(range(len(xs))), partial=False)
    assert fit["degree"] == degree
    assert [Fraction(n, fit["denominator"]) for n in fit["numerators"]] == coefficients
    assert fit["residuals"] == [0] * len(xs)
    # one point fewer: degree d through d + 1 points confirms nothing (a constant: one value, no fit)
    short = fit_series(xs[: degree + 1], ys[: degree + 1], list(range(degree + 1)), partial=False)
    assert short["degree"] is None
    # least squares of at least the true degree reproduces exact polynomial data
    squares = least_squares(xs, ys, degree)
    assert squares == coefficients
