"""Supplemental formulas of layer kernels (formulas.md B.8–B.9, real-models.md 2.4): softmax family,
normalization, pooling, interpolation, attention and recurrent kernels.

Registered into the one table of ``operator_registry`` when ``operators`` is imported; each count is the
nominal arithmetic its docstring states, under the B.7 dtype rules.
"""

from __future__ import annotations

import math

import torch

from torchscan.formulas import recurrent_ops
from torchscan.formulas.attention_ops import fused_encoder_layer_flops, fused_mha_flops
from torchscan.formulas.operator_common import (
    OperatorFormula,
    UnsupportedOperatorFormula,
    arg,
    dim_size,
    elements,
    first_tensor,
    floating_input,
)
from torchscan.formulas.operator_registry import per_output as _per_output
from torchscan.formulas.operator_registry import register as _register
from torchscan.formulas.pool_windows import adaptive_visits, clamped_windows, kernel_volume

# --- B.8: softmax family and normalization -------------------------------------------------------


def _rows(args: tuple, kwargs: dict) -> tuple[int, int]:
    """``(N, R)`` of a softmax along ``dim``; ``R = 0`` when the dimension is empty."""
    inputs, width = elements(args[0]), dim_size(args[0], arg(args, kwargs, 1, "dim"))
    return inputs, (inputs // width if width else 0)


@_register("_softmax")
def _softmax(args: tuple, kwargs: dict, out: object) -> int:
    """``5N − 2R``: max ``S−1``, subtract ``S``, exp ``S``, sum ``S−1``, divide ``S`` per row."""
    n, r = _rows(args, kwargs)
    return 5 * n - 2 * r


@_register("_log_softmax")
def _log_softmax(args: tuple, kwargs: dict, out: object) -> int:
    """``4N − R``: max, subtract, exp, sum, one log per row, subtract."""
    n, r = _rows(args, kwargs)
    return 4 * n - r


@_register("_safe_softmax")
def _safe_softmax(args: tuple, kwargs: dict, out: object) -> int:
    """``5N − 2R + 2N``: softmax plus one comparison and one selection per element."""
    n, r = _rows(args, kwargs)
    return 7 * n - 2 * r


def _affine_count(*tensors: object) -> int:
    """``A``: how many affine tensors (weight, bias) are present."""
    return sum(tensor is not None for tensor in tensors)


@_register("native_layer_norm")
def _layer_norm(args: tuple, kwargs: dict, out: object) -> int:
    """``6N + 2R + A·N`` with ``R = N / prod(normalized_shape)``."""
    row = math.prod(args[1])
    if row == 0:
        raise UnsupportedOperatorFormula("LayerNorm FLOPs require a nonempty normalized row.")
    n = elements(args[0])
    return 6 * n + 2 * (n // row) + _affine_count(args[2], args[3]) * n


@_register("native_group_norm")
def _group_norm(args: tuple, kwargs: dict, out: object) -> int:
    """``6N + 2·batch·groups + A·N`` (args: input, weight, bias, batch, C, HxW, groups, eps)."""
    batch, channels, spatial, groups = args[3:7]
    if groups <= 0 or channels // groups * spatial == 0:
        raise UnsupportedOperatorFormula("GroupNorm FLOPs require a nonempty normalized group.")
    n = elements(args[0])
    return 6 * n + 2 * batch * groups + _affine_count(args[1], args[2]) * n


@_register("rms_norm", "_fused_rms_norm")
def _rms_norm(args: tuple, kwargs: dict, out: object) -> int:
    """``(3 + W)·N + 2R``: square, mean, normalize, ``rsqrt`` with epsilon per row, weight."""
    shape, weight = tuple(args[1]), arg(args, kwargs, 2, "weight")
    if weight is not None and tuple(weight.shape) != shape:
        raise UnsupportedOperatorFormula("RMSNorm FLOPs require a matching weight shape.")
    n, row = elements(args[0]), math.prod(shape)
    return (3 + (weight is not None)) * n + 2 * (n // row if row else 0)


def _batch_norm(
    inputs: torch.Tensor, affine: int, running_mean: object, running_var: object, training: bool
) -> int:
    """``2N + 2C + A·N``, training adds ``4N + C·(3·[running_mean] + 5·[running_var])``."""
    n = elements(inputs)
    if n == 0:
        raise UnsupportedOperatorFormula(
            "Empty native BatchNorm work depends on strides unavailable to the shape formula."
        )
    channels = dim_size(inputs, 1) if inputs.dim() > 1 else 1
    count = 2 * n + 2 * channels + affine * n
    if training:
        count += 4 * n + channels * (3 * (running_mean is not None) + 5 * (running_var is not None))
    return count


@_register("native_batch_norm")
def _native_batch_norm(args: tuple, kwargs: dict, out: object) -> int:
    """(input, weight, bias, running_mean, running_var, training, momentum, eps)."""
    return _batch_norm(args[0], _affine_count(*args[1:3]), args[3], args[4], args[5])


@_register("_native_batch_norm_legit")
def _native_batch_norm_legit(args: tuple, kwargs: dict, out: object) -> int:
    """Both overloads: with running buffers, or ``no_stats`` (``training`` at position 3)."""
    if isinstance(args[3], bool):
        return _batch_norm(args[0], _affine_count(*args[1:3]), None, None, args[3])
    return _batch_norm(args[0], _affine_count(*args[1:3]), args[3], args[4], args[5])


@_register("_native_batch_norm_legit_no_training")
def _native_batch_norm_eval(args: tuple, kwargs: dict, out: object) -> int:
    """(input, weight, bias, running_mean, running_var, momentum, eps): always evaluation."""
    return _batch_norm(args[0], _affine_count(*args[1:3]), args[3], args[4], False)


@_register("_batch_norm_with_update", "_batch_norm_with_update_functional")
def _batch_norm_with_update(args: tuple, kwargs: dict, out: object) -> int:
    """(input, weight, bias, running_mean, running_var, momentum, eps): training with running stats,
    the kernel ``F.batch_norm`` reaches in training (as ``native_batch_norm`` with ``training``)."""
    return _batch_norm(args[0], _affine_count(*args[1:3]), args[3], args[4], True)


@_register("_batch_norm_no_update")
def _batch_norm_no_update(args: tuple, kwargs: dict, out: object) -> int:
    """(input, weight, bias, running_mean, running_var, momentum, eps): evaluation statistics."""
    return _batch_norm(args[0], _affine_count(*args[1:3]), args[3], args[4], False)


batch_norm_formula = _native_batch_norm
# native_batch_norm's arguments exactly (ROCm's kernel; the functionalized form of _legit)
_register("miopen_batch_norm", "_native_batch_norm_legit_functional")(_native_batch_norm)


# public names of the softmax and pooling formulas (fused kernels and out= forms reuse them)
softmax_formula, log_softmax_formula = _softmax, _log_softmax


# --- B.8: pooling and interpolation --------------------------------------------------------------


def _max_pool(rank: int) -> OperatorFormula:
    """Factory: ``max_poolNd(self, kernel_size, stride, padding, dilation, ceil_mode)`` (also the oneDNN
    and quantized kernels' arguments): ``taps − windows``, ``T − 1`` comparisons per window of ``T``
    in-bound taps (none for a window with no tap), on the values output (truth.md §6; the output's
    shape already holds ``ceil_mode``)."""

    def formula(args: tuple, kwargs: dict, out: object) -> int:
        values = first_tensor(out)
        assert values is not None
        stride, padding = arg(args, kwargs, 2, "stride"), arg(args, kwargs, 3, "padding", 0)
        dilation = arg(args, kwargs, 4, "dilation", 1)
        windows = clamped_windows(args[0].shape, values.shape, rank, args[1], stride, padding, dilation)
        return windows.taps - windows.nonempty

    return formula


def _fractional_max_pool(rank: int) -> OperatorFormula:
    """Factory: ``(self, kernel_size, output_size, random_samples)``: ``out·(K − 1)``; fractional
    windows are placed wholly inside the input (their random offsets only move them), so every one
    has all ``K`` taps."""

    def formula(args: tuple, kwargs: dict, out: object) -> int:
        return elements(out) * (kernel_volume(args[1], rank) - 1)

    return formula


def _avg_pool(rank: int) -> OperatorFormula:
    """Factory: ``avg_poolNd(self, kernel_size, stride, padding, ...)``: ``taps``, ``T − 1`` adds and one
    divide per window of ``T`` in-bound taps (truth.md §6; ``count_include_pad`` and
    ``divisor_override`` change the divisor, not the work)."""

    def formula(args: tuple, kwargs: dict, out: object) -> int:
        values = first_tensor(out)
        assert values is not None
        stride, padding = arg(args, kwargs, 2, "stride"), arg(args, kwargs, 3, "padding", 0)
        return clamped_windows(args[0].shape, values.shape, rank, args[1], stride, padding).taps

    return formula


def _adaptive_max_pool(rank: int) -> OperatorFormula:
    """Factory: ``visits − out`` comparisons."""

    def formula(args: tuple, kwargs: dict, out: object) -> int:
        values = first_tensor(out)
        assert values is not None
        return adaptive_visits(args[0].shape, values.shape, rank) - elements(values)

    return formula


def _adaptive_avg_pool(rank: int) -> OperatorFormula:
    """Factory: ``visits`` (adds plus one divide per window)."""

    def formula(args: tuple, kwargs: dict, out: object) -> int:
        values = first_tensor(out)
        assert values is not None
        return adaptive_visits(args[0].shape, values.shape, rank)

    return formula


avg_pool_formula, adaptive_avg_pool_formula = _avg_pool, _adaptive_avg_pool
# oneDNN's and the quantized engine's pooling kernels take the same arguments (a quantized result
# counts 0: integer comparisons, B.7.1)
_register("mkldnn_max_pool2d", "quantized_max_pool2d")(_max_pool(2))
_register("mkldnn_max_pool3d", "quantized_max_pool3d")(_max_pool(3))
_register("fractional_max_pool2d")(_fractional_max_pool(2))
_register("fractional_max_pool3d")(_fractional_max_pool(3))
_register("quantized_max_pool1d")(_max_pool(1))
_register("mkldnn_adaptive_avg_pool2d")(_adaptive_avg_pool(2))
for _rank in (2, 3):
    _register(f"max_pool{_rank}d_with_indices")(_max_pool(_rank))
    _register(f"avg_pool{_rank}d")(_avg_pool(_rank))
    _register(f"adaptive_max_pool{_rank}d")(_adaptive_max_pool(_rank))
    _register(f"_adaptive_avg_pool{_rank}d")(_adaptive_avg_pool(_rank))
for _name, _neighbours in {
    "upsample_linear1d": 2,
    "upsample_bilinear2d": 4,
    "upsample_trilinear3d": 8,
    "upsample_bicubic2d": 16,
}.items():
    # n weighted neighbours per output: n multiplies and n − 1 adds
    _register(_name, rule=floating_input)(_per_output(2 * _neighbours - 1))

# --- B.9: fused MHA and encoder layers (attention_ops; SDPA kernels are in attention_kernels) ---

_register("_native_multi_head_attention")(fused_mha_flops)
_register("_transformer_encoder_layer_fwd")(fused_encoder_layer_flops)

# --- real-models.md 2.4: recurrent kernels and nn.Bilinear (closed forms in recurrent_ops) ------

for _kind in recurrent_ops.GATES:
    _register(_kind)(recurrent_ops.sequence_formula(_kind))
    _register(f"{_kind}_cell")(recurrent_ops.cell_formula(_kind))
_register("_thnn_fused_lstm_cell")(recurrent_ops.fused_cell_formula("lstm"))
_register("_thnn_fused_gru_cell")(recurrent_ops.fused_cell_formula("gru"))
_register("mkldnn_rnn_layer")(recurrent_ops.mkldnn_rnn_layer_flops)
_register("mkldnn_rnn_layer_backward")(recurrent_ops.mkldnn_rnn_layer_backward_flops)
_register("bilinear")(recurrent_ops.bilinear_op_flops)
_register("_trilinear")(recurrent_ops.trilinear_op_flops)
