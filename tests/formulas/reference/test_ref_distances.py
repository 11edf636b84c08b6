"""Reference checks of the distance kernels, forward and backward (truth.md 1 and 5).

Reference (a), element-wise re-implementations under :class:`ElementaryCounter` (products at ``2·MACs``):

* the direct ``p``-distance of every pair (``_cdist_forward``, ``_pdist_forward``, ``dist``): the
  difference, then the norm: squares, ``M − 1`` adds and a root (``p = 2``), ``abs`` and ``M − 1`` adds
  or comparisons (1, ∞);
* ``_euclidean_dist`` (``cdist``'s path for ``p = 2`` with more than 25 rows a side or
  ``compute_mode="use_mm_for_euclid_dist"``, and ``_cdist_forward`` taking it inside), as PyTorch
  computes it: ``x.pow(2).sum(-1)`` for both sides, ``x·(−2)``, one batched product of the padded
  operands ``[−2x, ‖x‖², 1]·[y, 1, ‖y‖²]ᵀ``, ``clamp_min(0)`` and ``sqrt``;
* gradients of the direct path: per pair ``g/d`` (``p = 2``) or per feature ``sign(diff)`` (``p = 1``),
  the difference and its product, accumulated into the zero-initialised gradient one add per
  contribution (``index_add``'s convention; ``pdist`` reaches both rows of a pair). The kernels' guard
  for a zero distance is a special-value test and is not counted.

Values are checked against PyTorch (forward outputs and autograd gradients) before counts are compared
through real dispatch.
"""

from __future__ import annotations

import math
import random

import pytest
import torch

from reference.elementary import elementary_count
from reference.harness import cases, library_count, seeded

Tensor = torch.Tensor


def direct(x1: Tensor, x2: Tensor, p: float) -> Tensor:
    """``(B, P, M)`` against ``(B, R, M)``: every pair's ``p``-distance ``(B, P, R)``."""
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    if p == 2:
        return torch.sqrt((diff * diff).sum(-1))
    if p == 1:
        return torch.abs(diff).sum(-1)
    return torch.abs(diff).amax(-1)


def euclidean(x1: Tensor, x2: Tensor) -> Tensor:
    """PyTorch's ``_euclidean_dist``: ``‖x‖² + ‖y‖² − 2x·y`` through one padded product."""
    n1, n2 = torch.pow(x1, 2).sum(-1, keepdim=True), torch.pow(x2, 2).sum(-1, keepdim=True)
    left = torch.cat([x1 * -2, n1, torch.ones_like(n1)], -1)
    right = torch.cat([x2, torch.ones_like(n2), n2], -1)
    return torch.sqrt(torch.clamp_min(torch.bmm(left, right.transpose(-1, -2)), 0))


def accumulate(rows: int, index: Tensor, values: Tensor) -> Tensor:
    """``values`` ``(contributions, M)`` added into ``rows`` zero rows at ``index``: one add each."""
    return torch.zeros(rows, values.shape[-1], dtype=values.dtype).index_add(0, index, values)


def pair_gradient(diff: Tensor, grad: Tensor, dist: Tensor, p: float) -> Tensor:
    """Each pair's contribution ``∂d/∂x1 · g``: ``diff·(g/d)`` or ``sign(diff)·g``."""
    if p == 2:
        return diff * (grad / dist).unsqueeze(-1)
    return torch.sign(diff) * grad.unsqueeze(-1)


def cdist_grad(x1: Tensor, x2: Tensor, grad: Tensor, dist: Tensor, p: float, index: Tensor) -> Tensor:
    """The gradient for ``x1`` ``(B, P, M)``: per pair, accumulated over the ``R`` columns (``index``:
    each pair's row, prepared)."""
    batch, rows, width = x1.shape
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)  # (B, P, R, M)
    contributions = pair_gradient(diff, grad, dist, p).reshape(-1, width)
    return accumulate(batch * rows, index, contributions).reshape(batch, rows, width)


def pdist_grad(x: Tensor, grad: Tensor, dist: Tensor, p: float, first: Tensor, second: Tensor) -> Tensor:
    """``pdist``'s gradient: each pair ``(i < j)`` adds its contribution to row ``i`` and subtracts it
    from row ``j`` (an add of the negated contribution: the sign flip is free, two adds per feature)."""
    rows = x.shape[0]
    diff = x[first] - x[second]
    contributions = pair_gradient(diff, grad, dist, p)
    gradient = accumulate(rows, first, contributions)
    return gradient.index_add(0, second, contributions, alpha=-1)


@pytest.mark.parametrize(("seed", "rng"), cases("distance_kernels"))
def test_distance_kernels_forward_and_backward(seed: int, rng: random.Random) -> None:
    generator = seeded(rng)
    kind = rng.choice(["cdist", "cdist", "cdist_kernel", "pdist", "dist"])
    width = rng.randint(1, 5)
    p = rng.choice([2.0, 2.0, 1.0, math.inf])

    def tensor(*shape: int) -> Tensor:
        return torch.randn(shape, generator=generator, dtype=torch.float64)

    if kind == "pdist":
        x = tensor(rng.randint(2, 7), width)
        rows, first, second = x.shape[0], *torch.triu_indices(x.shape[0], x.shape[0], 1)
        pairs_x1, pairs_x2 = x[first].unsqueeze(1), x[second].unsqueeze(1)  # prepared (free gathers)

        def reference() -> Tensor:
            return direct(pairs_x1, pairs_x2, p).reshape(-1)

        value, counter = elementary_count(reference)
        torch.testing.assert_close(value, torch.pdist(x, p))
        leaf = x.clone().requires_grad_(True)
        counted = library_count(lambda: torch.pdist(leaf, p))
        assert counted.operator("aten._pdist_forward") == counter.flops, counted.by_operator
        if p == math.inf:
            return
        out = torch.pdist(leaf, p)
        grad = tensor(*out.shape)
        dist = out.detach()
        expected, backward = elementary_count(lambda: pdist_grad(x, grad, dist, p, first, second))
        counted = library_count(lambda: out.backward(grad))
        torch.testing.assert_close(leaf.grad, expected)
        assert counted.operator("aten._pdist_backward") == backward.flops, counted.by_operator
        return
    if kind == "dist":
        shape = [rng.randint(1, 4) for _ in range(rng.randint(1, 3))]
        a, b = tensor(*shape), tensor(*shape[rng.randint(0, len(shape) - 1) :])
        expanded = torch.broadcast_tensors(a, b)
        value, counter = elementary_count(
            lambda: direct(expanded[0].reshape(1, 1, -1), expanded[1].reshape(1, 1, -1), p)
        )
        torch.testing.assert_close(value.reshape(()), torch.dist(a, b, p))
        counted = library_count(lambda: torch.dist(a, b, p))
        assert counted.operator("aten.dist") == counter.flops, counted.by_operator
        return
    batch = [rng.randint(1, 2) for _ in range(rng.randint(0, 1))]
    rows, cols = rng.choice([rng.randint(1, 5), rng.randint(24, 30)]), rng.randint(1, 5)
    x1, x2 = tensor(*batch, rows, width), tensor(*batch, cols, width)
    mode = rng.choice(
        ["use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"]
    )
    code = {"use_mm_for_euclid_dist_if_necessary": None, "use_mm_for_euclid_dist": 1}.get(mode, 2)
    flat1, flat2 = x1.reshape(-1, rows, width), x2.reshape(-1, cols, width)
    mm_path = p == 2 and (code == 1 or (code is None and (rows > 25 or cols > 25)))
    value, counter = elementary_count(lambda: euclidean(flat1, flat2) if mm_path else direct(flat1, flat2, p))
    if kind == "cdist_kernel":  # the kernel called directly: its mm path runs inside it
        call = lambda t: torch.ops.aten._cdist_forward(t, x2, p, code)  # noqa: E731
        operator = "aten._cdist_forward"
    else:
        call = lambda t: torch.cdist(t, x2, p, compute_mode=mode)  # noqa: E731
        operator = "aten._euclidean_dist" if mm_path else "aten._cdist_forward"
    torch.testing.assert_close(value.reshape(*batch, rows, cols), call(x1))
    leaf = x1.clone().requires_grad_(True)
    counted = library_count(lambda: call(leaf))
    assert counted.status == "complete", counted.diagnostics
    assert counted.operator(operator) == counter.flops, (kind, mm_path, counted.by_operator)
    if mm_path or p == math.inf or kind == "cdist_kernel":  # the mm path's gradient is decomposed
        return
    out = call(leaf)
    grad = tensor(*out.shape)
    dist = out.detach().reshape(-1, rows, cols)
    index = torch.arange(flat1.shape[0] * rows).repeat_interleave(cols)
    expected, backward = elementary_count(
        lambda: cdist_grad(flat1, flat2, grad.reshape(-1, rows, cols), dist, p, index)
    )
    counted = library_count(lambda: out.backward(grad))
    torch.testing.assert_close(leaf.grad, expected.reshape(leaf.shape))
    assert counted.operator("aten._cdist_backward") == backward.flops, counted.by_operator
