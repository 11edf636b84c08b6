"""Anti-aliased resampling (issue #19 coverage): the tap count is PyTorch's own filter support."""

from __future__ import annotations

import pytest
import torch
from kernel_checks import complete
from torch.nn import functional as F

from torchscan.formulas.antialias_ops import axis_taps


def _nonzero_taps(in_size: int, out_size: int, mode: str) -> int:
    """Input positions that reach each output, found by resampling one-hot rows (exact in float64)."""
    total = 0
    for position in range(in_size):
        row = torch.zeros(1, 1, 1, in_size, dtype=torch.float64)
        row[..., position] = 1
        total += int((F.interpolate(row, size=(1, out_size), mode=mode, antialias=True) != 0).sum())
    return total


@pytest.mark.parametrize(("mode", "interp_size"), [("bilinear", 2), ("bicubic", 4)])
@pytest.mark.parametrize(("in_size", "out_size"), [(4, 2), (10, 3), (224, 37), (9, 4)])
def test_downsampling_taps_are_the_filters_support(mode, interp_size, in_size, out_size):
    assert axis_taps(in_size, out_size, interp_size, False, None) == _nonzero_taps(in_size, out_size, mode)


def test_upsampling_visits_at_least_the_nonzero_taps():
    # the kernel's loop also visits the support's edge taps, whose weights are exactly zero
    assert axis_taps(5, 9, 2, False, None) >= _nonzero_taps(5, 9, "bilinear")


def test_a_resize_by_hand_under_every_grad_mode():
    image = torch.ones(1, 1, 4, 4)
    # 4 -> 2: centers 1 and 3 with support 2 read 3 inputs each: 6 taps per axis; 2·6 − 2 per row
    value, by_operator = complete(lambda: F.interpolate(image, size=(2, 2), mode="bilinear", antialias=True))
    assert value == 4 * 10 + 2 * 10
    assert by_operator == {"aten._upsample_bilinear2d_aa": 60}
    # an unchanged axis is not resampled
    assert complete(lambda: F.interpolate(image, size=(4, 2), mode="bilinear", antialias=True))[0] == 40
