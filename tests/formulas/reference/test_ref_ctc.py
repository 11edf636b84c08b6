"""Reference checks of the CTC loss kernels, forward and backward (truth.md 1 and 5).

Reference (a): the forward-backward recursions of Graves et al. (2006) re-implemented per sample from
element-wise operators under :class:`ElementaryCounter` (selection free, as the loss kernels' convention):

* ``α`` over the lattice of ``S = 2L + 1`` states, one vectorised step per time step: the three
  summands of eq. 6 (``α_{t−1}(s)``, ``α_{t−1}(s − 1)``, and ``α_{t−1}(s − 2)`` where the labels
  allow the skip, ``−∞`` otherwise), their maximum (2 comparisons), the ``m = −∞`` guard (1), three
  subtracts, three ``exp``, two adds, ``log``, ``+ m`` and ``+ log y_t(l'_s)``: 14 per cell; the
  likelihood from the two final states (10) or the blank state (1);
* ``β`` the same way backwards; ``α + β`` for every cell of ``t ≤ T − 2`` and for the final states
  at ``t = T − 1``; the log-sum-exp of each symbol's cells (``amax``, subtract, ``exp``, ``sum``,
  ``log``, add: 4 per summed value — its all-``−∞`` guard is a free selection, as in ``logsumexp``'s
  convention); and ``(exp(lp) − exp(collected + nll − lp))·grad`` per ``(t, class)``.

The re-implementation's loss, ``log_alpha`` and gradient are checked against PyTorch's kernels on the
same values before its count is compared with the library's, through real dispatch (``F.ctc_loss``
forward and ``backward``), for both overloads (lengths as ``int`` lists and as tensors), padded and
concatenated targets, unbatched inputs, every reduction and ``zero_infinity``.
"""

from __future__ import annotations

import math
import random

import pytest
import torch
import torch.nn.functional as F

from reference.elementary import elementary_count
from reference.harness import cases, library_count, seeded
from torchscan.formulas.operator_common import UnsupportedOperatorFormula
from torchscan.formulas.operator_registry import supplemental_formula

NEG = -math.inf


class Sample:
    """One sample's lattice: its log-probabilities ``(T, C)``, labels, blank and extended labels."""

    def __init__(self, lp: torch.Tensor, labels: list[int], blank: int) -> None:
        self.lp, self.labels, self.blank = lp, labels, blank
        self.ext = [blank]
        for label in labels:
            self.ext += [label, blank]
        self.states = len(self.ext)
        self.index = torch.tensor(self.ext)
        self.neg = torch.full((self.states + 2,), NEG, dtype=lp.dtype)
        self.skip_forward = torch.tensor(
            [s > 1 and self.ext[s] != self.ext[s - 2] for s in range(self.states)]
        )
        self.skip_backward = torch.tensor(
            [s < self.states - 2 and self.ext[s + 2] != self.ext[s] for s in range(self.states)]
        )


def _step(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, emission: torch.Tensor) -> torch.Tensor:
    """One cell of eq. 6/10 for a whole time step: logsumexp of three terms plus the emission (14)."""
    m = torch.maximum(torch.maximum(a, b), c)
    m = torch.where(m == NEG, 0.0, m)
    total = torch.exp(a - m) + torch.exp(b - m) + torch.exp(c - m)
    return torch.log(total) + m + emission


def alpha(x: Sample) -> torch.Tensor:
    """``log α`` of shape ``(T, S)`` (``T ≥ 1``)."""
    s, neg = x.states, x.neg
    first = neg[:s].clone()
    first[0] = x.lp[0, x.blank]
    if x.labels:
        first[1] = x.lp[0, x.ext[1]]
    rows = [first]
    for t in range(1, x.lp.shape[0]):
        prev = rows[-1]
        one = torch.cat([neg[:1], prev])[:s]
        two = torch.where(x.skip_forward, torch.cat([neg[:2], prev])[:s], neg[:s])
        rows.append(_step(prev, one, two, x.lp[t][x.index]))
    return torch.stack(rows)


def beta(x: Sample) -> torch.Tensor:
    """``log β`` of shape ``(T, S)`` (``T ≥ 1``)."""
    s, neg, time = x.states, x.neg, x.lp.shape[0]
    last = neg[:s].clone()
    last[s - 1] = x.lp[time - 1, x.blank]
    if x.labels:
        last[s - 2] = x.lp[time - 1, x.ext[s - 2]]
    rows = [last]
    for t in range(time - 2, -1, -1):
        nxt = rows[-1]
        one = torch.cat([nxt, neg[:1]])[1:]
        two = torch.where(x.skip_backward, torch.cat([nxt, neg[:2]])[2:], neg[:s])
        rows.append(_step(nxt, one, two, x.lp[t][x.index]))
    return torch.stack(rows[::-1])


def negative_log_likelihood(x: Sample, a: torch.Tensor) -> torch.Tensor:
    """``−log p(l | x)`` from the final states (eq. 8)."""
    end = a[-1]
    if not x.labels:
        return -end[0]
    l1, l2 = end[x.states - 1], end[x.states - 2]
    m = torch.maximum(l1, l2)
    m = torch.where(m == NEG, 0.0, m)
    return -(torch.log(torch.exp(l1 - m) + torch.exp(l2 - m)) + m)


def _collect(values: torch.Tensor, guard: torch.Tensor) -> torch.Tensor:
    """Row-wise log-sum-exp of ``values`` ``(rows, k)``: 4 per value; ``guard`` marks all-``−∞`` rows."""
    m = values.amax(1, keepdim=True)
    m = torch.where(guard, 0.0, m)
    return torch.log(torch.exp(values - m).sum(1, keepdim=True)) + m


def gradient(
    x: Sample, a: torch.Tensor, b: torch.Tensor, nll: torch.Tensor, grad: torch.Tensor, guards: dict
) -> torch.Tensor:
    """The kernel's gradient for ``log_probs`` ``(T, C)`` (eq. 16). ``guards`` caches, per group, which
    rows are all ``−∞``: filled by an uncounted first run, read by the counted one."""
    time, classes = x.lp.shape
    collected = torch.full((time, classes), NEG, dtype=x.lp.dtype)
    if time > 1:
        ab = a[:-1] + b[:-1]
        for symbol in sorted(set(x.ext)):
            columns = [s for s, label in enumerate(x.ext) if label == symbol]
            values = ab[:, columns]
            if symbol not in guards:
                guards[symbol] = values.amax(1, keepdim=True) == NEG
            collected[:-1, symbol] = _collect(values, guards[symbol])[:, 0]
    finals = [x.states - 1] + ([x.states - 2] if x.labels else [])
    ends = (a[-1, finals] + b[-1, finals]).unsqueeze(1)
    if "final" not in guards:
        guards["final"] = ends == NEG
    collected[-1, [x.ext[s] for s in finals]] = _collect(ends, guards["final"])[:, 0]
    return (torch.exp(x.lp) - torch.exp(collected + nll - x.lp)) * grad


class Case:
    """One randomised ``F.ctc_loss`` call."""

    def __init__(self, rng: random.Random) -> None:
        self.generator = seeded(rng)
        self.batch = rng.randint(1, 3)
        self.unbatched = self.batch == 1 and rng.random() < 0.3
        self.classes = rng.randint(2, 6)
        self.blank = rng.randrange(self.classes)
        self.zero_infinity = rng.random() < 0.3
        self.reduction = rng.choice(("none", "sum", "mean"))
        self.as_tensors = rng.random() < 0.5
        self.concatenated = rng.random() < 0.4 and not self.unbatched
        labels_pool = [c for c in range(self.classes) if c != self.blank]
        self.labels: list[list[int]] = []
        self.time: list[int] = []
        for _ in range(self.batch):
            labels = [rng.choice(labels_pool) for _ in range(rng.randint(0, 4))]
            repeats = sum(1 for i in range(1, len(labels)) if labels[i] == labels[i - 1])
            time = rng.randint(0, 7)
            if self.zero_infinity and len(labels) <= time < len(labels) + repeats:
                time = len(labels) + repeats  # infeasible only through repeats: not credited (ctc_ops)
            self.labels.append(labels)
            self.time.append(time)
        self.frames = max([*self.time, 1])
        self.width = max([len(labels) for labels in self.labels] + [1])
        shape = (self.frames, self.classes) if self.unbatched else (self.frames, self.batch, self.classes)
        self.log_probs = torch.randn(shape, generator=self.generator, dtype=torch.float64).log_softmax(-1)

    def arguments(self) -> tuple:
        if self.concatenated or self.unbatched:  # an unbatched target is its labels, unpadded
            targets = torch.tensor([label for labels in self.labels for label in labels], dtype=torch.long)
        else:
            padded = [labels + [self.blank] * (self.width - len(labels)) for labels in self.labels]
            targets = torch.tensor(padded, dtype=torch.long)
        lengths = [len(labels) for labels in self.labels]
        if self.as_tensors:
            if self.unbatched:
                return targets, torch.tensor(self.time[0]), torch.tensor(lengths[0])
            return targets, torch.tensor(self.time), torch.tensor(lengths)
        return targets, tuple(self.time), tuple(lengths)

    def call(self, log_probs: torch.Tensor) -> torch.Tensor:
        targets, time, lengths = self.arguments()
        return F.ctc_loss(
            log_probs, targets, time, lengths, blank=self.blank, reduction=self.reduction,
            zero_infinity=self.zero_infinity,
        )  # fmt: skip

    def sample(self, b: int, log_probs: torch.Tensor) -> Sample:
        lp = log_probs if self.unbatched else log_probs[:, b]
        return Sample(lp[: self.time[b]], self.labels[b], self.blank)

    def per_sample_grad(self, grad: torch.Tensor) -> list[torch.Tensor]:
        """The gradient each sample's loss receives from the reduction (the kernel's ``grad`` input)."""
        if self.reduction == "none":
            return [grad.reshape(-1)[b] for b in range(self.batch)]
        if self.reduction == "sum":
            return [grad.reshape(())] * self.batch
        return [grad.reshape(()) / max(len(labels), 1) / self.batch for labels in self.labels]


def reference_forward(case: Case) -> tuple[list[torch.Tensor], list[torch.Tensor | None]]:
    losses, alphas = [], []
    for b in range(case.batch):
        x = case.sample(b, case.log_probs)
        if case.time[b] == 0:
            losses.append(torch.tensor(0.0 if not x.labels else math.inf, dtype=torch.float64))
            alphas.append(None)
            continue
        a = alpha(x)
        losses.append(negative_log_likelihood(x, a))
        alphas.append(a)
    return losses, alphas


def reference_backward(
    case: Case, losses: list, alphas: list, grads: list, guards: list[dict]
) -> list[torch.Tensor]:
    """The gradient per sample; ``α`` is the forward's (the kernel receives ``log_alpha``)."""
    result = []
    for b in range(case.batch):
        x = case.sample(b, case.log_probs)
        skipped = case.zero_infinity and len(case.labels[b]) > case.time[b]
        if case.time[b] == 0 or skipped:
            result.append(torch.zeros(case.time[b], case.classes, dtype=torch.float64))
            continue
        result.append(gradient(x, alphas[b], beta(x), losses[b], grads[b], guards[b]))
    return result


@pytest.mark.parametrize(("seed", "rng"), cases("ctc_loss"))
def test_ctc_kernels_count_the_forward_backward_recursions(seed: int, rng: random.Random) -> None:
    case = Case(rng)
    (losses, alphas), forward = elementary_count(lambda: reference_forward(case), free_selection=True)
    # the re-implementation computes the kernel's numbers
    nll, log_alpha = torch.ops.aten._ctc_loss(
        case.log_probs if not case.unbatched else case.log_probs.unsqueeze(1),
        *(_kernel_arguments(case)),
    )
    for b, a in enumerate(alphas):
        torch.testing.assert_close(nll[b], losses[b])
        if a is not None:
            torch.testing.assert_close(log_alpha[b, : a.shape[0], : a.shape[1]], a)
    leaf = case.log_probs.clone().requires_grad_(True)
    counted = library_count(lambda: case.call(leaf))
    assert counted.status == "complete", counted.diagnostics
    assert counted.operator("aten._ctc_loss") == forward.flops, (counted.by_operator, forward.by_operator)

    loss = case.call(leaf)
    grad = torch.rand(loss.shape, generator=case.generator, dtype=loss.dtype) + 0.5
    (kernel_grad,) = torch.autograd.grad(loss, leaf, grad, retain_graph=True)
    grads = case.per_sample_grad(grad)
    guards: list[dict] = [{} for _ in range(case.batch)]
    reference_backward(case, losses, alphas, grads, guards)  # uncounted: fills the all-−∞ guards
    expected, backward = elementary_count(
        lambda: reference_backward(case, losses, alphas, grads, guards), free_selection=True
    )
    for b, values in enumerate(expected):
        got = kernel_grad if case.unbatched else kernel_grad[:, b]
        torch.testing.assert_close(got[: case.time[b]], values, equal_nan=True)
    counted = library_count(lambda: loss.backward(grad))
    assert counted.status == "complete", counted.diagnostics
    assert counted.operator("aten._ctc_loss_backward") == backward.flops, (
        counted.by_operator,
        backward.by_operator,
    )


def _kernel_arguments(case: Case) -> tuple:
    targets, time, lengths = case.arguments()
    if case.as_tensors:
        time, lengths = time.reshape(-1), lengths.reshape(-1)
        return targets, time, lengths, case.blank, case.zero_infinity
    return targets, list(time), list(lengths), case.blank, case.zero_infinity


def test_ctc_training_step_of_the_zoo_is_complete() -> None:
    """QuartzNet's loss (zoo_truth.grouped.ctc_loss): 64 frames, 2 samples of 6 labels, 29 classes.

    Per sample: forward 14·63·13 + 10 = 11,476; backward 14·63·13 + 5·(63·13 + 2) + 6·64·29 =
    11,466 + 4,105 + 11,136 = 26,707.
    """
    log_probs = torch.randn(64, 2, 29, dtype=torch.float64).log_softmax(-1).requires_grad_(True)
    targets = torch.arange(12).view(2, 6) % 28 + 1
    frames, lengths = torch.full((2,), 64, dtype=torch.long), torch.full((2,), 6, dtype=torch.long)
    counted = library_count(lambda: F.ctc_loss(log_probs, targets, frames, lengths).backward())
    assert counted.status == "complete", counted.diagnostics
    assert counted.operator("aten._ctc_loss") == 2 * 11_476
    assert counted.operator("aten._ctc_loss_backward") == 2 * 26_707


def test_ctc_lengths_as_meta_tensors_are_unsupported_not_zero() -> None:
    """The CTC kernels have no meta implementation, so the formulas are called directly here: length
    tensors without values make the call unsupported (a diagnostic naming the lengths, never 0);
    ``int`` lengths need no values (one sample, 4 frames, 2 labels: 14·3·5 + 10 = 220)."""
    formula = supplemental_formula("aten._ctc_loss")
    assert formula is not None
    log_probs = torch.empty(4, 1, 3, device="meta")
    targets = torch.empty(1, 2, dtype=torch.long, device="meta")
    lengths = torch.empty(1, dtype=torch.long, device="meta")
    with pytest.raises(UnsupportedOperatorFormula, match="lengths"):
        formula((log_probs, targets, lengths, lengths), {}, (log_probs[0, :, 0], log_probs))
    assert formula((log_probs, targets, [4], [2]), {}, (log_probs[0, :, 0], log_probs)) == 220


def test_ctc_infinite_loss_through_repeats_is_not_credited() -> None:
    """The documented limit: with ``zero_infinity``, a loss made infinite by a repeated label (``aa``
    needs 3 frames; 2 given) is zero-filled by the kernel, but lengths alone cannot tell, so the
    backward counts the sample in full: 14·1·5 + 5·(5 + 2) + 6·2·3 = 141."""
    log_probs = torch.randn(2, 1, 3, dtype=torch.float64).log_softmax(-1).requires_grad_(True)
    loss = F.ctc_loss(log_probs, torch.tensor([[1, 1]]), [2], [2], reduction="sum", zero_infinity=True)
    counted = library_count(lambda: loss.backward())
    assert counted.operator("aten._ctc_loss_backward") == 141
