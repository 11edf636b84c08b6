"""Operator formulas of fused kernels and of ``out=`` forms whose functional overload is a composite.

A fused kernel does the arithmetic of operators TorchScan already counts, in one pass; each formula
here is the sum of those operators' B.8 costs, so the fused and the unfused program of one model
report the same FLOPs: ``_add_relu`` (``add`` then ``relu``), ``_addmm_activation`` (``addmm`` then
ReLU or tanh-GELU, the cuBLASLt epilogue and its CPU fallback), ``_masked_softmax`` (the attention
fast path: ``_softmax`` with masked positions selected away), ``_transform_bias_rescale_qkv`` (bias add
and query scaling of ``nn.MultiheadAttention``'s fast path), ``_masked_scale`` / ``_fused_dropout``
(dropout's mask and scale), ``renorm``, ``linalg_cross``, the distance kernels and the fake
quantizers of quantization-aware training. The grouped expert products of mixture-of-experts layers
(``_grouped_mm``, forward and the two gradients autograd runs as more grouped products) are here too.

The ``out=`` forms: ``linear``, ``softmax``, ``log_softmax``, ``adaptive_avg_pool{1,2,3}d`` and
``avg_pool1d`` are C++ ``CompositeImplicitAutograd`` operators (their functional overloads are
decomposed, families.md 1 step 5) whose ``out=`` overloads have a kernel of their own: those calls are
counted as the decomposition's counted kernel counts the same operands (``linear`` as ``addmm``'s
native ``2·m·k·n``, bias not counted; ``softmax`` as ``_softmax``).
"""

from __future__ import annotations

import math

import torch

from torchscan.formulas.operator_common import (
    UnsupportedOperatorFormula,
    arg,
    dim_size,
    elements,
    first_tensor,
    involves_floating,
)
from torchscan.formulas.operator_layers import (
    adaptive_avg_pool_formula,
    avg_pool_formula,
    log_softmax_formula,
    softmax_formula,
)
from torchscan.formulas.operator_registry import register
from torchscan.formulas.statistics_ops import distance_terms, euclidean_expansion_flops

# --- fused element-wise and matrix kernels --------------------------------------------------------


@register("_add_relu")
def add_relu(args: tuple, kwargs: dict, out: object) -> int:
    """``relu(self + alpha·other)``: ``add``'s ``out·(1 + [alpha ≠ 1])`` and one comparison per output."""
    return elements(out) * (2 + (arg(args, kwargs, 2, "alpha", 1) != 1))


@register("_addmm_activation")
def addmm_activation(args: tuple, kwargs: dict, out: object) -> int:
    """``(self, mat1[m, k], mat2[k, n], *, beta, alpha, use_gelu)``: ``addmm``'s native ``2·m·k·n``
    (the bias add and the scalings are not counted, as for ``addmm``), then ReLU (1 per output) or,
    with ``use_gelu``, the tanh-approximated GELU both backends apply (14 per output, as ``gelu``)."""
    rows, inner = (int(size) for size in args[1].shape[-2:])
    cols = int(args[2].shape[-1])
    activation = 14 if kwargs.get("use_gelu", False) else 1
    return 2 * rows * inner * cols + activation * rows * cols


@register("_masked_softmax")
def masked_softmax(args: tuple, kwargs: dict, out: object) -> int:
    """``(self, mask, dim, mask_type)``: ``_softmax``'s ``5N − 2R`` along ``dim`` (the last when
    ``None``); masked positions are selected away, which costs nothing."""
    dim = arg(args, kwargs, 2, "dim")
    return softmax_formula((args[0], -1 if dim is None else dim, False), {}, out)


@register("_transform_bias_rescale_qkv")
def transform_bias_rescale_qkv(args: tuple, kwargs: dict, out: object) -> int:
    """``(qkv[B, T, 3D], qkv_bias[3D], num_heads)``: the bias added to every element (``3BTD``) and
    the query scaled by ``1/√head_dim`` (``BTD``): ``4/3`` of the input's elements."""
    qkv = elements(args[0])
    return qkv + qkv // 3


@register("_masked_scale")
def masked_scale(args: tuple, kwargs: dict, out: object) -> int:
    """``(self, mask, scale)``: dropout's ``self·mask·scale``, two multiplies per element."""
    return 2 * elements(args[0])


@register("_fused_dropout")
def fused_dropout(args: tuple, kwargs: dict, out: object) -> int:
    """``(self, p)`` -> ``(out, mask)``: ``native_dropout``'s training count, ``2N`` (mask multiply and
    ``1/(1 − p)`` scale; drawing the mask is random-number generation)."""
    return 2 * elements(args[0])


@register("renorm")
def renorm(args: tuple, kwargs: dict, out: object) -> int:
    """``(self, p, dim, maxnorm)``: for each of the ``S`` slices along ``dim``, its ``p``-norm over
    the other elements (``norm``'s convention: ``2·k`` for ``p = 2``, ``2·k − 1`` for 1 and ∞), then the
    kernel's factor ``norm > maxnorm ? maxnorm / (norm + 1e-7) : 1`` (a comparison, an add, a divide and
    a selection: 4 per slice); then every element is multiplied by its slice's factor: ``3N + 4S`` for
    ``p = 2``, ``3N + 3S`` for 1 and ∞."""
    inputs, order = args[0], arg(args, kwargs, 1, "p")
    n, slices = elements(inputs), dim_size(inputs, arg(args, kwargs, 2, "dim"))
    if order == 2:
        norms = 2 * n
    elif order in (1, math.inf):
        norms = max(2 * n - slices, 0)
    else:
        raise UnsupportedOperatorFormula("Renorm FLOPs cover only orders 1, 2 and infinity.")
    return norms + 4 * slices + n


@register("linalg_cross")
def cross_product(args: tuple, kwargs: dict, out: object) -> int:
    """``(self, other, dim)``: each of the three components is ``a·b − c·d``: 2 multiplies and a
    subtract per output element, ``3·out``."""
    return 3 * elements(out)


@register("_euclidean_dist")
def euclidean_distance(args: tuple, kwargs: dict, out: object) -> int:
    """``(x1[..., P, M], x2[..., R, M])``: PyTorch's expansion ``‖x‖² + ‖y‖² − 2x·y`` through one matrix
    product (``statistics_ops.euclidean_expansion_flops``): ``2PR(M + 2) + 2PR + P(3M − 1) + R(2M − 1)``
    per batch — not the direct distance's ``3M`` per pair."""
    rows, cols, width = int(args[0].shape[-2]), int(args[1].shape[-2]), int(args[0].shape[-1])
    pairs = elements(out)
    return euclidean_expansion_flops(pairs // (rows * cols), rows, cols, width) if pairs else 0


@register("_pdist_forward")
def condensed_distance(args: tuple, kwargs: dict, out: object) -> int:
    """``(self[N, M], p)``: the ``N(N − 1)/2`` pairs of the condensed result, each one ``p``-distance
    over ``M`` as ``cdist`` counts it."""
    return elements(out) * distance_terms(float(arg(args, kwargs, 1, "p", 2.0)), int(args[0].shape[-1]))


@register("index_reduce")
def index_reduce(args: tuple, kwargs: dict, out: object) -> int:
    """``(self, dim, index, source, reduce, *, include_self)``: one combine (product, comparison or
    add) per ``source`` element, as ``scatter_reduce``; ``mean`` adds one divide per output element."""
    reduce = arg(args, kwargs, 4, "reduce")
    return elements(args[3]) + (elements(out) if reduce == "mean" else 0)


@register("put")
def put(args: tuple, kwargs: dict, out: object) -> int:
    """``(self, index, source, accumulate)`` with ``accumulate=True``: one add per index (plain writes
    are ignored as indexing, as ``index_put``)."""
    return elements(args[1])


@register("affine_grid_generator", "cudnn_affine_grid_generator")
def affine_grid(args: tuple, kwargs: dict, out: object) -> int:
    """``(theta[N, c, c + 1], size, ...)`` -> ``grid[N, ..., c]``: the base grid of homogeneous
    coordinates ``[locations, c + 1]`` times ``thetaᵀ``: ``2·(c + 1)`` per output coordinate (6 per
    2-d coordinate, 8 per 3-d one), as the ``bmm`` PyTorch runs."""
    grid = first_tensor(out)
    assert grid is not None
    return 2 * (int(grid.shape[-1]) + 1) * elements(grid)


@register("_compute_linear_combination")
def linear_combination(args: tuple, kwargs: dict, out: object) -> int:
    """``(input[n, ...], coefficients[m, n])`` -> ``out[m, ...]``: ``n`` multiply-adds per output
    element, ``2·out·n``."""
    return 2 * elements(out) * int(args[1].shape[-1])


@register("_foreach_mm")
def foreach_mm(args: tuple, kwargs: dict, out: object) -> int:
    """``(self[i][m, k], mat2[i][k, n])``: ``mm``'s native ``2·m·k·n`` for every pair of the lists."""
    return sum(2 * elements(a) * int(b.shape[-1]) for a, b in zip(args[0], args[1], strict=True))


# --- grouped expert products (mixture of experts, truth.md 3) ------------------------------------

GROUPED_MM_REASON = "Grouped matmul counts cover 2-D and 3-D operands with matching inner widths only."


@register("_grouped_mm", "_scaled_grouped_mm")
def grouped_mm(args: tuple, kwargs: dict, out: object) -> int:
    """``2 · MACs`` summed over the groups, for the four layouts of ``(self, mat2, offs)``:

    * ``(M, K) × (G, K, N)``, ``offs`` splitting the rows (the MoE expert product and its ``grad_a``,
      ``grad · Wᵀ``): group ``g`` multiplies its ``m_g`` rows, ``Σ m_g·K·N = M·K·N``;
    * ``(K, M) × (M, N) -> (G, K, N)``, ``offs`` splitting the contraction (``grad_b = aᵀ · grad``, the
      weight gradient of the expert product): each group contracts only its own ``m_g`` rows,
      ``Σ K·m_g·N = K·M·N`` — not ``G`` full products;
    * ``(G, M, K) × (K, N)``, ``offs`` splitting the columns: ``Σ M·K·n_g = M·K·N``;
    * ``(G, M, K) × (G, K, N)`` without ``offs`` (batched): ``G·M·K·N``.

    The groups' real sizes sum to the packed dimension: routing sends every packed row to exactly one
    group, so ``offs[-1]`` is that dimension (formulas read shapes, never ``offs``' values). The
    optional ``bias`` is not counted, as for ``addmm``'s native formula; ``_scaled_grouped_mm``'s
    scales are not counted either.
    """
    left, right = args[0], args[1]
    ranks = (left.dim(), right.dim())
    if ranks not in ((2, 2), (2, 3), (3, 2), (3, 3)) or left.shape[-1] != right.shape[-2]:
        raise UnsupportedOperatorFormula(GROUPED_MM_REASON)
    batch = int(left.shape[0]) if ranks == (3, 3) else 1
    return 2 * batch * int(left.shape[-2]) * int(left.shape[-1]) * int(right.shape[-1])


# --- out= forms of composite operators --------------------------------------------------------------


@register("linear")
def linear_out(args: tuple, kwargs: dict, out: object) -> int:
    """``linear.out(input[..., k], weight[n, k], bias)``: ``2·rows·k·n`` as the ``addmm``/``mm`` the
    functional overload decomposes into (PyTorch's native formula: the bias add is not counted)."""
    inputs, weight = args[0], args[1]
    rows = math.prod(inputs.shape[:-1])
    return 2 * rows * int(weight.shape[-1]) * (int(weight.shape[0]) if weight.dim() == 2 else 1)


register("softmax")(softmax_formula)
register("log_softmax")(log_softmax_formula)
register("avg_pool1d")(avg_pool_formula(1))
for _rank in (1, 2, 3):
    register(f"adaptive_avg_pool{_rank}d")(adaptive_avg_pool_formula(_rank))


# --- quantization-aware training and quantization ---------------------------------------------------

_FAKE_QUANTIZE = (
    "fake_quantize_per_tensor_affine_cachemask", "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams",
    "fake_quantize_per_channel_affine_cachemask", "_fake_quantize_learnable_per_tensor_affine",
    "_fake_quantize_learnable_per_channel_affine",
)  # fmt: skip


@register(*_FAKE_QUANTIZE)
def fake_quantize(args: tuple, kwargs: dict, out: object) -> int:
    """``x̂ = (clamp(round(x/s) + z, qmin, qmax) − z)·s`` per element: divide, round, add, two
    comparisons, subtract, multiply: ``7N`` (the cached mask is the clamp's comparisons)."""
    return 7 * elements(args[0])


@register(
    "_fake_quantize_learnable_per_tensor_affine_backward",
    "_fake_quantize_learnable_per_channel_affine_backward",
)
def fake_quantize_learnable_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, self, scale, zero_point, quant_min, quant_max, grad_factor)`` -> gradients of the input,
    the scale and the zero point (LSQ): the forward's quantization again (divide, round, add, two
    comparisons: 5), the input gradient ``grad·in_range`` 1, the scale term ``(q − x/s)·grad`` summed 3
    and the zero-point term ``−s·grad`` summed 2: ``11N`` (``grad_factor`` scales the sums: scalar work)."""
    return 11 * elements(args[1])


OBSERVER_FLAGS_REASON = (
    "Fused observer and fake-quantize FLOPs depend on the observer_on and fake_quant_on tensor flags, "
    "whose values formulas do not read."
)


@register("_fused_moving_avg_obs_fq_helper", "_fused_moving_avg_obs_fq_helper_functional")
def observed_fake_quantize(args: tuple, kwargs: dict, out: object) -> int:
    """``(self, observer_on, fake_quant_on, running_min, running_max, scale, zero_point, ...)``, the
    default QAT observer: when ``observer_on`` it updates the running range (``2·(N − 1)`` comparisons
    and the averages), when ``fake_quant_on`` it fake-quantizes (``7N``). Both switches are tensors,
    and formulas never read tensor values, so every call is unsupported, naming them (issue #19's
    bad-input rule: never a guess, never a zero)."""
    raise UnsupportedOperatorFormula(OBSERVER_FLAGS_REASON)


@register("quantize_per_tensor", "quantize_per_channel", rule=involves_floating)
def quantize(args: tuple, kwargs: dict, out: object) -> int:
    """``q = clamp(round(x/s) + z, qmin, qmax)``: divide, round, add, two comparisons: ``5N`` per
    element of the floating input (the ``.tensors`` overload sums its list). The integer result does
    not make the floating arithmetic free: the input decides (B.7)."""
    inputs = args[0]
    return 5 * (sum(elements(t) for t in inputs) if isinstance(inputs, list | tuple) else elements(inputs))


@register("quantize_per_tensor_dynamic", rule=involves_floating)
def quantize_dynamic(args: tuple, kwargs: dict, out: object) -> int:
    """``(self, dtype, reduce_range)``: the range is found first (a ``min`` and a ``max`` reduction,
    ``2·(N − 1)``; the scale and zero point are scalar work), then ``quantize_per_tensor``'s ``5N``."""
    n = elements(args[0])
    return 2 * max(n - 1, 0) + 5 * n


@register("dequantize")
def dequantize(args: tuple, kwargs: dict, out: object) -> int:
    """``x = (q − z)·s``: a subtract and a multiply per element of the floating result, ``2·out``."""
    return 2 * sum(elements(tensor) for tensor in _results(out))


def _results(out: object) -> list[torch.Tensor]:
    if isinstance(out, list | tuple):
        return [tensor for tensor in out if isinstance(tensor, torch.Tensor)]
    tensor = first_tensor(out)
    return [] if tensor is None else [tensor]
