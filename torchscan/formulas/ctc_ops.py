"""Operator formulas of the CTC loss kernels, forward and backward (``torchscan_flops_v1``).

``aten._ctc_loss`` and ``aten._ctc_loss_backward`` run the forward-backward recursions of Graves et
al. (2006), eqs. 6–16, in log space, over each sample's lattice of ``T_b`` time steps and ``S_b =
2·L_b + 1`` states (its ``L_b`` labels interleaved with blanks). ``T_b`` and ``L_b`` are the sample's
input and target lengths: arguments, read as Python ints (``int[]`` overloads) or as the values of
the length tensors (``.Tensor`` overloads, as PyTorch's own kernels read them), never on meta or fake
tensors. ``C`` is the number of classes. Costs are formulas.md B.8's (an add, subtract, comparison,
``exp`` or ``log`` is 1; selecting a computed value or a constant ``−∞`` is free). Per sample:

* **one recursion step** (a lattice cell ``(t, s)``, ``t ≥ 1``; the backward's ``β`` cells mirror
  it): ``α_t(s) = logsumexp(α_{t−1}(s), α_{t−1}(s−1), α_{t−1}(s−2)) + log y_t(l'_s)``, the three
  terms always evaluated (``−∞`` stands for a term the lattice or a repeated label excludes, as in
  PyTorch's CPU and CUDA kernels): the maximum of three 2, the ``m = −∞`` guard 1, three subtracts
  3, three ``exp`` 3, two adds 2, ``log`` 1, adding back ``m`` 1 and the emission 1: **14**;
* **forward**: ``14·(T_b − 1)·S_b`` and the likelihood: with labels ``−log(exp(l1 − m) + exp(l2 − m))
  − m`` over the two final states (max, guard, 2 subtracts, 2 ``exp``, add, ``log``, add, negate:
  10), without labels the negation of the blank state's ``α`` (1); 0 for ``T_b = 0``;
* **backward**: the ``β`` recursion ``14·(T_b − 1)·S_b``; then for every cell whose ``β`` is not
  structurally ``−∞`` (every cell of ``t ≤ T_b − 2``, the ``min(S_b, 2)`` final states at
  ``t = T_b − 1``) the product ``α·β`` (a log-space add, 1) and its share of the log-sum-exp that
  collects the cells of one symbol into the gradient of eq. 16 (``logsumexp``'s convention, 4 per
  summed value — so the count does not depend on how often a label repeats): 5; finally, for every
  ``(t < T_b, class)``, ``(exp(lp) − exp(collected + nll − lp))·grad``: 6. With ``zero_infinity``,
  a sample whose target is longer than its input (an infinite loss for any values) is zero-filled:
  0. An infinite loss from repeated labels or ``−∞`` log-probabilities is value-dependent and is not
  credited (its sample is counted in full).

The CPU kernel compares a term with the maximum only where it exists and merges a symbol's cells
one by one; the counts above are those of the documented recursion, not of its instructions.
"""

from __future__ import annotations

from torchscan.formulas.operator_common import UnsupportedOperatorFormula, arg
from torchscan.formulas.operator_registry import register

LENGTHS_REASON = (
    "CTC loss FLOPs depend on each sample's input and target lengths; passed as tensors, their "
    "values cannot be read on meta or fake tensors."
)

STEP = 14
"""FLOPs of one cell of the ``α`` (or ``β``) recursion."""


def _lengths(value: object) -> list[int]:
    """Per-sample lengths of an ``int[]`` argument, or of a length tensor read as values."""
    if isinstance(value, list | tuple):
        return [int(item) for item in value]
    device = getattr(value, "device", None)
    if device is None or device.type == "meta" or type(value).__name__ in ("FakeTensor", "FunctionalTensor"):
        raise UnsupportedOperatorFormula(LENGTHS_REASON)
    values = value.tolist()  # type: ignore[attr-defined]
    return [int(item) for item in values] if isinstance(values, list) else [int(values)]


def _samples(args: tuple, first: int) -> list[tuple[int, int]]:
    """``(T_b, L_b)`` per sample, from the lengths at positions ``first`` and ``first + 1``."""
    inputs, targets = _lengths(args[first]), _lengths(args[first + 1])
    return list(zip(inputs, targets, strict=True))


def ctc_forward_flops(time: int, labels: int) -> int:
    """The forward's FLOPs for one sample of ``time`` steps and ``labels`` labels."""
    if time <= 0:
        return 0
    return STEP * (time - 1) * (2 * labels + 1) + (10 if labels > 0 else 1)


def ctc_backward_flops(time: int, labels: int, classes: int) -> int:
    """The backward's FLOPs for one sample of ``time`` steps, ``labels`` labels and ``classes``."""
    if time <= 0:
        return 0
    states = 2 * labels + 1
    cells = (time - 1) * states + min(states, 2)  # cells whose β is not structurally −∞
    return STEP * (time - 1) * states + 5 * cells + 6 * time * classes


@register("_ctc_loss")
def ctc_loss(args: tuple, kwargs: dict, out: object) -> int:
    """``(log_probs[T, N, C], targets, input_lengths, target_lengths, blank, zero_infinity)`` ->
    ``(neg_log_likelihood[N], log_alpha)``: :func:`ctc_forward_flops` summed over the samples."""
    return sum(ctc_forward_flops(time, labels) for time, labels in _samples(args, 2))


@register("_ctc_loss_backward")
def ctc_loss_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad[N], log_probs[T, N, C], targets, input_lengths, target_lengths, neg_log_likelihood,
    log_alpha, blank, zero_infinity)``: :func:`ctc_backward_flops` summed over the samples; with
    ``zero_infinity``, a sample with ``L_b > T_b`` (certainly infinite) counts 0."""
    classes = int(args[1].shape[-1])
    skip_impossible = bool(arg(args, kwargs, 8, "zero_infinity", False))
    return sum(
        0 if skip_impossible and labels > time else ctc_backward_flops(time, labels, classes)
        for time, labels in _samples(args, 3)
    )
