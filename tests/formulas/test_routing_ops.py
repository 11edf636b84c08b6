"""Mixture-of-experts routing kernels found by the zoo (Switch Transformers): ``aminmax``, ``index_add``.

Hand-derived: ``aminmax`` is a min and a max reduction over the same rows, ``2·(in − out)``
comparisons; ``index_add`` one add per source element (accumulation, as ``scatter_add``), plus one
multiply per element when ``alpha ≠ 1``.
"""

from __future__ import annotations

import torch

import torchscan


def _flops(fn) -> dict:
    with torch.no_grad():
        return torchscan.measure_flops(fn)["total"]


def test_aminmax_is_two_reductions() -> None:
    x = torch.rand(3, 5)
    # whole tensor: 2·(15 − 1) = 28
    result = _flops(lambda: torch.aminmax(x))
    assert (result["status"], result["value"]) == ("complete", 28)
    # per row (dim=1): 2·(15 − 3) = 24
    assert _flops(lambda: torch.aminmax(x, dim=1))["value"] == 24


def test_index_add_counts_one_add_per_source_element() -> None:
    target, index, source = torch.zeros(4, 3), torch.tensor([0, 2]), torch.rand(2, 3)
    # 2·3 = 6 adds
    result = _flops(lambda: target.clone().index_add_(0, index, source))
    assert (result["status"], result["value"]) == ("complete", 6)
    # alpha = 0.5: 6 multiplies + 6 adds = 12
    assert _flops(lambda: torch.index_add(target, 0, index, source, alpha=0.5))["value"] == 12
