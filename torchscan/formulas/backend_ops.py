"""Operator formulas of backend kernels and fused products that do the math of counted operators.

``aten.convolution`` reaches a backend's own kernel (oneDNN, MIOpen, MPS, NNPACK, the slow CPU paths) when
the backend is picked below PyTorch's dispatch, and ``nn.EmbeddingBag`` reaches ``_embedding_bag``. Each
kernel here is counted exactly as the operator it implements: the convolutions by ``product_ops``'
``aten.convolution`` formula (bias not counted). Kernels that take only oneDNN-layout tensors
(``mkldnn_linear``) get no formula: such a call is ``unsupported_operator_formula`` for its layout anyway.
The fused products (``addmv``, ``addr``, ``addbmm``, weight-only quantized matrix products), ``col2im``,
``native_dropout`` (the fused CUDA dropout) and ``polar`` follow the B.8 conventions of the operators they
fuse, as do the convolutions with a fused ReLU (cuDNN, MIOpen) and ``conv_tbc``. :data:`IGNORED_BACKEND`
lists the kernels that pack weights into a backend's layout or answer a backend query: no arithmetic on
the model's values.
"""

from __future__ import annotations

import math

from torchscan.formulas.operator_common import (
    UnsupportedOperatorFormula,
    arg,
    elements,
    first_operand,
    first_tensor,
)
from torchscan.formulas.operator_layers import batch_norm_formula
from torchscan.formulas.operator_registry import register
from torchscan.formulas.product_ops import kernel_convolution_flops

_FORWARD = (
    "mkldnn_convolution", "miopen_convolution", "miopen_depthwise_convolution", "_mps_convolution",
    "_nnpack_spatial_convolution", "_conv_depthwise2d", "slow_conv_dilated2d", "slow_conv_dilated3d",
    "slow_conv3d_forward", "conv_depthwise3d",
)  # fmt: skip
_TRANSPOSED = ("miopen_convolution_transpose", "_mps_convolution_transpose", "slow_conv_transpose2d",
               "slow_conv_transpose3d", "cudnn_convolution_transpose")  # fmt: skip


IGNORED_BACKEND = {
    "move": (
        "_cudnn_rnn_flatten_weight", "_convert_weight_to_int4pack", "_convert_weight_to_int4pack_for_cpu",
        "_dyn_quant_pack_4bit_weight", "_cslt_compress", "_to_sparse_semi_structured",
        "_sparse_semi_structured_tile",
    ),
    "query": (
        "_fused_sdp_choice", "_use_cudnn_ctc_loss", "_use_miopen_ctc_loss", "_cslt_sparse_mm_search",
        "_nested_tensor_from_mask_left_aligned",
    ),
}  # fmt: skip
"""Weight packing into a backend layout (data movement) and backend queries (which kernel, whether a
mask is left-aligned: metadata), by category; ``operators`` joins them to its ignored table."""


def _convolution(args: tuple, out: object, transposed: bool) -> int:
    return kernel_convolution_flops(args[0], args[1], out, transposed)


@register(*_FORWARD)
def backend_convolution(args: tuple, kwargs: dict, out: object) -> int:
    """``(input, weight, ...)``: ``aten.convolution``'s count, ``2 · out · (in_channels/groups) · kv``."""
    return _convolution(args, out, transposed=False)


@register(*_TRANSPOSED)
def backend_transposed_convolution(args: tuple, kwargs: dict, out: object) -> int:
    """``(input, weight, ...)`` of a transposed convolution: ``aten.convolution``'s transposed count."""
    return _convolution(args, out, transposed=True)


@register("cudnn_convolution_relu", "miopen_convolution_relu")
def convolution_relu(args: tuple, kwargs: dict, out: object) -> int:
    """``(input, weight, bias, stride, padding, dilation, groups)``: ``aten.convolution``'s count (bias
    not counted, as there) and one ReLU comparison per output element."""
    return _convolution(args, out, transposed=False) + elements(out)


@register("cudnn_convolution_add_relu", "miopen_convolution_add_relu")
def convolution_add_relu(args: tuple, kwargs: dict, out: object) -> int:
    """``(input, weight, z, alpha, bias, stride, padding, dilation, groups)``: the convolution, then
    ``relu(conv + alpha·z)``: ``add``'s ``1 + [alpha ≠ 1]`` and the comparison per output element."""
    alpha = arg(args, kwargs, 3, "alpha", 1)
    return _convolution(args, out, transposed=False) + elements(out) * (
        2 + (alpha is not None and alpha != 1)
    )


@register("conv_tbc")
def time_batch_channel_convolution(args: tuple, kwargs: dict, out: object) -> int:
    """``(input[T, B, C_in], weight[K, C_in, C_out], bias, pad)`` -> ``out[T', B, C_out]``: the 1-d
    convolution's ``2·out·C_in·K`` (``aten.convolution``'s convention: bias not counted)."""
    kernel, in_channels = int(args[1].shape[0]), int(args[1].shape[1])
    return 2 * elements(out) * in_channels * kernel


@register("_embedding_bag", "_embedding_bag_forward_only")
def embedding_bag(args: tuple, kwargs: dict, out: object) -> int:
    """``(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights, ...)``.

    Every looked-up row of width ``D`` is accumulated into its bag's zero-initialised output:
    ``n·D`` adds (sum) or adds plus ``bags·D`` divides (mean), with ``n`` the indices and ``bags`` the
    output rows; ``per_sample_weights`` adds ``n·D`` multiplies (sum only). ``max`` takes each bag's
    first row as it is and compares the others: ``(n − bags)·D`` comparisons, bags assumed non-empty
    (which offsets leave a bag empty is a tensor value: an empty bag makes this a lower bound). The
    lookups themselves move data (as ``embedding``).
    """
    weight, indices = args[0], args[1]
    mode = arg(args, kwargs, 4, "mode", 0)
    width = int(weight.shape[1]) if weight.dim() > 1 else 1
    looked_up = elements(indices) * width
    if mode not in (0, 1, 2):
        raise UnsupportedOperatorFormula(f"EmbeddingBag FLOPs cover modes sum, mean and max, got {mode!r}.")
    if mode == 2:
        return max(looked_up - elements(out), 0)
    count = looked_up
    if mode == 1:
        count += elements(out)
    if arg(args, kwargs, 6, "per_sample_weights") is not None:
        count += looked_up
    return count


def _matrix(tensor: object) -> tuple[int, int]:
    rows, cols = tensor.shape[-2:]  # type: ignore[attr-defined]
    return int(rows), int(cols)


@register("addmv")
def matrix_vector_add(args: tuple, kwargs: dict, out: object) -> int:
    """``(self, mat[n, m], vec[m])``: ``2·n·m`` multiply-adds plus one add of ``self`` per output
    (real-models.md 2.1: the bias term of ``addmm``)."""
    rows, cols = _matrix(args[1])
    return 2 * rows * cols + rows


@register("addr")
def outer_product_add(args: tuple, kwargs: dict, out: object) -> int:
    """``(self, vec1[n], vec2[m])``: ``n·m`` products plus ``n·m`` adds of ``self``."""
    return 2 * elements(args[1]) * elements(args[2])


@register("addbmm")
def batch_product_sum(args: tuple, kwargs: dict, out: object) -> int:
    """``(self, batch1[b, n, m], batch2[b, m, p])``: ``2·b·n·m·p`` for the products; summing the ``b``
    results and adding ``self`` is ``b·n·p`` more adds."""
    batches, (rows, inner) = int(args[1].shape[0]), _matrix(args[1])
    cols = int(args[2].shape[-1])
    return 2 * batches * rows * inner * cols + batches * rows * cols


@register("cudnn_batch_norm")
def cudnn_batch_norm(args: tuple, kwargs: dict, out: object) -> int:
    """``(input, weight, bias, running_mean, running_var, training, momentum, eps)``: ``native_batch_norm``'s
    arguments and count (cuDNN's kernel for it)."""
    return batch_norm_formula(args, kwargs, out)


@register(
    "_int_mm", "_weight_int8pack_mm", "_weight_int4pack_mm", "_weight_int4pack_mm_for_cpu",
    "_weight_int4pack_mm_with_scales_and_zeros", "_dyn_quant_matmul_4bit",
)  # fmt: skip
def quantized_weight_product(args: tuple, kwargs: dict, out: object) -> int:
    """``(self[m, k], packed weight, ...)`` -> ``out[m, n]``: ``2·m·k·n`` multiply-adds plus one scale
    multiply per output (``_weight_int*pack_mm``: the per-channel/group scales applied to the result;
    the weight's unpacking moves bits and is not counted). ``_int_mm`` has an integer result and
    counts 0 by the result rule (B.7), as every integer product does."""
    rows, inner = _matrix(args[0])
    cols = int(first_tensor(out).shape[-1])  # type: ignore[union-attr]
    return 2 * rows * inner * cols + rows * cols


@register("mkldnn_linear")
def onednn_linear(args: tuple, kwargs: dict, out: object) -> int:
    """``(input[..., k], weight[n, k], bias)``: ``linear``'s ``2·rows·k·n`` (bias not counted)."""
    return 2 * math.prod(args[0].shape[:-1]) * int(args[1].shape[-1]) * int(args[1].shape[0])


@register("mkldnn_linear_backward_input")
def onednn_linear_grad_input(args: tuple, kwargs: dict, out: object) -> int:
    """``(input_size, grad[..., n], weight[n, k])``: ``grad·W``, ``2·rows·n·k``."""
    return 2 * elements(args[1]) * int(args[2].shape[-1])


@register("mkldnn_linear_backward_weights")
def onednn_linear_grad_weights(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad[..., n], input[..., k], weight, bias_defined)``: ``gradᵀ·input`` ``2·rows·n·k``, and the
    bias gradient's ``rows·n − n`` adds when a bias exists."""
    grad, width = args[0], int(args[1].shape[-1])
    features = int(grad.shape[-1])
    bias = max(elements(grad) - features, 0) if arg(args, kwargs, 3, "bias_defined", False) else 0
    return 2 * elements(grad) * width + bias


@register("_scaled_mm_v2")
def scaled_product(args: tuple, kwargs: dict, out: object) -> int:
    """``(self[m, k], mat2[k, n], scales, ...)``: the native ``_scaled_mm`` count, ``2·m·k·n`` (the
    scales and the bias are not counted there)."""
    rows, inner = _matrix(args[0])
    return 2 * rows * inner * int(args[1].shape[-1])


@register("col2im")
def column_fold(args: tuple, kwargs: dict, out: object) -> int:
    """``F.fold``: every column element is added into its (zero-initialised) output position: ``in``
    adds (``im2col``, the unfold, only moves data)."""
    return elements(args[0])


@register("native_dropout")
def fused_dropout(args: tuple, kwargs: dict, out: object) -> int:
    """``(input, p, train)``: training scales the mask by ``1/(1 − p)`` and multiplies the input,
    ``2N`` (what the unfused CPU path ``bernoulli_``, ``div_``, ``mul`` counts); evaluation is free.
    Drawing the mask is random-number generation (ignored)."""
    return 2 * elements(args[0]) if arg(args, kwargs, 2, "train") is not False else 0


@register("polar", rule=first_operand)
def polar(args: tuple, kwargs: dict, out: object) -> int:
    """``(abs, angle)`` -> complex: a cosine, a sine and two multiplies per output element (rotary
    embeddings' ``torch.polar``); the real inputs decide the dtype rule."""
    return 4 * elements(out)
