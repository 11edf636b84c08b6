"""Clamped pooling windows (torchscan/formulas/pool_windows.py) against a direct enumeration."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchscan.formulas.pool_windows import adaptive_visits, axis_windows, clamped_windows, per_axis


@settings(max_examples=300, deadline=None)
@given(
    length=st.integers(0, 40),
    outputs=st.integers(0, 40),
    kernel=st.integers(1, 9),
    stride=st.integers(1, 7),
    padding=st.integers(0, 7),
    dilation=st.integers(1, 5),
)
def test_axis_windows_count_every_in_bound_tap(length, outputs, kernel, stride, padding, dilation) -> None:
    """Window ``i`` reads ``i·s − p + j·d`` for ``j < k``; only positions in ``[0, L)`` count."""
    taps = [
        sum(1 for j in range(kernel) if 0 <= i * stride - padding + j * dilation < length)
        for i in range(outputs)
    ]
    assert tuple(axis_windows(length, outputs, kernel, stride, padding, dilation)) == (
        sum(taps),
        sum(t > 0 for t in taps),
    )


def test_windows_multiply_over_axes_and_leading_sizes() -> None:
    """``k 3, s 1, p 1`` on 4×4: 2 + 3 + 3 + 2 = 10 taps per axis, 100 per plane; 2·3 planes."""
    assert clamped_windows((2, 3, 4, 4), (2, 3, 4, 4), 2, 3, 1, 1) == (600, 96)
    # an unbatched 1-D call, the stride omitted (= kernel): windows {0, 1}, {2, 3}, {4}: 5 taps, 3 windows
    assert clamped_windows((5,), (3,), 1, [2], [], 0) == (5, 3)


def test_per_axis_sizes_follow_pytorch() -> None:
    assert per_axis(3, 2, 0) == (3, 3)
    assert per_axis([3], 3, 0) == (3, 3, 3)
    assert per_axis([], 2, 7) == (7, 7)
    assert per_axis(None, 1, 7) == (7,)
    assert per_axis((1, 2), 2, 0) == (1, 2)


def test_adaptive_visits_closed_form() -> None:
    """``L + O − gcd(L, O)`` per axis: 5 → 3 reads {0, 1}, {1, 2, 3}, {3, 4} = 7; 7 → 2 reads
    {0, …, 3}, {3, …, 6} = 8."""
    assert adaptive_visits((2, 5, 7), (2, 3, 2), 2) == 2 * 7 * 8
    assert adaptive_visits((0, 4), (0, 2), 1) == 0
