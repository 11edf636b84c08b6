"""Fused attention kernels counted as they execute: mask-aware (attention-and-scaling.md 1).

Every fused scaled-dot-product kernel — CPU flash, CUDA flash, memory-efficient and cuDNN, their
low-level ``_flash_attention_*``/``_efficient_attention_*`` forms, forward and backward — is counted
here by one cost model over the (query, key) pairs the kernel computes:

* a kernel that skips masked work (``is_causal``, a causal ``custom_mask_type``, a sliding window)
  counts only the pairs its mask keeps: for ``Lq = Lk = n`` and a causal mask, ``n(n+1)/2`` per batch
  and head instead of ``n²``;
* an explicit ``attn_mask``/``attn_bias`` tensor is added to every pair, so every pair is computed and
  counted (plus one addition per pair for the mask itself).

Alignment of a causal mask when ``Lq ≠ Lk`` follows each kernel: the scaled-dot-product operators
(``is_causal``, and ``custom_mask_type`` 1) keep key ``j`` for query ``i`` when ``j ≤ i`` (top-left,
PyTorch's documented ``is_causal`` semantics, checked against the CPU kernel's numbers), while
``_flash_attention_*`` (FlashAttention-2) and ``custom_mask_type`` 2 (``causal_lower_right``) keep
``j ≤ i + Lk − Lq`` (bottom-right).

Per kept pair, per batch and query head: score product ``2·D``, value product ``2·Dv``, scaling 1,
softmax ``5 per pair − 2 per row`` (rows that keep at least one key). Backward: recomputed scores
``2·D``, ``dP = dO·Vᵀ`` and ``dV = Pᵀ·dO`` ``2·Dv`` each, ``dQ`` and ``dK`` ``2·D`` each, element-wise
``6`` per pair (``P = exp(scale·S − lse)`` 3, ``dS = P·(dP − Δ)`` and its scale 3), and
``Δ = rowsum(dO∘O)`` ``2·Dv − 1`` per query row. Grouped-query attention (fewer KV heads) shares K/V
reads, not score work: every query head counts its pairs. Dropout inside the kernel is not covered
(reported, never a silent zero).
"""

from __future__ import annotations

import itertools
from typing import Any

from torchscan.formulas.operator_common import UnsupportedOperatorFormula, arg

__all__ = ["ATTENTION_KERNELS", "kept_pairs", "sdpa_backward_cost", "sdpa_forward_cost"]

SHAPE_REASON = (
    "Fused attention formula requires matching batches, divisible query/KV heads, "
    "Q/K widths, and K/V lengths."
)
DROPOUT_REASON = "Fused attention formula does not cover dropout."
VARLEN_REASON = (
    "Variable-length fused attention needs its sequence offsets as values, "
    "unreadable on meta or fake tensors."
)
WINDOW_REASON = "Memory-efficient attention with a window but no causal mask is not covered."

NO_BOUND = None


def _sum_clamped(first: int, last: int, length: int) -> int:
    """``Σ_{t=first}^{last} clamp(t, 0, length)`` for integers ``first ≤ last`` (0 when empty)."""
    if last < first:
        return 0
    total = 0
    # t ≥ length: each contributes ``length``
    high = max(first, length)
    if last >= high:
        total += (last - high + 1) * length
    # 0 < t < length: an arithmetic series
    low, top = max(first, 1), min(last, length - 1)
    if top >= low:
        total += (low + top) * (top - low + 1) // 2
    return total


def kept_pairs(
    lq: int, lk: int, lower: int | None = NO_BOUND, upper: int | None = NO_BOUND
) -> tuple[int, int]:
    """``(pairs, rows)`` of one ``lq × lk`` attention map where query ``i`` keeps keys ``j`` with
    ``i + lower ≤ j ≤ i + upper`` (``None`` = unbounded on that side); ``rows`` counts queries keeping
    at least one key.

    Derivation: with ``G(x) = clamp(x + 1, 0, lk)`` the keys ``j ≤ x`` in ``[0, lk)``, row ``i`` keeps
    ``G(i + upper) − G(i + lower − 1)`` keys, so the sum over rows is a difference of two sums of a
    clamped linear function (:func:`_sum_clamped`); row ``i`` keeps a key iff ``i + upper ≥ 0`` and
    ``i + lower ≤ lk − 1``.
    """
    if lq <= 0 or lk <= 0:
        return 0, 0
    span = lq + lk  # any offset beyond this is unbounded in effect
    hi = span if upper is None else max(min(upper, span), -span - 1)
    lo = -span if lower is None else max(min(lower, span + 1), -span)
    if lo > hi:
        return 0, 0
    pairs = _sum_clamped(hi + 1, hi + lq, lk) - _sum_clamped(lo, lo + lq - 1, lk)
    first_row, last_row = max(0, -hi), min(lq - 1, lk - 1 - lo)
    return pairs, max(0, last_row - first_row + 1)


def sdpa_forward_cost(pairs: int, rows: int, width: int, value_width: int, bias: bool) -> int:
    """Forward FLOPs over ``pairs`` kept pairs and ``rows`` non-empty rows (all heads and batches)."""
    if pairs == 0:
        return 0
    return 2 * pairs * (width + value_width) + pairs + (5 * pairs - 2 * rows) + pairs * bias


def sdpa_backward_cost(pairs: int, all_rows: int, width: int, value_width: int, bias: bool) -> int:
    """Backward FLOPs over ``pairs`` kept pairs; ``all_rows`` query rows compute ``Δ``."""
    if pairs == 0:
        return 0
    products = 2 * pairs * (3 * width + 2 * value_width)
    return products + pairs * (6 + bias) + 2 * all_rows * value_width - all_rows


class _Geometry:
    """Batch, heads and sizes of one dense call from its operand shapes, checked; ``layout`` is
    ``"bhld"`` (scaled-dot-product operators) or ``"blhd"`` (low-level kernels)."""

    def __init__(self, query: Any, key: Any, value: Any, layout: str) -> None:
        ok = len(query) == len(key) == len(value) == 4
        if ok:
            if layout == "bhld":
                (b, hq, lq, d), (bk, hk, lk, dk), (bv, hv, lv, dv) = query, key, value
            else:
                (b, lq, hq, d), (bk, lk, hk, dk), (bv, lv, hv, dv) = query, key, value
            ok = b == bk == bv and hk == hv and hk > 0 and hq % hk == 0 and d == dk and lk == lv
        if not ok:
            raise UnsupportedOperatorFormula(SHAPE_REASON)
        self.batch, self.heads = int(b), int(hq)
        self.lq, self.lk, self.width, self.value_width = int(lq), int(lk), int(d), int(dv)

    def forward(self, lower: int | None, upper: int | None, bias: bool) -> int:
        pairs, rows = kept_pairs(self.lq, self.lk, lower, upper)
        scale = self.batch * self.heads
        return sdpa_forward_cost(pairs * scale, rows * scale, self.width, self.value_width, bias)

    def backward(self, lower: int | None, upper: int | None, bias: bool) -> int:
        pairs, _ = kept_pairs(self.lq, self.lk, lower, upper)
        scale = self.batch * self.heads
        return sdpa_backward_cost(pairs * scale, self.lq * scale, self.width, self.value_width, bias)


def _dense(query: Any, key: Any, value: Any) -> _Geometry:
    """The geometry of a scaled-dot-product operator's ``(B, H, L, D)`` operands."""
    return _Geometry(query.shape, key.shape, value.shape, "bhld")


def _no_dropout(value: Any) -> None:
    if value:
        raise UnsupportedOperatorFormula(DROPOUT_REASON)


def _top_left(causal: bool) -> tuple[int | None, int | None]:
    """Bounds of PyTorch's ``is_causal`` (query ``i`` keeps ``j ≤ i``), or none."""
    return (NO_BOUND, 0) if causal else (NO_BOUND, NO_BOUND)


def _given(value: Any) -> bool:
    """Whether an optional mask/bias tensor argument was passed (``None`` or an undefined tensor not)."""
    return value is not None and getattr(value, "numel", lambda: 0)() > 0


# --- scaled-dot-product operators, (B, H, L, D) ---------------------------------------------------


def cpu_flash_forward(args: tuple, kwargs: dict, out: object) -> int:
    """``_scaled_dot_product_flash_attention_for_cpu(q, k, v, dropout_p, is_causal, *, attn_mask, scale)``."""
    _no_dropout(arg(args, kwargs, 3, "dropout_p", 0.0))
    geometry = _dense(args[0], args[1], args[2])
    causal = bool(arg(args, kwargs, 4, "is_causal", False))
    return geometry.forward(*_top_left(causal), kwargs.get("attn_mask") is not None)


def cpu_flash_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``_scaled_dot_product_flash_attention_for_cpu_backward(grad_out, q, k, v, out, lse, dropout_p,
    is_causal, *, attn_mask, scale)``."""
    _no_dropout(arg(args, kwargs, 6, "dropout_p", 0.0))
    geometry = _dense(args[1], args[2], args[3])
    causal = bool(arg(args, kwargs, 7, "is_causal", False))
    return geometry.backward(*_top_left(causal), kwargs.get("attn_mask") is not None)


def flash_forward(args: tuple, kwargs: dict, out: object) -> int:
    """``_scaled_dot_product_flash_attention(q, k, v, dropout_p, is_causal, return_debug_mask, *, scale)``
    (and its ``quantized`` overload, whose dropout and causal flag sit three places later)."""
    offset = 3 if len(args) > 3 and not isinstance(args[3], float | int) else 0
    _no_dropout(arg(args, kwargs, 3 + offset, "dropout_p", 0.0))
    geometry = _dense(args[0], args[1], args[2])
    return geometry.forward(*_top_left(bool(arg(args, kwargs, 4 + offset, "is_causal", False))), False)


def flash_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``_scaled_dot_product_flash_attention_backward(grad_out, q, k, v, out, lse, cum_seq_q, cum_seq_k,
    max_q, max_k, dropout_p, is_causal, ...)``."""
    _no_dropout(arg(args, kwargs, 10, "dropout_p", 0.0))
    geometry = _dense(args[1], args[2], args[3])
    return geometry.backward(*_top_left(bool(arg(args, kwargs, 11, "is_causal", False))), False)


def efficient_forward(args: tuple, kwargs: dict, out: object) -> int:
    """``_scaled_dot_product_efficient_attention(q, k, v, attn_bias, compute_log_sumexp, dropout_p,
    is_causal, *, scale)`` and ``_scaled_dot_product_cudnn_attention`` (same leading arguments)."""
    _no_dropout(arg(args, kwargs, 5, "dropout_p", 0.0))
    geometry = _dense(args[0], args[1], args[2])
    causal = bool(arg(args, kwargs, 6, "is_causal", False))
    return geometry.forward(*_top_left(causal), _given(arg(args, kwargs, 3, "attn_bias")))


def efficient_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``_scaled_dot_product_efficient_attention_backward(grad_out, q, k, v, attn_bias, out, lse, seed,
    offset, dropout_p, grad_input_mask, is_causal, *, scale)``: every gradient counted (the kernel
    computes ``dS`` whichever of ``grad_input_mask`` is set)."""
    _no_dropout(arg(args, kwargs, 9, "dropout_p", 0.0))
    geometry = _dense(args[1], args[2], args[3])
    causal = bool(arg(args, kwargs, 11, "is_causal", False))
    return geometry.backward(*_top_left(causal), _given(arg(args, kwargs, 4, "attn_bias")))


def cudnn_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``_scaled_dot_product_cudnn_attention_backward(grad_out, q, k, v, out, lse, seed, offset,
    attn_bias, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, *, scale)``."""
    _no_dropout(arg(args, kwargs, 13, "dropout_p", 0.0))
    geometry = _dense(args[1], args[2], args[3])
    causal = bool(arg(args, kwargs, 14, "is_causal", False))
    return geometry.backward(*_top_left(causal), _given(arg(args, kwargs, 8, "attn_bias")))


# --- low-level kernels, (B, L, H, D) or variable length (T, H, D) --------------------------------


def _lengths(offsets: Any) -> list[int]:
    """Sequence lengths from cumulative offsets, read as values (never on meta or fake tensors)."""
    if offsets.device.type == "meta" or type(offsets).__name__ in ("FakeTensor", "FunctionalTensor"):
        raise UnsupportedOperatorFormula(VARLEN_REASON)
    values = [int(v) for v in offsets.tolist()]
    return [b - a for a, b in itertools.pairwise(values)]


def _low_level(
    shapes: tuple[Any, Any, Any], cum_q: Any, cum_k: Any, bounds: Any, bias: bool, backward: bool
) -> int:
    """Sum of the cost over the sequences of a (possibly variable-length) low-level kernel call.

    ``shapes`` are the query, key and value shapes: ``(B, L, H, D)``, or ``(T, H, D)`` packed with
    ``cum_q``/``cum_k`` offsets; ``bounds(lq, lk)`` gives the ``(lower, upper)`` key offsets of one
    sequence.
    """
    query, key, value = shapes
    if cum_q is None or len(query) == 4:
        geometry = _Geometry(query, key, value, "blhd")
        lower, upper = bounds(geometry.lq, geometry.lk)
        return geometry.backward(lower, upper, bias) if backward else geometry.forward(lower, upper, bias)
    if not (len(query) == len(key) == len(value) == 3 and query[2] == key[2] and key[1] == value[1]):
        raise UnsupportedOperatorFormula(SHAPE_REASON)
    heads, width, value_width = int(query[1]), int(query[2]), int(value[2])
    if key[1] == 0 or heads % int(key[1]):
        raise UnsupportedOperatorFormula(SHAPE_REASON)
    total = 0
    for lq, lk in zip(_lengths(cum_q), _lengths(cum_k), strict=False):
        pairs, rows = kept_pairs(lq, lk, *bounds(lq, lk))
        if backward:
            total += sdpa_backward_cost(pairs * heads, lq * heads, width, value_width, bias)
        else:
            total += sdpa_forward_cost(pairs * heads, rows * heads, width, value_width, bias)
    return total


def _packed(query: Any, key: Any, value: Any, cum_q: Any) -> tuple[Any, Any, Any]:
    """Operand shapes; a memory-efficient kernel's packed ``(1, T, H, D)`` becomes ``(T, H, D)``."""
    shapes = (tuple(query.shape), tuple(key.shape), tuple(value.shape))
    if cum_q is not None and len(shapes[0]) == 4 and shapes[0][0] == 1:
        return shapes[0][1:], shapes[1][1:], shapes[2][1:]
    return shapes


def _flash_bounds(causal: bool, left: Any, right: Any) -> Any:
    """FlashAttention-2 masks, bottom-right aligned: keys ``i + Lk − Lq − left … i + Lk − Lq + right``
    (a negative or absent window side is unbounded; ``is_causal`` sets ``right`` to 0)."""

    def bounds(lq: int, lk: int) -> tuple[int | None, int | None]:
        shift = lk - lq
        upper = shift if causal else (shift + right if right is not None and right >= 0 else NO_BOUND)
        lower = shift - left if left is not None and left >= 0 else NO_BOUND
        return lower, upper

    return bounds


def low_flash_forward(args: tuple, kwargs: dict, out: object) -> int:
    """``_flash_attention_forward(q, k, v, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal,
    return_debug_mask, *, scale, window_size_left, window_size_right, ...)``."""
    _no_dropout(arg(args, kwargs, 7, "dropout_p", 0.0))
    bounds = _flash_bounds(
        bool(arg(args, kwargs, 8, "is_causal", False)),
        kwargs.get("window_size_left"),
        kwargs.get("window_size_right"),
    )
    query, key, value, cum_q, cum_k = args[:5]
    return _low_level(_packed(query, key, value, None), cum_q, cum_k, bounds, False, backward=False)


def low_flash_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``_flash_attention_backward(grad_out, q, k, v, out, lse, cum_seq_q, cum_seq_k, max_q, max_k,
    dropout_p, is_causal, rng_state, unused, *, scale, window_size_left, window_size_right)``."""
    _no_dropout(arg(args, kwargs, 10, "dropout_p", 0.0))
    bounds = _flash_bounds(
        bool(arg(args, kwargs, 11, "is_causal", False)),
        kwargs.get("window_size_left"),
        kwargs.get("window_size_right"),
    )
    return _low_level(
        _packed(args[1], args[2], args[3], None), args[6], args[7], bounds, False, backward=True
    )


def _efficient_bounds(mask_type: int, window: Any) -> Any:
    """``custom_mask_type`` 0 (none), 1 (causal, top-left) or 2 (causal, bottom-right); a positive
    ``window_size`` ``w`` also drops keys more than ``w − 1`` behind the diagonal."""
    if mask_type not in (0, 1, 2):
        raise UnsupportedOperatorFormula(f"Memory-efficient attention mask type {mask_type} is not covered.")
    if mask_type == 0 and window:
        raise UnsupportedOperatorFormula(WINDOW_REASON)

    def bounds(lq: int, lk: int) -> tuple[int | None, int | None]:
        if mask_type == 0:
            return NO_BOUND, NO_BOUND
        shift = 0 if mask_type == 1 else lk - lq
        return (shift - (window - 1) if window and window > 0 else NO_BOUND), shift

    return bounds


def low_efficient_forward(args: tuple, kwargs: dict, out: object) -> int:
    """``_efficient_attention_forward(q, k, v, bias, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
    max_seqlen_k, dropout_p, custom_mask_type, compute_log_sumexp, *, scale, seqlen_k, window_size)``."""
    _no_dropout(arg(args, kwargs, 8, "dropout_p", 0.0))
    bounds = _efficient_bounds(int(arg(args, kwargs, 9, "custom_mask_type", 0)), kwargs.get("window_size"))
    query, key, value, bias, cum_q, cum_k = args[:6]
    shapes = _packed(query, key, value, cum_q)
    return _low_level(shapes, cum_q, cum_k, bounds, _given(bias), backward=False)


def low_efficient_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``_efficient_attention_backward(grad_out, q, k, v, bias, out, cu_seqlens_q, cu_seqlens_k,
    max_seqlen_q, max_seqlen_k, lse, dropout_p, seed, offset, custom_mask_type, bias_requires_grad, ...)``."""
    _no_dropout(arg(args, kwargs, 11, "dropout_p", 0.0))
    bounds = _efficient_bounds(int(arg(args, kwargs, 14, "custom_mask_type", 0)), kwargs.get("window_size"))
    bias, cum_q, cum_k = args[4], args[6], args[7]
    shapes = _packed(args[1], args[2], args[3], cum_q)
    return _low_level(shapes, cum_q, cum_k, bounds, _given(bias), backward=True)


ATTENTION_KERNELS = {
    "_scaled_dot_product_flash_attention_for_cpu": cpu_flash_forward,
    "_scaled_dot_product_flash_attention_for_cpu_backward": cpu_flash_backward,
    "_scaled_dot_product_flash_attention": flash_forward,
    "_scaled_dot_product_flash_attention_backward": flash_backward,
    "_scaled_dot_product_efficient_attention": efficient_forward,
    "_scaled_dot_product_efficient_attention_backward": efficient_backward,
    "_scaled_dot_product_cudnn_attention": efficient_forward,
    "_scaled_dot_product_cudnn_attention_backward": cudnn_backward,
    "_flash_attention_forward": low_flash_forward,
    "_flash_attention_backward": low_flash_backward,
    "_efficient_attention_forward": low_efficient_forward,
    "_efficient_attention_backward": low_efficient_backward,
}
"""Bare aten name -> formula (registered with the floating-result dtype rule)."""

_TOP_LEFT = "skips masked pairs: is_causal keeps j ≤ i (top-left)"
_SDPA_BIAS = "; an attn_bias tensor: every pair, plus its add"
MASKING: dict[str, str] = {
    "_scaled_dot_product_flash_attention_for_cpu": _TOP_LEFT
    + "; an attn_mask tensor: every pair, plus its add",
    "_scaled_dot_product_flash_attention": _TOP_LEFT,
    "_scaled_dot_product_efficient_attention": _TOP_LEFT + _SDPA_BIAS,
    "_scaled_dot_product_cudnn_attention": _TOP_LEFT + _SDPA_BIAS,
    "_flash_attention_forward": "skips masked pairs: is_causal keeps j ≤ i + Lk − Lq (bottom-right), and a "
    "sliding window (window_size_left/right) its band; variable-length sequences summed",
    "_efficient_attention_forward": "skips masked pairs: custom_mask_type 1 top-left, 2 bottom-right "
    "(causal_lower_right), window_size a band behind the diagonal; a bias tensor: its add per pair",
    "_scaled_dot_product_attention_math": "does not skip: the math path is decomposed, every score is "
    "computed and then masked (each part counted as itself)",
}
"""Forward kernel -> how it treats masks, for the coverage table (backwards follow their forwards)."""
