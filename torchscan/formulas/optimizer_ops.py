"""Optimizer kernels of a training step (training-and-hardware.md 2), ``torchscan_flops_v1``.

PyTorch's SGD, Adam and AdamW run one of three implementations: a per-parameter loop of plain operators
(``mul_``, ``lerp_``, ``addcmul_``, ``sqrt``, ``div``, ``add_``, ``addcdiv_``; the default on CPU,
counted by the B.8 rows), the ``_foreach_*`` list operators (the default on CUDA) and the fused kernels
``_fused_sgd_``, ``_fused_adam_``, ``_fused_adamw_`` (``_fused_adagrad_`` for Adagrad). A ``_foreach_*``
operator costs what the plain operator of its name costs on every tensor of its first list, so its
formula is the sum of the per-tensor B.8 cost. A fused kernel performs the documented update of
``torch.optim`` per element; its formula counts the same arithmetic as the loop and list implementations
of the same update (scalar bias corrections computed once per tensor are not element work and count 0
everywhere), so the three implementations of one step report the same optimizer FLOPs.

Convention as formulas.md B.8: a multiply, add, subtract, divide, comparison or square root costs 1;
a scaled operand (``alpha``/``value`` ≠ 1) one more multiply; ``lerp`` 3 (difference, product, add).
Formulas read shapes and Python scalars only, never tensor values.
"""

from __future__ import annotations

import math

from torchscan.formulas.operator_common import OperatorFormula, arg, power_sum_flops

__all__ = ["AMP_FORMULAS", "FOREACH_FORMULAS", "FUSED_FORMULAS", "IGNORED_FOREACH"]

IGNORED_FOREACH = ("_foreach_copy_", "_foreach_zero_")
"""List operators that only move or fill data (``zero_grad(set_to_none=False)``, state copies)."""


def _numel(tensor: object) -> int:
    return math.prod(tensor.shape)  # type: ignore[attr-defined]


def _list_elements(tensors: object) -> list[int]:
    """Element count of every tensor of an operator's tensor-list argument."""
    return [_numel(tensor) for tensor in tensors]  # type: ignore[attr-defined]


def _first_list(args: tuple) -> list[int]:
    """Element counts of the first tensor-list argument (``_foreach_pow(2.0, exponents)`` starts
    with a scalar; the list decides the work)."""
    for value in args:
        if isinstance(value, list | tuple):
            return _list_elements(value)
    return []


def _scaled(value: object) -> int:
    """1 when a coefficient multiplies an operand: a Python scalar other than 1, or a tensor."""
    return 0 if isinstance(value, int | float) and value == 1 else 1


def _coefficients(value: object, count: int) -> list[int]:
    """Per-tensor :func:`_scaled` of a ``Scalar``, ``Scalar[]`` or tensor coefficient."""
    if isinstance(value, list | tuple):
        return [_scaled(item) for item in value]
    return [_scaled(value)] * count


def foreach_per_element(cost: int) -> OperatorFormula:
    """Factory: ``cost`` FLOPs per element of every tensor of the first list (``sqrt``, ``mul``, …).

    ``_foreach_mul_(tensors, s)`` is ``tensors[i].mul_(s)`` for each ``i``: the B.8 cost of the plain
    operator (here ``cost`` per element) summed over the list.
    """

    def formula(args: tuple, kwargs: dict, out: object) -> int:
        return cost * sum(_first_list(args))

    formula.__name__ = formula.__qualname__ = f"foreach_elements_x{cost}"
    formula.__doc__ = f"{cost} FLOP(s) per element of every tensor of the first list."
    return formula


def foreach_each(per_tensor: OperatorFormula) -> OperatorFormula:
    """Factory: a unary ``_foreach_<op>(tensors)`` costs ``<op>``'s formula summed over the list.

    Each tensor is counted as ``<op>(tensors[i])`` with its own result: the returned list, the
    ``out=`` list, or (in place, nothing returned) the tensor itself.
    """

    def formula(args: tuple, kwargs: dict, out: object) -> int:
        tensors = list(args[0])
        results = kwargs.get("out", out)
        results = list(results) if isinstance(results, list | tuple) and results else tensors
        return sum(
            int(per_tensor((tensor,), {}, result)) for tensor, result in zip(tensors, results, strict=True)
        )

    formula.__name__ = formula.__qualname__ = f"foreach_each_{getattr(per_tensor, '__name__', 'op')}"
    return formula


def foreach_add(args: tuple, kwargs: dict, out: object) -> int:
    """``_foreach_add(_)``/``_foreach_sub(_)``: per tensor ``N·(1 + [alpha ≠ 1])`` (B.8 ``add``).

    ``alpha`` exists on the ``List`` and ``Tensor`` overloads only (``add_(other, alpha=a)`` scales
    ``other`` with one multiply per element); the ``Scalar`` and ``ScalarList`` overloads add once.
    """
    alpha = kwargs.get("alpha", 1)
    return (1 + _scaled(alpha)) * sum(_list_elements(args[0]))


def foreach_addc(args: tuple, kwargs: dict, out: object) -> int:
    """``_foreach_addcmul(_)``/``_foreach_addcdiv(_)``: per tensor ``N·(2 + [value ≠ 1])``.

    ``self + value·t1·t2`` (or ``/``): product or quotient, add, and the coefficient (B.8 ``addcmul``).
    ``value`` is a ``Scalar`` (default 1), a ``Scalar[]`` (one per tensor; Adam's step sizes) or a
    tensor of coefficients, which always multiplies.
    """
    sizes = _list_elements(args[0])
    scaled = _coefficients(arg(args, kwargs, 3, "value", kwargs.get("scalars", 1)), len(sizes))
    return sum(size * (2 + extra) for size, extra in zip(sizes, scaled, strict=True))


def foreach_norm(args: tuple, kwargs: dict, out: object) -> int:
    """``_foreach_norm(tensors, ord=2)`` (gradient clipping): the B.8 ``norm`` per tensor.

    Order 2: square, add, root, ``2N``; orders 1 and ±inf: ``2N − 1`` (absolute value and
    reduction); other orders raise :class:`UnsupportedOperatorFormula`.
    """
    from torchscan.formulas.operator_common import UnsupportedOperatorFormula

    order = arg(args, kwargs, 1, "ord", 2)
    sizes = _list_elements(args[0])
    if order == 2:
        return 2 * sum(sizes)
    if order in (1, math.inf, -math.inf):
        return sum(max(2 * size - 1, 0) for size in sizes)
    raise UnsupportedOperatorFormula("Norm FLOPs cover only orders 1, 2, and +/-infinity.")


def foreach_powsum(args: tuple, kwargs: dict, out: object) -> int:
    """``_foreach_powsum(tensors, ord=2)``: ``Σ |x|^ord`` per tensor without the root of ``norm``
    (``operator_common.power_sum_flops`` per tensor of ``N`` elements reduced to one: ``2N − 1`` for orders
    1 and 2, ``3N − 1`` for others, whose power takes ``abs`` and ``pow``)."""
    order = arg(args, kwargs, 1, "ord", 2)
    return sum(power_sum_flops(size, min(size, 1), order) for size in _list_elements(args[0]))


FOREACH_FORMULAS: dict[str, OperatorFormula] = {
    "_foreach_add": foreach_add,
    "_foreach_sub": foreach_add,
    "_foreach_mul": foreach_per_element(1),
    "_foreach_div": foreach_per_element(1),
    "_foreach_sqrt": foreach_per_element(1),
    "_foreach_rsqrt": foreach_per_element(1),
    "_foreach_reciprocal": foreach_per_element(1),
    "_foreach_neg": foreach_per_element(1),
    "_foreach_exp": foreach_per_element(1),
    "_foreach_sign": foreach_per_element(1),
    "_foreach_abs": foreach_per_element(1),
    "_foreach_maximum": foreach_per_element(1),
    "_foreach_minimum": foreach_per_element(1),
    "_foreach_clamp_min": foreach_per_element(1),
    "_foreach_clamp_max": foreach_per_element(1),
    "_foreach_pow": foreach_per_element(1),
    "_foreach_lerp": foreach_per_element(3),
    "_foreach_addcmul": foreach_addc,
    "_foreach_addcdiv": foreach_addc,
    "_foreach_norm": foreach_norm,
    "_foreach_powsum": foreach_powsum,
}
"""Bare names (in-place ``_`` variants are registered with them) -> formula."""


# --- fused kernels ---------------------------------------------------------------------------------


def _fused_extra(kwargs: dict) -> int:
    """Per-element work every fused kernel adds: unscaling by ``grad_scale`` (one divide)."""
    return int(kwargs.get("grad_scale") is not None)


def fused_adam(decoupled: bool) -> OperatorFormula:
    """Factory: ``_fused_adam_`` (``decoupled=False``) and ``_fused_adamw_`` per parameter element.

    ``torch.optim.Adam``'s documented update, element by element (``N`` = parameter elements):
    maximize ``g = −g`` 1; Adam weight decay ``g = g + λ·θ`` 2, AdamW ``θ = θ·(1 − lr·λ)`` 1 (each only
    when ``weight_decay ≠ 0``); ``m = lerp(m, g, 1 − β1)`` 3; ``v = β2·v + (1 − β2)·g²`` 4 (scale, then
    ``addcmul`` with a coefficient: square, scale, add); amsgrad ``v̂ = max(v̂, v)`` 1;
    ``denom = sqrt(v)/sqrt(bc2) + ε`` 3; ``θ = θ − (lr/bc1)·m/denom`` 3 (``addcdiv`` with a coefficient).
    With ``grad_scale``, one divide unscales each gradient. Adam: ``13N``, AdamW default
    (``λ = 0.01``): ``14N``. The step counters are incremented by a separate ``_foreach_add_``.
    """

    def formula(args: tuple, kwargs: dict, out: object) -> int:
        elements = sum(_list_elements(args[0]))
        decay = kwargs.get("weight_decay", 0) != 0
        per_element = 3 + 4 + 3 + 3
        per_element += (1 if decoupled else 2) * decay
        per_element += bool(kwargs.get("amsgrad", False)) + bool(kwargs.get("maximize", False))
        return elements * (per_element + _fused_extra(kwargs))

    formula.__name__ = formula.__qualname__ = "fused_adamw" if decoupled else "fused_adam"
    return formula


def fused_sgd(args: tuple, kwargs: dict, out: object) -> int:
    """``_fused_sgd_(params, grads, momentum_buffers, *, weight_decay, momentum, lr, dampening,
    nesterov, maximize, is_first_step, grad_scale, found_inf)`` per parameter element.

    ``torch.optim.SGD``'s documented update: maximize ``g = −g`` 1; weight decay ``g = g + λ·θ`` 2;
    momentum ``b = μ·b + (1 − τ)·g`` 2 (+1 when ``τ ≠ 0`` scales ``g``), except on the first step,
    where ``b = g`` is a copy (0); Nesterov ``g = g + μ·b`` 2; ``θ = θ − lr·g`` 2. Momentum 0.9
    without decay: ``4N`` from the second step on, as the loop implementation.
    """
    elements = sum(_list_elements(args[0]))
    per_element = 2 + 2 * (kwargs.get("weight_decay", 0) != 0) + bool(kwargs.get("maximize", False))
    if kwargs.get("momentum", 0) != 0:
        if not kwargs.get("is_first_step", False):
            per_element += 2 + (kwargs.get("dampening", 0) != 0)
        per_element += 2 * bool(kwargs.get("nesterov", False))
    return elements * (per_element + _fused_extra(kwargs))


def fused_adagrad(args: tuple, kwargs: dict, out: object) -> int:
    """``_fused_adagrad_(params, grads, state_sums, state_steps, *, lr, lr_decay, weight_decay, eps,
    maximize, grad_scale, found_inf)`` per parameter element.

    ``torch.optim.Adagrad``'s documented update: maximize ``g = −g`` 1; weight decay ``g = g + λ·θ`` 2;
    ``s = s + g²`` 2 (``addcmul``); ``std = sqrt(s) + ε`` 2; ``θ = θ − clr·g/std`` 3 (``addcdiv`` with
    a coefficient; ``clr``, the decayed rate, is scalar work): ``7N`` by default, as the loop.
    """
    elements = sum(_list_elements(args[0]))
    per_element = 7 + 2 * (kwargs.get("weight_decay", 0) != 0) + bool(kwargs.get("maximize", False))
    return elements * (per_element + _fused_extra(kwargs))


FUSED_FORMULAS: dict[str, OperatorFormula] = {
    "_fused_adam": fused_adam(decoupled=False),
    "_fused_adamw": fused_adam(decoupled=True),
    "_fused_sgd": fused_sgd,
    "_fused_adagrad": fused_adagrad,
}
"""Bare names of the fused optimizer kernels -> formula; the in-place ``_`` kernels the optimizers
call register with them, and the functional forms (which return the updated lists: what
functionalization and ``torch.compile`` produce) take the same arguments."""


# --- mixed-precision gradient scaling (torch.amp.GradScaler) -------------------------------------


def amp_unscale(args: tuple, kwargs: dict, out: object) -> int:
    """``_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale)``: every gradient
    element is multiplied by ``inv_scale`` and checked for inf/NaN (one comparison): ``2N``."""
    return 2 * sum(_list_elements(args[0]))


def amp_update_scale(args: tuple, kwargs: dict, out: object) -> int:
    """``_amp_update_scale_(scale, growth_tracker, found_inf, growth, backoff, interval)``: one
    comparison of ``found_inf`` and the one multiply of the scale (by the backoff or the growth
    factor) the update may perform: 2 per call. Which branch runs depends on tensor values, which
    formulas never read, so the multiply is always counted (the growth tracker is integer work)."""
    return 2


AMP_FORMULAS: dict[str, OperatorFormula] = {
    "_amp_foreach_non_finite_check_and_unscale": amp_unscale,
    "_amp_update_scale": amp_update_scale,
}
"""Bare names of the gradient-scaler kernels -> formula (their in-place ``_`` forms, which
``GradScaler`` calls, register with them)."""
