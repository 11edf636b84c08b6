"""Reference checks of the embedding kernels, forward and backward (truth.md 1 and 5).

Reference (a), element-wise re-implementations under :class:`ElementaryCounter`; gathers (the lookups)
move data, accumulation into a zero-initialised output is one add per contribution (``index_add``):

* ``_embedding_bag`` (``F.embedding_bag``; ``offsets`` or 2-D bags, ``include_last_offset``): the
  looked-up rows added into their bags (sum), then divided by the bag sizes (mean), or scaled by
  ``per_sample_weights`` first; ``max`` keeps each bag's first row and compares the others;
* ``embedding_dense_backward`` (``F.embedding``): each gradient row added into its weight row, divided by
  the row's frequency with ``scale_grad_by_freq``;
* ``_embedding_bag_backward``: each looked-up row receives its bag's gradient row (mean: divided by the
  bag size; ``per_sample_weights``: scaled; frequency: divided), ``max`` only at the bag's argmax;
  ``_embedding_bag_per_sample_weights_backward``: each index's dot product of its bag's gradient row and
  its weight row (``D`` multiplies, ``D − 1`` adds).

Bags are non-empty and no ``padding_idx`` is drawn: both skip work by index values, which shape formulas
do not read. Values are checked against PyTorch before counts are compared through real dispatch.
"""

from __future__ import annotations

import random

import pytest
import torch
import torch.nn.functional as F

from reference.elementary import elementary_count
from reference.harness import cases, library_count, seeded

Tensor = torch.Tensor
# torch 2.13's CPU embedding_bag backward with scale_grad_by_freq divides some rows by a wrong frequency
# (ids [0, 1, 0, 2] in bags [0, 1], [0, 2]: row 1 receives 0.5, not 1; right on 2.14 and 2.15). Its
# values are no reference there; the count (one divide per contribution) is still compared.
FREQUENCY_BUG = torch.__version__.startswith("2.13.")
MODES = {"sum": 0, "mean": 1, "max": 2}


def add_rows(rows: int, index: Tensor, values: Tensor) -> Tensor:
    return torch.zeros(rows, values.shape[-1], dtype=values.dtype).index_add(0, index, values)


class Bags:
    """A random ``F.embedding_bag`` call, its bags and references."""

    def __init__(self, rng: random.Random, generator: torch.Generator) -> None:
        self.num, self.width = rng.randint(2, 9), rng.randint(1, 5)
        self.weight = torch.randn(self.num, self.width, generator=generator, dtype=torch.float64)
        self.mode = rng.choice(list(MODES))
        sizes = [rng.randint(1, 4) for _ in range(rng.randint(1, 4))]
        self.two_d = rng.random() < 0.25
        if self.two_d:
            sizes = [sizes[0]] * len(sizes)
        self.sizes = torch.tensor(sizes)
        n = sum(sizes)
        self.ids = torch.randint(0, self.num, (n,), generator=generator)
        self.bag_of = torch.repeat_interleave(torch.arange(len(sizes)), self.sizes)
        starts = [0]
        for size in sizes[:-1]:
            starts.append(starts[-1] + size)
        self.include_last = not self.two_d and rng.random() < 0.3
        self.offsets = torch.tensor(starts + ([n] if self.include_last else []))
        self.psw = (
            torch.rand(n, generator=generator, dtype=torch.float64) + 0.5
            if self.mode == "sum" and rng.random() < 0.5
            else None
        )
        self.freq = self.mode != "max" and rng.random() < 0.3
        counts = torch.bincount(self.ids, minlength=self.num)
        self.frequency = counts[self.ids].to(torch.float64).unsqueeze(1)  # prepared: integer counting
        self.members = [torch.arange(start, start + size) for start, size in zip(starts, sizes, strict=True)]

    def call(self, weight: Tensor, psw: Tensor | None = None) -> Tensor:
        if self.two_d:
            return F.embedding_bag(
                self.ids.view(len(self.sizes), -1),
                weight,
                mode=self.mode,
                per_sample_weights=None if psw is None else psw.view(len(self.sizes), -1),
                scale_grad_by_freq=self.freq,
            )
        return F.embedding_bag(
            self.ids,
            weight,
            self.offsets,
            mode=self.mode,
            per_sample_weights=psw,
            include_last_offset=self.include_last,
            scale_grad_by_freq=self.freq,
        )

    def forward(self) -> Tensor:
        rows = self.weight[self.ids]
        bags = len(self.sizes)
        if self.mode == "max":
            result = []
            for members in self.members:
                result.append(rows[members].amax(0))
            return torch.stack(result)
        if self.psw is not None:
            rows = rows * self.psw.unsqueeze(1)
        total = add_rows(bags, self.bag_of, rows)
        return total / self.sizes.to(torch.float64).unsqueeze(1) if self.mode == "mean" else total

    def backward(self, grad: Tensor) -> tuple[Tensor, Tensor | None]:
        """``(grad_weight, grad_per_sample_weights)`` for sum and mean."""
        rows = grad[self.bag_of]
        if self.mode == "mean":
            rows = rows / self.sizes[self.bag_of].to(torch.float64).unsqueeze(1)
        grad_psw = None
        if self.psw is not None:
            grad_psw = (rows * self.weight[self.ids]).sum(1)
            rows = rows * self.psw.unsqueeze(1)
        if self.freq:
            rows = rows / self.frequency
        return add_rows(self.num, self.ids, rows), grad_psw


@pytest.mark.parametrize(("seed", "rng"), cases("embedding_kernels"))
def test_embedding_kernels_forward_and_backward(seed: int, rng: random.Random) -> None:
    generator = seeded(rng)
    if rng.random() < 0.3:
        _plain_embedding(rng, generator)
        return
    bags = Bags(rng, generator)
    expected, counter = elementary_count(bags.forward)
    torch.testing.assert_close(bags.call(bags.weight, bags.psw), expected)
    leaf = bags.weight.clone().requires_grad_(True)
    psw = bags.psw.clone().requires_grad_(True) if bags.psw is not None else None
    counted = library_count(lambda: bags.call(leaf, psw))
    assert counted.status == "complete", counted.diagnostics
    assert counted.operator("aten._embedding_bag") == counter.flops, (bags.mode, counted.by_operator)

    out = bags.call(leaf, psw)
    grad = torch.randn(out.shape, generator=generator, dtype=out.dtype)
    if bags.mode == "max":  # the forward's argmax rows, an input of the backward kernel
        per_bag = [bags.ids[members][bags.weight[bags.ids[members]].argmax(0)] for members in bags.members]
        argmax = torch.stack(per_bag)  # (bags, D)
        index = argmax.reshape(-1) * bags.width + torch.arange(bags.width).repeat(len(bags.sizes))

        def max_backward() -> Tensor:
            flat = torch.zeros(bags.num * bags.width, dtype=grad.dtype).index_add(0, index, grad.reshape(-1))
            return flat.reshape(bags.num, bags.width)

        grad_weight, backward = elementary_count(max_backward)
        grad_psw = None
    else:
        (grad_weight, grad_psw), backward = elementary_count(lambda: bags.backward(grad))
    counted = library_count(lambda: out.backward(grad))
    assert counted.status == "complete", counted.diagnostics
    if not (bags.freq and FREQUENCY_BUG):
        torch.testing.assert_close(leaf.grad, grad_weight)
    kernels = (
        "aten._embedding_bag_backward",
        "aten._embedding_bag_dense_backward",
        "aten._embedding_bag_per_sample_weights_backward",
    )
    if psw is not None:
        torch.testing.assert_close(psw.grad, grad_psw)
    assert sum(counted.operator(k) for k in kernels) == backward.flops, (bags.mode, counted.by_operator)


def _plain_embedding(rng: random.Random, generator: torch.Generator) -> None:
    """``F.embedding``: its forward is a gather (ignored); ``embedding_dense_backward`` adds each gradient
    row into its weight row, dividing by the row's frequency with ``scale_grad_by_freq``."""
    num, width = rng.randint(2, 9), rng.randint(1, 5)
    shape = [rng.randint(1, 4) for _ in range(rng.randint(1, 2))]
    ids = torch.randint(0, num, shape, generator=generator)
    freq = rng.random() < 0.4
    leaf = torch.randn(num, width, generator=generator, dtype=torch.float64, requires_grad=True)
    out = F.embedding(ids, leaf, scale_grad_by_freq=freq)
    grad = torch.randn(out.shape, generator=generator, dtype=out.dtype)
    flat_ids, rows = ids.reshape(-1), grad.reshape(-1, width)
    frequency = torch.bincount(flat_ids, minlength=num)[flat_ids].to(torch.float64).unsqueeze(1)

    def backward() -> Tensor:
        values = rows / frequency if freq else rows
        return add_rows(num, flat_ids, values)

    expected, counter = elementary_count(backward)
    counted = library_count(lambda: out.backward(grad))
    assert counted.status == "complete", counted.diagnostics
    torch.testing.assert_close(leaf.grad, expected)
    assert counted.operator("aten.embedding_dense_backward") == counter.flops, counted.by_operator
