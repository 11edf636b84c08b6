"""Reference checks of the matrix-product formulas (truth.md 1): ``mm``, ``addmm``, ``bmm``, ``baddbmm``
and what reaches them (``matmul``, ``linear``, ``einsum``), real and complex.

Reference (a): the same product written element-wise, ``(a[..., :, :, None] * b[..., None, :, :]).sum(-2)``,
run under :class:`TrivialCounter`: it multiplies ``m·k·n`` pairs per batch matrix (``aten.mul`` output
elements) and adds each product into its output element — the convention's 2 FLOPs per
multiply-accumulate, so the expected count is ``2 × elementwise["aten.mul"]``. A complex
multiply-accumulate is 4 real multiplies and 4 real additions (truth.md 3): 4 × that. The fused bias
of ``addmm``/``baddbmm`` and alpha/beta scaling are not counted (formulas.md B.2 convention).
"""

from __future__ import annotations

import random

import pytest
import torch
from torch.nn import functional as F
from torch.utils.flop_counter import FlopCounterMode

from tests.formulas.reference.harness import cases, library_count, trivial_count


def _elementwise_product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a.unsqueeze(-1) * b.unsqueeze(-3)).sum(-2)


def _reference(a: torch.Tensor, b: torch.Tensor) -> int:
    counter = trivial_count(lambda: _elementwise_product(a, b))
    factor = 4 if a.is_complex() or b.is_complex() else 1
    return 2 * counter.elementwise["aten.mul"] * factor


def _operands(rng: random.Random, batch: int | None) -> tuple[torch.Tensor, torch.Tensor]:
    m, k, n = (rng.randint(0, 7) for _ in range(3))
    dtype = rng.choice((torch.float32, torch.float64, torch.complex64, torch.float32))
    generator = torch.Generator().manual_seed(rng.randrange(2**31))
    lead = () if batch is None else (batch,)
    a = torch.randn(*lead, m, k, generator=generator, dtype=dtype)
    b = torch.randn(*lead, k, n, generator=generator, dtype=dtype)
    return a, b


@pytest.mark.parametrize(("seed", "rng"), cases("matrix_products"))
def test_products_match_the_elementwise_reference(seed: int, rng: random.Random) -> None:
    batch = rng.choice((None, rng.randint(1, 3)))
    a, b = _operands(rng, batch)
    expected = _reference(a, b)
    if batch is None:
        bias = torch.randn(a.shape[0], b.shape[1], dtype=a.dtype)
        calls = {"aten.mm": lambda: torch.mm(a, b), "aten.addmm": lambda: torch.addmm(bias, a, b, beta=0.5)}
    else:
        bias = torch.randn(batch, a.shape[1], b.shape[2], dtype=a.dtype)
        calls = {
            "aten.bmm": lambda: torch.bmm(a, b),
            "aten.baddbmm": lambda: torch.baddbmm(bias, a, b, alpha=2),
        }
    for name, call in calls.items():
        assert library_count(call).operator(name) == expected, name
    # the reference computes the same product the kernels do
    torch.testing.assert_close(_elementwise_product(a, b), a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("seed", "rng"), cases("products_through_composites"))
def test_matmul_linear_and_einsum_reach_the_same_count(seed: int, rng: random.Random) -> None:
    """``matmul`` with broadcast batches, ``F.linear`` and ``einsum`` dispatch ``mm``/``bmm``/``addmm``
    whose total equals the reference of the same contraction (their reshapes and expands move data)."""
    # k ≥ 2: with one term, einsum multiplies by broadcasting (aten.mul, one FLOP per product)
    m, k, n, batch = rng.randint(1, 6), rng.randint(2, 6), rng.randint(1, 6), rng.randint(1, 3)
    generator = torch.Generator().manual_seed(seed)
    a = torch.randn(batch, m, k, generator=generator)
    b = torch.randn(k, n, generator=generator)
    weight = torch.randn(n, k, generator=generator)
    bias = torch.randn(n, generator=generator)
    expected = 2 * batch * m * k * n  # the elementwise reference's multiplies, doubled
    assert _reference(a, b.expand(batch, k, n)) == expected
    assert library_count(lambda: torch.matmul(a, b)).total == expected
    assert library_count(lambda: torch.einsum("bmk,kn->bmn", a, b)).total == expected
    linear = library_count(lambda: F.linear(a, weight, bias))
    assert linear.total == expected  # fused bias not counted (addmm), or one add per output when separate
    assert linear.status == "complete"


def test_flop_counter_mode_agrees_where_its_formula_is_right() -> None:
    """Products and plain convolutions: FlopCounterMode's formulas agree with TorchScan's (the
    reference above); the override of torch-versions.md 1 changes nothing there."""
    x, w = torch.randn(2, 3, 9, 9), torch.randn(4, 3, 3, 3)
    a, b = torch.randn(2, 5, 6), torch.randn(2, 6, 7)
    rows, cols, lin = torch.randn(3, 6), torch.randn(6, 2), torch.nn.Linear(6, 7)

    def workload() -> None:
        F.conv2d(x, w, stride=2)
        torch.bmm(a, b)
        lin(rows)
        torch.mm(rows, cols)

    with FlopCounterMode(display=False) as alone:
        workload()
    library = library_count(workload)
    assert library.status == "complete"
    assert library.by_operator == {str(k): v for k, v in alone.get_flop_counts()["Global"].items()}
