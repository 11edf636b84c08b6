"""Loss kernels of a training step (training-and-hardware.md 2), ``torchscan_flops_v1``.

Forward and backward kernels of the losses PyTorch implements as single operators (``nll_loss``,
``mse_loss``, ``binary_cross_entropy``, ``smooth_l1_loss``, ``huber_loss``, ``soft_margin_loss``,
``multi_margin_loss``); composite losses
(``cross_entropy``, ``l1_loss``, ``kl_div``, …) reach the observer as their parts. Costs as
formulas.md B.8: a multiply, add, subtract, divide, comparison, ``log``, ``exp``, ``abs`` or ``sign``
costs 1; selecting a value is free. ``N`` is the element count of the input; a reduction sums
``N − 1`` values and ``mean`` divides once more (the reduction enum: 0 none, 1 mean, 2 sum); a mean
backward divides every gradient element by ``N`` (``+N``).
"""

from __future__ import annotations

from torchscan.formulas.operator_common import OperatorFormula, arg, elements

__all__ = ["LOSS_FORMULAS"]

_NONE, _MEAN = 0, 1  # torch's reduction enum: 0 none, 1 mean, 2 sum


def nll_loss_forward(args: tuple, kwargs: dict, out: object) -> int:
    """``(self, target, weight, reduction, ignore_index)`` with ``T`` targets: picking is indexing;
    negate T, class weight ``W·T``; a reduction sums ``T − 1``; mean divides once and, with a weight,
    sums the picked weights ``T − 1``."""
    targets, weight, reduction = elements(args[1]), args[2] is not None, args[3]
    count = targets + weight * targets
    if reduction != _NONE:
        count += max(targets - 1, 0)
    if reduction == _MEAN:
        count += 1 + weight * max(targets - 1, 0)
    return count


def nll_loss_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, self, target, weight, reduction, ignore_index, total_weight)``: per target
    ``−grad·w / total_weight``: negate 1, weight W, mean divide 1; the scatter moves data."""
    targets, weight, reduction = elements(args[2]), args[3] is not None, args[4]
    return targets * (1 + weight + (reduction == _MEAN))


def mse_loss(args: tuple, kwargs: dict, out: object) -> int:
    """``(self, target, reduction)``: subtract N, square N; a reduction sums ``N − 1``, mean +1."""
    n, reduction = elements(args[0]), arg(args, kwargs, 2, "reduction", _MEAN)
    count = 2 * n
    if reduction != _NONE:
        count += max(n - 1, 0) + (reduction == _MEAN)
    return count


def mse_loss_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, self, target, reduction)``: ``2·(x − t)·grad`` 3N; mean divides by N: ``+N``."""
    n, reduction = elements(args[1]), arg(args, kwargs, 3, "reduction", _MEAN)
    return 3 * n + n * (reduction == _MEAN)


def _reduced(n: int, reduction: int) -> int:
    """The reduction of ``n`` per-element losses: ``N − 1`` adds, mean one divide more."""
    return 0 if reduction == _NONE else max(n - 1, 0) + (reduction == _MEAN)


def binary_cross_entropy(args: tuple, kwargs: dict, out: object) -> int:
    """``(self, target, weight, reduction)``: ``−w·(t·log x + (1 − t)·log(1 − x))`` with PyTorch's
    clamp of each log at −100: two logs 2, two clamps 2, ``1 − x`` and ``1 − t`` 2, two products 2,
    the add and the negation 2: ``10N``; a weight ``+N``; then the reduction."""
    n, weight = elements(args[0]), arg(args, kwargs, 2, "weight") is not None
    return (10 + weight) * n + _reduced(n, arg(args, kwargs, 3, "reduction", _MEAN))


def binary_cross_entropy_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, self, target, weight, reduction)``: ``g·(x − t) / max((1 − x)·x, ε)``: subtract,
    ``1 − x``, product, max, divide, ``g·``: ``6N``; a weight ``+N``; mean ``+N``."""
    n, weight = elements(args[1]), arg(args, kwargs, 3, "weight") is not None
    return (6 + weight + (arg(args, kwargs, 4, "reduction", _MEAN) == _MEAN)) * n


def binary_cross_entropy_with_logits(args: tuple, kwargs: dict, out: object) -> int:
    """``(self, target, weight, pos_weight, reduction)``: PyTorch's stable form
    ``(1 − t)·x + ℓ·(log(1 + exp(−|x|)) + max(−x, 0))``: ``1 − t``, ``·x``, abs, negate, exp,
    ``log1p``, negate, max, two adds: ``10N``; ``pos_weight`` makes ``ℓ = (p − 1)·t + 1``: ``p − 1`` on
    ``pos_weight``'s own elements ``P`` (it broadcasts afterwards), ``·t``, ``+ 1`` and the product
    ``3N``: ``+3N + P``; a weight ``+N``; then the reduction."""
    n = elements(args[0])
    weight = arg(args, kwargs, 2, "weight") is not None
    pos_weight = arg(args, kwargs, 3, "pos_weight")
    positive = 0 if pos_weight is None else 3 * n + elements(pos_weight)
    return (10 + weight) * n + positive + _reduced(n, arg(args, kwargs, 4, "reduction", _MEAN))


def smooth_l1_loss(args: tuple, kwargs: dict, out: object) -> int:
    """``(self, target, reduction, beta)``: ``d = |x − t|`` 2, ``d < β`` 1, ``0.5·d²/β`` 3,
    ``d − 0.5·β`` 1 (both branches are computed, one selected): ``7N``; then the reduction.
    ``huber_loss(self, target, reduction, delta)`` has the same count (``0.5·d²`` 2 and
    ``δ·(d − 0.5·δ)`` 2)."""
    n = elements(args[0])
    return 7 * n + _reduced(n, arg(args, kwargs, 2, "reduction", _MEAN))


def smooth_l1_loss_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, self, target, reduction, beta)``: ``d = x − t`` 1, ``|d| < β`` 2, ``d/β`` or
    ``sign(d)`` 2, ``g·`` 1: ``6N``; mean ``+N``. ``huber_loss_backward`` (``d`` or ``δ·sign(d)``)
    counts the same."""
    n = elements(args[1])
    return (6 + (arg(args, kwargs, 3, "reduction", _MEAN) == _MEAN)) * n


def soft_margin_loss(args: tuple, kwargs: dict, out: object) -> int:
    """``(self, target, reduction)``: ``log(1 + exp(−t·x))``: product, negate, exp, add, log: ``5N``;
    then the reduction."""
    n = elements(args[0])
    return 5 * n + _reduced(n, arg(args, kwargs, 2, "reduction", _MEAN))


def soft_margin_loss_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, self, target, reduction)``: ``z = exp(−t·x)`` 3, ``−t·z/(1 + z)`` 4, ``g·`` 1: ``8N``;
    mean ``+N``."""
    n = elements(args[1])
    return (8 + (arg(args, kwargs, 3, "reduction", _MEAN) == _MEAN)) * n


def _margin_terms(args: tuple, kwargs: dict, weight_index: int) -> tuple[int, int, int]:
    """``(samples, classes, extras)`` of a multi-class margin loss: ``extras`` counts the square
    (``p = 2``) and the class weight per term."""
    scores = args[1 if weight_index == 5 else 0]
    classes = int(scores.shape[-1]) if scores.dim() else 1
    samples = elements(scores) // classes if classes else 0
    p = arg(args, kwargs, weight_index - 2, "p", 1)
    extras = (p == 2) + (arg(args, kwargs, weight_index, "weight") is not None)
    return samples, classes, extras


def multi_margin_loss(args: tuple, kwargs: dict, out: object) -> int:
    """``(self[N, C], target, p, margin, weight, reduction)``: per sample, for each of the ``C − 1``
    other classes ``max(0, margin − x_y + x_c)`` 3, its square (``p = 2``) and weight 1 each; the
    ``C − 2`` adds and the divide by ``C``: ``(C − 1)·(4 + extras)`` per sample (a single class still
    divides its empty sum: 1); then the reduction over samples."""
    samples, classes, extras = _margin_terms(args, kwargs, 4)
    per_sample = max(classes - 1, 0) * (3 + extras) + max(classes - 2, 0) + 1
    return samples * per_sample + _reduced(samples, arg(args, kwargs, 5, "reduction", _MEAN))


def multi_margin_loss_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, self, target, p, margin, weight, reduction)``: per term the margin and its test 3,
    ``2z`` (``p = 2``) and weight 1 each, the ``g/C`` product 1 and the add into ``x_y``'s gradient 1:
    ``(C − 1)·(5 + extras)`` per sample; mean divides once per sample."""
    samples, classes, extras = _margin_terms(args, kwargs, 5)
    mean = arg(args, kwargs, 6, "reduction", _MEAN) == _MEAN
    return samples * (max(classes - 1, 0) * (5 + extras) + mean)


LOSS_FORMULAS: dict[str, OperatorFormula] = {
    "nll_loss_forward": nll_loss_forward,
    "nll_loss_backward": nll_loss_backward,
    "nll_loss2d_forward": nll_loss_forward,
    "nll_loss2d_backward": nll_loss_backward,
    "mse_loss": mse_loss,
    "mse_loss_backward": mse_loss_backward,
    "binary_cross_entropy": binary_cross_entropy,
    "binary_cross_entropy_backward": binary_cross_entropy_backward,
    "binary_cross_entropy_with_logits": binary_cross_entropy_with_logits,
    "smooth_l1_loss": smooth_l1_loss,
    "smooth_l1_loss_backward": smooth_l1_loss_backward,
    "huber_loss": smooth_l1_loss,
    "huber_loss_backward": smooth_l1_loss_backward,
    "soft_margin_loss": soft_margin_loss,
    "soft_margin_loss_backward": soft_margin_loss_backward,
    "multi_margin_loss": multi_margin_loss,
    "multi_margin_loss_backward": multi_margin_loss_backward,
}
"""Bare aten name -> formula ``(args, kwargs, out) -> int``."""
