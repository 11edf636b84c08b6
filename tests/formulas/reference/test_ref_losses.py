"""Reference suite: loss kernels (truth.md §1, §5), every one ``loss_ops`` has a formula for, forward
and backward, every reduction.

Each loss is re-implemented from element-wise operators (``elementary.py``; formulas.md A.4 per
element, and the loss kernels' convention that selecting a computed branch or a target's value is
free while the comparison counts) following the algorithm of its formula's docstring, and checked
value by value against the kernel (the loss, and the input gradient autograd yields) before its count
is compared with the library's, through real dispatch:

* ``nll_loss`` (1-D/2-D and the 2-D-spatial kernel): pick (free), negate, class weight; sum; mean
  divides by the count or by the picked weights' sum. Backward per target ``−g·w / total``.
* ``mse_loss``: ``(x − t)²``; backward ``2·(x − t)·g`` (``/N`` for mean).
* ``binary_cross_entropy``: ``−w·(t·max(log x, −100) + (1 − t)·max(log(1 − x), −100))``; backward
  ``g·(x − t) / max((1 − x)·x, 1e-12)``.
* ``binary_cross_entropy_with_logits``: ``(1 − t)·x + ℓ·(log1p(exp(−|x|)) + max(−x, 0))`` with
  ``ℓ = (p − 1)·t + 1`` when a ``pos_weight`` is given (``p − 1`` on ``pos_weight``'s own shape).
* ``smooth_l1_loss`` / ``huber_loss``: both branches of ``|x − t| < β`` computed, one selected;
  backward ``d/β`` or ``sign(d)`` (Huber: ``d`` or ``δ·sign(d)``), times ``g``.
* ``soft_margin_loss``: ``log(1 + exp(−t·x))``; backward ``−t·z/(1 + z)·g`` with ``z = exp(−t·x)``.
* ``multi_margin_loss``: per sample the ``C − 1`` hinge terms ``max(0, margin − x_y + x_c)`` (squared
  for ``p = 2``, weighted by ``w_y``), summed and divided by ``C``; backward per term the margin and its
  test, ``2z``, ``w_y``, the ``g/C`` product and the add into ``x_y``'s gradient.

A reduction of ``k`` values costs ``k − 1`` adds and ``mean`` one divide more; a ``mean`` backward
divides every gradient element once.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F

from reference.elementary import elementary_count
from reference.harness import cases, library_count, seeded

REDUCTIONS = ("none", "mean", "sum")


def reduce(loss: torch.Tensor, reduction: str) -> torch.Tensor:
    if reduction == "none":
        return loss
    total = loss.sum()
    return total / loss.numel() if reduction == "mean" else total


def spread(grad: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """The incoming gradient broadcast to the loss' elements (free: a view)."""
    return grad.expand(like.shape) if grad.dim() == 0 else grad


# --- the re-implementations: (forward, backward) per kernel ----------------------------------------


class Case:
    """One loss call: the functional call, the kernels' names, and the re-implementation."""

    def __init__(self, rng: random.Random) -> None:
        self.kind = rng.choice(
            ["nll", "nll", "mse", "bce", "bce_logits", "smooth_l1", "huber", "soft_margin", "multi_margin"]
        )
        self.reduction = rng.choice(REDUCTIONS)
        self.generator = seeded(rng)
        getattr(self, f"_draw_{self.kind}")(rng)

    def _randn(self, *shape: int) -> torch.Tensor:
        return torch.randn(shape, generator=self.generator, dtype=torch.float64)

    def _rand(self, *shape: int) -> torch.Tensor:
        return torch.rand(shape, generator=self.generator, dtype=torch.float64)

    # nll_loss ------------------------------------------------------------------------------------
    def _draw_nll(self, rng: random.Random) -> None:
        classes = rng.randint(1, 5)
        layout = rng.choice(["1d", "2d", "spatial"])
        batch = rng.randint(1, 4)
        spatial = [rng.randint(1, 3) for _ in range(rng.randint(1, 2))] if layout == "spatial" else []
        shape = (classes,) if layout == "1d" else (batch, classes, *spatial)
        self.x = self._randn(*shape).log_softmax(0 if layout == "1d" else 1)
        target_shape = () if layout == "1d" else (batch, *spatial)
        self.target = torch.randint(0, classes, target_shape, generator=self.generator)
        self.weight = self._rand(classes) + 0.1 if rng.random() < 0.5 else None
        self.call = lambda x: F.nll_loss(x, self.target, weight=self.weight, reduction=self.reduction)
        self.kernel = "nll_loss"
        targets = self.target.numel()
        self.total_weight = (
            self.weight[self.target].sum() if self.weight is not None else torch.tensor(targets)
        )

    def _nll_picked(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        if self.x.dim() == 1:
            picked, weights = self.x[self.target].reshape(()), None
            if self.weight is not None:
                weights = self.weight[self.target].reshape(())
            return picked, weights
        picked = self.x.gather(1, self.target.unsqueeze(1)).squeeze(1)
        return picked, (self.weight[self.target] if self.weight is not None else None)

    def forward_nll(self) -> torch.Tensor:
        picked, weights = self._nll_picked()
        loss = -picked
        if weights is not None:
            loss = loss * weights
        if self.reduction == "none":
            return loss
        total = loss.sum()
        if self.reduction == "sum":
            return total
        return total / (weights.sum() if weights is not None else picked.numel())

    def backward_nll(self, grad: torch.Tensor) -> torch.Tensor:
        picked, weights = self._nll_picked()
        values = -spread(grad, picked)
        if weights is not None:
            values = values * weights
        if self.reduction == "mean":
            values = values / self.total_weight  # the forward's total weight, an input of the kernel
        result = torch.zeros_like(self.x)
        if self.x.dim() == 1:
            return result.scatter(0, self.target.reshape(1), values.reshape(1))
        return result.scatter(1, self.target.unsqueeze(1), values.unsqueeze(1))

    # mse_loss ------------------------------------------------------------------------------------
    def _draw_mse(self, rng: random.Random) -> None:
        self._pair(rng, self._randn)
        self.call = lambda x: F.mse_loss(x, self.target, reduction=self.reduction)
        self.kernel = "mse_loss"

    def _pair(self, rng: random.Random, make: Callable[..., torch.Tensor]) -> None:
        shape = [rng.randint(1, 4) for _ in range(rng.randint(0, 3))]
        self.x, self.target = make(*shape), make(*shape)

    def forward_mse(self) -> torch.Tensor:
        d = self.x - self.target
        return reduce(d * d, self.reduction)

    def backward_mse(self, grad: torch.Tensor) -> torch.Tensor:
        result = (self.x - self.target) * 2 * spread(grad, self.x)
        return result / self.x.numel() if self.reduction == "mean" else result

    # binary_cross_entropy ------------------------------------------------------------------------
    def _draw_bce(self, rng: random.Random) -> None:
        self._pair(rng, lambda *s: self._rand(*s) * 0.98 + 0.01)
        self.weight = self._rand(*self.x.shape) if rng.random() < 0.5 else None
        self.call = lambda x: F.binary_cross_entropy(
            x, self.target, weight=self.weight, reduction=self.reduction
        )
        self.kernel = "binary_cross_entropy"

    def forward_bce(self) -> torch.Tensor:
        x, t = self.x, self.target
        log_x = torch.clamp_min(torch.log(x), -100)
        log_rest = torch.clamp_min(torch.log(1 - x), -100)
        loss = -(t * log_x + (1 - t) * log_rest)
        if self.weight is not None:
            loss = loss * self.weight
        return reduce(loss, self.reduction)

    def backward_bce(self, grad: torch.Tensor) -> torch.Tensor:
        x = self.x
        result = spread(grad, x) * (x - self.target) / torch.clamp_min((1 - x) * x, 1e-12)
        if self.weight is not None:
            result = result * self.weight
        return result / x.numel() if self.reduction == "mean" else result

    # binary_cross_entropy_with_logits (forward kernel; its backward is decomposed) ---------------
    def _draw_bce_logits(self, rng: random.Random) -> None:
        shape = [rng.randint(1, 4) for _ in range(rng.randint(1, 3))]
        self.x, self.target = self._randn(*shape), self._rand(*shape)
        self.weight = self._rand(*shape[-1:]) if rng.random() < 0.5 else None
        self.pos_weight = (
            self._rand(*(shape if rng.random() < 0.3 else shape[-1:])) if rng.random() < 0.6 else None
        )
        self.call = lambda x: F.binary_cross_entropy_with_logits(
            x, self.target, weight=self.weight, pos_weight=self.pos_weight, reduction=self.reduction
        )
        self.kernel = "binary_cross_entropy_with_logits"

    def forward_bce_logits(self) -> torch.Tensor:
        x, t = self.x, self.target
        soft = torch.log1p(torch.exp(-torch.abs(x))) + torch.clamp_min(-x, 0)
        if self.pos_weight is not None:
            soft = ((self.pos_weight - 1) * t + 1) * soft
        loss = (1 - t) * x + soft
        if self.weight is not None:
            loss = loss * self.weight
        return reduce(loss, self.reduction)

    # smooth L1 and Huber -------------------------------------------------------------------------
    def _draw_smooth_l1(self, rng: random.Random) -> None:
        self._pair(rng, self._randn)
        self.beta = rng.choice([0.3, 0.5, 1.0, 2.0])
        self.call = lambda x: F.smooth_l1_loss(x, self.target, reduction=self.reduction, beta=self.beta)
        self.kernel = "smooth_l1_loss"

    def _draw_huber(self, rng: random.Random) -> None:
        self._pair(rng, self._randn)
        self.beta = rng.choice([0.3, 0.5, 1.0, 2.0])
        self.call = lambda x: F.huber_loss(x, self.target, reduction=self.reduction, delta=self.beta)
        self.kernel = "huber_loss"

    def forward_smooth_l1(self) -> torch.Tensor:
        d = torch.abs(self.x - self.target)
        quadratic = d * d * 0.5 / self.beta
        return reduce(torch.where(d < self.beta, quadratic, d - 0.5 * self.beta), self.reduction)

    def forward_huber(self) -> torch.Tensor:
        d = torch.abs(self.x - self.target)
        inner, outer = d * d * 0.5, (d - 0.5 * self.beta) * self.beta
        return reduce(torch.where(d < self.beta, inner, outer), self.reduction)

    def backward_smooth_l1(self, grad: torch.Tensor) -> torch.Tensor:
        d = self.x - self.target
        inside = torch.abs(d) < self.beta
        result = torch.where(inside, d / self.beta, torch.sign(d)) * spread(grad, d)
        return result / d.numel() if self.reduction == "mean" else result

    def backward_huber(self, grad: torch.Tensor) -> torch.Tensor:
        d = self.x - self.target
        inside = torch.abs(d) < self.beta
        result = torch.where(inside, d, torch.sign(d) * self.beta) * spread(grad, d)
        return result / d.numel() if self.reduction == "mean" else result

    # soft margin ---------------------------------------------------------------------------------
    def _draw_soft_margin(self, rng: random.Random) -> None:
        shape = [rng.randint(1, 4) for _ in range(rng.randint(0, 3))]
        self.x = self._randn(*shape)
        self.target = torch.randint(0, 2, shape, generator=self.generator).double() * 2 - 1
        self.call = lambda x: F.soft_margin_loss(x, self.target, reduction=self.reduction)
        self.kernel = "soft_margin_loss"

    def forward_soft_margin(self) -> torch.Tensor:
        return reduce(torch.log(1 + torch.exp(-(self.target * self.x))), self.reduction)

    def backward_soft_margin(self, grad: torch.Tensor) -> torch.Tensor:
        z = torch.exp(-(self.target * self.x))
        result = -(self.target * z) / (1 + z) * spread(grad, z)
        return result / z.numel() if self.reduction == "mean" else result

    # multi-class margin --------------------------------------------------------------------------
    def _draw_multi_margin(self, rng: random.Random) -> None:
        classes = rng.randint(1, 5)
        self.x = self._randn(classes) if rng.random() < 0.2 else self._randn(rng.randint(1, 4), classes)
        target_shape = () if self.x.dim() == 1 else (self.x.shape[0],)
        self.target = torch.randint(0, classes, target_shape, generator=self.generator)
        self.p, self.margin = rng.choice([1, 2]), rng.choice([0.5, 1.0, 2.0])
        self.weight = self._rand(classes) + 0.1 if rng.random() < 0.5 else None
        self.call = lambda x: F.multi_margin_loss(
            x, self.target, p=self.p, margin=self.margin, weight=self.weight, reduction=self.reduction
        )
        self.kernel = "multi_margin_loss"
        # index structures, built before anything is counted
        self.flat_target = self.target.reshape(-1)
        rows = self.flat_target.numel()
        self.others = torch.arange(classes).expand(rows, classes) != self.flat_target.unsqueeze(1)
        self.w_y = self.weight[self.flat_target].unsqueeze(1) if self.weight is not None else None
        self.zero_column = torch.zeros(classes - 1, dtype=torch.long)

    def _margin_terms(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(x_y, x_c)``: each sample's target score ``(S, 1)`` and its other classes' ``(S, C − 1)``
        (gathers, free)."""
        x = self.x.reshape(-1, self.x.shape[-1])
        return x.gather(1, self.flat_target.unsqueeze(1)), x[self.others].reshape(x.shape[0], -1)

    def forward_multi_margin(self) -> torch.Tensor:
        x_y, x_c = self._margin_terms()
        z = torch.clamp_min((x_c - x_y) + self.margin, 0)  # per term: subtract, add, max
        if self.p == 2:
            z = z * z
        if self.w_y is not None:
            z = z * self.w_y
        loss = (z.sum(dim=1) / self.x.shape[-1]).reshape(self.target.shape)  # C − 2 adds, one divide
        return reduce(loss, self.reduction)

    def backward_multi_margin(self, grad: torch.Tensor) -> torch.Tensor:
        """Per term: the margin and its test, ``2z`` (``p = 2``; the ``1/C`` of the mean over classes is
        folded into that constant), ``w_y``, the product with the sample's gradient and the subtract
        from ``x_y``'s gradient; ``mean`` divides each sample's gradient once."""
        x_y, x_c = self._margin_terms()
        classes = self.x.shape[-1]
        z = (x_c - x_y) + self.margin
        active = z > 0
        h = z * (2 / classes) if self.p == 2 else torch.full_like(z, 1 / classes)
        if self.w_y is not None:
            h = h * self.w_y
        factor = spread(grad, self.target).reshape(-1, 1)
        if self.reduction == "mean":
            factor = factor / self.flat_target.numel()
        h = torch.where(active, h * factor, 0.0)
        result = torch.zeros(self.x.reshape(-1, classes).shape, dtype=self.x.dtype)
        result[self.others] = h.reshape(-1)
        target_grad = torch.zeros(h.shape[0], 1, dtype=h.dtype).index_add(1, self.zero_column, h, alpha=-1)
        return result.scatter(1, self.flat_target.unsqueeze(1), target_grad).reshape(self.x.shape)


# --- the test -------------------------------------------------------------------------------------


def kernel_flops(by_operator: dict[str, int], kernel: str) -> int:
    """FLOPs of the loss kernel (forward: ``<kernel>``/``<kernel>_forward``; backward: ``…_backward``)."""
    return sum(
        v for name, v in by_operator.items() if name.removeprefix("aten.").startswith(kernel.split("2d")[0])
    )


@pytest.mark.parametrize("seed, rng", cases("losses"))
def test_loss_kernels_count_their_arithmetic(seed: int, rng: random.Random) -> None:
    """Forward and backward operator FLOPs of every loss kernel with a formula equal the element-wise
    re-implementation's count, whose loss and input gradient equal the kernel's."""
    case = Case(rng)
    leaf = case.x.clone().requires_grad_(True)
    loss, counter = elementary_count(getattr(case, f"forward_{case.kind}"), free_selection=True)
    torch.testing.assert_close(case.call(case.x), loss)
    forward = library_count(lambda: case.call(leaf))
    assert forward.status == "complete", forward.diagnostics
    assert kernel_flops(forward.by_operator, case.kernel) == counter.flops, forward.by_operator

    backward_reference = getattr(case, f"backward_{case.kind}", None)
    if backward_reference is None:  # binary_cross_entropy_with_logits: its gradient is decomposed
        return
    out = case.call(leaf)
    grad = torch.randn(out.shape, generator=case.generator, dtype=out.dtype)
    expected, backward_counter = elementary_count(lambda: backward_reference(grad), free_selection=True)
    (autograd_grad,) = torch.autograd.grad(case.call(leaf), leaf, grad)
    torch.testing.assert_close(expected, autograd_grad)
    backward = library_count(lambda: out.backward(grad))
    assert backward.status == "complete", backward.diagnostics
    assert kernel_flops(backward.by_operator, case.kernel) == backward_counter.flops, backward.by_operator
