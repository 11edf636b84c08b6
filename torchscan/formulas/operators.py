"""Supplemental operator formulas and ignored operators of ``torchscan_flops_v1`` (formulas.md B.6–B.9).

The dispatch engine looks an observed operator up by its normalized packet name
(``str(func.overloadpacket)``, e.g. ``"aten.add"``). PyTorch's native formulas take precedence
(B.2); the engine applies the sparse/nested layout guard (B.7.4) before calling anything here. The
integer/boolean exclusion (B.7.1), the complex rule (B.7.2) and rounded division (B.7.3) are applied
inside every formula of this table through its *dtype rule*.

Counts are nominal scalar arithmetic of a documented algorithm — not kernel instructions, FLOP/s,
bytes or latency — and are never the module-formula FLOPs of Part A (the two views are not added).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator

import torch

from torchscan.formulas import recurrent_ops
from torchscan.formulas.attention_ops import cpu_sdpa_flops, fused_encoder_layer_flops, fused_mha_flops
from torchscan.formulas.operator_common import (
    DtypeRule,
    OperatorFormula,
    UnsupportedOperatorFormula,
    arg,
    dim_size,
    elements,
    filled_tensor,
    first_tensor,
    floating_input,
    floating_result,
    involves_floating,
    reduction_dtype,
    rounded_division,
    tensor_operands,
    true_division,
)

__all__ = [
    "IGNORED_OPERATORS",
    "IGNORED_UNLESS_ACCUMULATING",
    "SUPPLEMENTAL_FORMULAS",
    "OperatorFormula",
    "UnsupportedOperatorFormula",
    "ignored_reason",
    "pointwise_fallback",
    "supplemental_formula",
]

# --- B.6: operators ignored as zero-FLOP --------------------------------------------------------

_VIEW = "Metadata-only tensor view."
_MOVE = "Data movement is excluded from FLOPs."
_ALLOCATE = "Tensor allocation is excluded from FLOPs."
_CREATE = "Tensor creation is excluded from FLOPs."
INDEXING_REASON = "Indexing and selection move data and are excluded from FLOPs."
RANDOM_REASON = "Random-number generation is excluded from FLOPs."
PROFILER_REASON = "Profiler bookkeeping is excluded from FLOPs."

_IGNORED_BY_REASON: dict[str, tuple[str, ...]] = {
    _VIEW: (
        # detach_ and as_strided_ (in-place metadata changes) are observed in real models (zoo)
        "_unsafe_view", "alias", "as_strided", "as_strided_", "detach", "detach_", "expand", "narrow",
        "permute", "select", "slice", "squeeze", "squeeze_", "t", "transpose", "unbind", "unsqueeze",
        "view",
    ),
    _MOVE: (
        "_to_copy", "cat", "clone", "contiguous", "copy_", "split", "split_with_sizes", "unsafe_split",
        "unsafe_split_with_sizes", "to", "fill_",
        "zero_", "_local_scalar_dense", "embedding", "pixel_shuffle", "pixel_unshuffle",
        "channel_shuffle", "native_channel_shuffle", "im2col", "constant_pad_nd",
        "reflection_pad1d", "reflection_pad2d", "reflection_pad3d",
        "replication_pad1d", "replication_pad2d", "replication_pad3d",
        "upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d",
        "_upsample_nearest_exact1d", "_upsample_nearest_exact2d", "_upsample_nearest_exact3d",
    ),
    _ALLOCATE: ("empty", "empty_strided", "empty_like", "new_empty", "new_empty_strided"),
    _CREATE: (
        "full", "full_like", "lift_fresh", "lift_fresh_copy", "ones", "ones_like", "scalar_tensor",
        "zeros", "zeros_like", "arange", "new_zeros", "new_ones", "new_full",
    ),
    # real-models.md 2.1 (index_put and scatter are conditional: IGNORED_UNLESS_ACCUMULATING)
    INDEXING_REASON: (
        "gather", "index", "index_select", "take", "take_along_dim", "stack", "hstack", "vstack",
        "tril", "tril_", "triu", "triu_", "flip", "roll", "repeat", "repeat_interleave",
        "masked_select", "nonzero", "diagonal", "diag_embed", "unfold", "slice_scatter",
        "select_scatter", "diagonal_scatter",
        # selection by order (Mixtral's router and expert grouping): the comparisons a sort makes
        # depend on the algorithm and on the values, so no shape formula describes them
        "sort", "argsort", "msort", "topk",
    ),
    RANDOM_REASON: (
        "bernoulli", "bernoulli_", "normal", "normal_", "uniform_", "exponential_", "random_", "rand",
        "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "multinomial",
    ),
}  # fmt: skip

IGNORED_OPERATORS: dict[str, str] = {
    f"aten.{name}": reason for reason, names in _IGNORED_BY_REASON.items() for name in names
}
"""Normalized packet name -> the exact B.6 / real-models.md 2.1 reason. Ignored is not uncounted: it
never makes a total partial. Backward kernels are absent on purpose (without a formula they are
uncounted gaps); arithmetic applying random values (dropout's ``mul``) keeps its own row."""


def _plain_index_put(args: tuple, kwargs: dict) -> bool:
    """``index_put(self, indices, values, accumulate=False)``: a plain write moves data only."""
    return not arg(args, kwargs, 3, "accumulate", False)


def _plain_scatter(args: tuple, kwargs: dict) -> bool:
    """``scatter`` overloads without ``reduce`` write values; with a reduction they combine them."""
    return kwargs.get("reduce", args[4] if len(args) > 4 else None) is None


IGNORED_UNLESS_ACCUMULATING: dict[str, Callable[[tuple, dict], bool]] = {
    "aten.index_put": _plain_index_put,
    "aten.index_put_": _plain_index_put,
    "aten.scatter": _plain_scatter,
    "aten.scatter_": _plain_scatter,
}
"""Packets ignored with the indexing reason when ``predicate(args, kwargs)`` holds; other calls are
counted by their supplemental formula (accumulation and reduction are arithmetic)."""


def ignored_reason(packet_name: str) -> str | None:
    """The exact reason a packet is always ignored, or ``None`` (profiler ops included by namespace)."""
    reason = IGNORED_OPERATORS.get(packet_name)
    if reason is None and packet_name.startswith("profiler."):
        return PROFILER_REASON
    return reason


# --- registration --------------------------------------------------------------------------------

SUPPLEMENTAL_FORMULAS: dict[str, OperatorFormula] = {}
"""Normalized packet name (in-place ``_`` variants included) -> formula ``(args, kwargs, out) -> int``.
Used only for packets without a native PyTorch formula (B.2)."""


def _packet_names(name: str) -> Iterator[str]:
    """``aten.<name>`` and, where PyTorch has one, its in-place variant ``aten.<name>_``."""
    yield f"aten.{name}"
    if not name.endswith("_") and hasattr(torch.ops.aten, f"{name}_"):
        yield f"aten.{name}_"


def _register(*names: str, rule: DtypeRule = floating_result) -> Callable[[OperatorFormula], OperatorFormula]:
    """Register a shape formula under ``names`` (and their in-place variants), guarded by ``rule``.

    Raises ``TypeError`` for a name that is not a bare operator name and ``ValueError`` for a packet
    registered twice.
    """
    for name in names:
        if not isinstance(name, str) or not name or "." in name:
            raise TypeError(f"supplemental formulas register bare aten operator names, got {name!r}")
    keys = [key for name in names for key in _packet_names(name)]
    for key in keys:
        if key in SUPPLEMENTAL_FORMULAS:
            raise ValueError(f"{key} already has a supplemental formula")

    def decorate(formula: OperatorFormula) -> OperatorFormula:
        @functools.wraps(formula)
        def guarded(args: tuple, kwargs: dict, out: object) -> int:
            return int(formula(args, kwargs, out)) if rule(args, kwargs, out) else 0

        for key in keys:
            SUPPLEMENTAL_FORMULAS[key] = guarded
        return formula

    return decorate


def supplemental_formula(packet_name: str) -> OperatorFormula | None:
    """The supplemental formula for a normalized packet name (``"aten.add_"``), or ``None``."""
    return SUPPLEMENTAL_FORMULAS.get(packet_name)


# --- B.8: element-wise families ------------------------------------------------------------------


def _per_output(cost: int) -> OperatorFormula:
    """Factory: ``cost`` FLOPs per output element (broadcasting counts the output)."""

    def formula(args: tuple, kwargs: dict, out: object) -> int:
        return cost * elements(out)

    formula.__name__ = formula.__qualname__ = f"output_elements_x{cost}"
    formula.__doc__ = f"{cost} FLOP(s) per output element."
    return formula


def _per_input(cost: int) -> OperatorFormula:
    """Factory: ``cost`` FLOPs per element of the first input."""

    def formula(args: tuple, kwargs: dict, out: object) -> int:
        return cost * elements(args[0])

    formula.__name__ = formula.__qualname__ = f"input_elements_x{cost}"
    formula.__doc__ = f"{cost} FLOP(s) per input element."
    return formula


_OUTPUT_COSTS: dict[int, tuple[str, ...]] = {
    1: (
        "mul", "neg", "relu", "abs", "sin", "cos", "log", "reciprocal", "where", "clamp_min",
        "clamp_max", "maximum", "minimum", "exp", "sqrt", "rsqrt", "pow", "float_power", "ceil",
        "floor", "round", "trunc", "frac", "sign", "sgn",
    ),
    3: ("lerp",),  # difference, product, add per output element
    4: ("sigmoid",),
    5: ("silu", "glu"),  # glu: sigmoid of one half (4) and a product, per output element
    6: ("tanh",),
}  # fmt: skip
_INPUT_COSTS: dict[int, tuple[str, ...]] = {
    2: ("hardtanh", "threshold"),
    3: ("hardshrink",),
    4: ("leaky_relu", "hardsigmoid", "prelu", "_prelu_kernel"),
    5: ("hardswish", "softshrink"),
    7: ("softplus", "celu", "log_sigmoid_forward"),
    10: ("mish",),
}
for _cost, _names in _OUTPUT_COSTS.items():
    _register(*_names)(_per_output(_cost))
for _cost, _names in _INPUT_COSTS.items():
    _register(*_names)(_per_input(_cost))
# comparisons produce booleans: their floating inputs decide (B.8 keeps their rows)
_register("eq", "ne", "ge", "gt", "le", "lt", rule=involves_floating)(_per_output(1))
_register("div", rule=true_division)(_per_output(1))
_register("floor_divide", rule=rounded_division)(_per_output(1))  # integer: 0; floating: B.7.3
_register("masked_fill", rule=filled_tensor)(_per_output(1))


@_register("add", "sub", "rsub")
def _add_sub(args: tuple, kwargs: dict, out: object) -> int:
    """``out · (1 + [alpha ≠ 1])``: the scaled operand costs one multiply per element."""
    return elements(out) * (1 + (arg(args, kwargs, 2, "alpha", 1) != 1))


@_register("addcmul", "addcdiv", rule=tensor_operands)
def _addc(args: tuple, kwargs: dict, out: object) -> int:
    """``out · (2 + [value ≠ 1])``: product or quotient, add, and the optional coefficient."""
    return elements(out) * (2 + (arg(args, kwargs, 3, "value", 1) != 1))


@_register("clamp")
def _clamp(args: tuple, kwargs: dict, out: object) -> int:
    """``out · ([min given] + [max given])``: one comparison per bound."""
    bounds = (arg(args, kwargs, 1, "min"), arg(args, kwargs, 2, "max"))
    return elements(out) * sum(bound is not None for bound in bounds)


@_register("gelu")
def _gelu(args: tuple, kwargs: dict, out: object) -> int:
    """``5·out`` exact (erf counts 1), ``14·out`` tanh approximation (cube 2, tanh 6)."""
    cost = {"none": 5, "tanh": 14}.get(kwargs.get("approximate", "none"))
    if cost is None:
        raise UnsupportedOperatorFormula("GELU estimates support only 'none' and 'tanh' approximations.")
    return cost * elements(out)


@_register("elu")
def _elu(args: tuple, kwargs: dict, out: object) -> int:
    """``(6 + [scale ≠ 1] + [input_scale ≠ 1]) · in`` (SELU, with its scale, costs 7)."""
    scale = arg(args, kwargs, 2, "scale", 1)
    input_scale = arg(args, kwargs, 3, "input_scale", 1)
    return (6 + (scale != 1) + (input_scale != 1)) * elements(args[0])


@_register("rrelu_with_noise")
def _rrelu(args: tuple, kwargs: dict, out: object) -> int:
    """``4·in`` in evaluation; training draws random slopes and is unsupported."""
    if arg(args, kwargs, 4, "training", False):
        raise UnsupportedOperatorFormula("RReLU FLOPs cover evaluation calls only.")
    return 4 * elements(args[0])


# --- real-models.md 2.1: indexing that accumulates -----------------------------------------------


@_register("index_put")
def _index_put(args: tuple, kwargs: dict, out: object) -> int:
    """``accumulate=True``: one add per indexed position, ``prod(broadcast(index shapes)) · trailing``.

    Plain writes never reach this formula (they are ignored). Boolean masks and ``None`` entries make
    the position count depend on tensor values or on advanced-indexing layout, so they are unsupported.
    """
    self, indices = args[0], list(args[1])
    if not indices or any(
        not isinstance(index, torch.Tensor) or index.dtype in (torch.bool, torch.uint8) for index in indices
    ):
        raise UnsupportedOperatorFormula(
            "Accumulating index_put FLOPs cover integer index tensors without None entries only."
        )
    positions = math.prod(torch.broadcast_shapes(*(index.shape for index in indices)))
    return positions * math.prod(self.shape[len(indices) :])


@_register("scatter", "scatter_add", "scatter_reduce")
def _scatter_combine(args: tuple, kwargs: dict, out: object) -> int:
    """One combine per scattered element (``index`` elements); a ``mean`` reduction adds ``out``."""
    reduce = kwargs.get("reduce", args[4] if len(args) > 4 else None)
    return elements(args[2]) + (elements(out) if reduce == "mean" else 0)


_POINTWISE = functools.wraps(_per_output(1))(
    lambda args, kwargs, out: elements(out) if floating_result(args, kwargs, out) else 0
)


def pointwise_fallback() -> OperatorFormula:
    """real-models.md 2.2: an unlisted ``torch.Tag.pointwise`` overload counts ``out`` FLOPs.

    The result rule applies: an integer or boolean result counts 0, a complex value is unsupported.
    """
    return _POINTWISE


# --- B.8: reductions, scans, norms, vector products ----------------------------------------------


@_register("sum", rule=reduction_dtype)
def _sum(args: tuple, kwargs: dict, out: object) -> int:
    """``max(in − out, 0)``: reducing ``k`` values into one costs ``k − 1`` adds."""
    return max(elements(args[0]) - elements(out), 0)


_register("all", "any", rule=involves_floating)(_sum)


@_register("mean", rule=reduction_dtype)
def _mean(args: tuple, kwargs: dict, out: object) -> int:
    """``max(in − out, 0) + out``: the sum plus one divide per output."""
    inputs, outputs = elements(args[0]), elements(out)
    if inputs == 0 and outputs > 0:
        raise UnsupportedOperatorFormula("Mean FLOPs require nonempty reduction rows.")
    return max(inputs - outputs, 0) + outputs


@_register("max", "min")
def _extremum(args: tuple, kwargs: dict, out: object) -> int:
    """Binary (second tensor): ``out`` comparisons; reduction: ``max(in − values_out, 0)``."""
    if isinstance(arg(args, kwargs, 1, "other"), torch.Tensor):
        return elements(out)
    return max(elements(args[0]) - elements(out), 0)


@_register("argmax", "argmin", rule=involves_floating)
def _arg_extremum(args: tuple, kwargs: dict, out: object) -> int:
    """``max(in − out, 0)`` comparisons, as the ``max``/``min`` reduction; the integer result does not
    make floating comparisons free (the input rule decides)."""
    return max(elements(args[0]) - elements(out), 0)


@_register("histc")
def _histc(args: tuple, kwargs: dict, out: object) -> int:
    """``in``: one bin-count increment per input element (the bin-index arithmetic is not counted)."""
    return elements(args[0])


@_register("cumsum")
def _cumsum(args: tuple, kwargs: dict, out: object) -> int:
    """``in − in / width``: each scanned row of ``width`` values costs ``width − 1`` adds."""
    inputs, width = elements(args[0]), dim_size(args[0], arg(args, kwargs, 1, "dim"))
    return inputs - inputs // width if width else 0


@_register("norm", "linalg_vector_norm")
def _norm(args: tuple, kwargs: dict, out: object) -> int:
    """Order 2/None: ``2·in`` (square, add, root); orders 1 and ±inf: ``max(2·in − out, 0)``."""
    order = kwargs.get("p", kwargs.get("ord", args[1] if len(args) > 1 else 2))
    inputs = elements(args[0])
    if order is None or order == 2:
        return 2 * inputs
    if order in (1, math.inf, -math.inf):
        return max(2 * inputs - elements(out), 0)
    raise UnsupportedOperatorFormula("Norm FLOPs cover only orders 1, 2, and +/-infinity.")


@_register("dot", "vdot", "mv")
def _vector_product(args: tuple, kwargs: dict, out: object) -> int:
    """``2 · prod(first input shape)``: one multiply-add per element of the first operand."""
    return 2 * math.prod(args[0].shape)


@_register("_grouped_mm")
def _grouped_mm(args: tuple, kwargs: dict, out: object) -> int:
    """``2 · in · weight.shape[-1]`` for packed rows ``(M, K)`` and experts ``(G, K, N)``."""
    rows, weight = args[0], args[1]
    if rows.dim() == 2 and weight.dim() == 3 and rows.shape[-1] == weight.shape[-2]:
        return 2 * elements(rows) * int(weight.shape[-1])
    raise UnsupportedOperatorFormula(
        "Grouped matmul counts cover packed rows and equal-width expert matrices only."
    )


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


# --- B.8: pooling and interpolation --------------------------------------------------------------


def _kernel_volume(kernel_size: int | list[int], rank: int) -> int:
    """An int or a one-element list means ``k^rank``; otherwise the product (``[1, 2]`` is 2)."""
    if isinstance(kernel_size, int):
        return kernel_size**rank
    return kernel_size[0] ** rank if len(kernel_size) == 1 else math.prod(kernel_size)


def _max_pool(rank: int) -> OperatorFormula:
    """Factory: ``out·(K − 1)`` comparisons on the values output."""

    def formula(args: tuple, kwargs: dict, out: object) -> int:
        return elements(out) * (_kernel_volume(args[1], rank) - 1)

    return formula


def _avg_pool(rank: int) -> OperatorFormula:
    """Factory: ``out·K`` (``K − 1`` adds and one divide per window)."""

    def formula(args: tuple, kwargs: dict, out: object) -> int:
        return elements(out) * _kernel_volume(args[1], rank)

    return formula


def _visits(inputs: torch.Tensor, output: torch.Tensor, rank: int) -> int:
    """Values read by exact adaptive windows: ``prod(leading) · Π (L + O − gcd(L, O))`` (A.5.11)."""
    axes = zip(inputs.shape[-rank:], output.shape[-rank:], strict=True)
    return math.prod(inputs.shape[:-rank]) * math.prod(size + o - math.gcd(size, o) for size, o in axes)


def _adaptive_max_pool(rank: int) -> OperatorFormula:
    """Factory: ``visits − out`` comparisons."""

    def formula(args: tuple, kwargs: dict, out: object) -> int:
        values = first_tensor(out)
        assert values is not None
        return _visits(args[0], values, rank) - elements(values)

    return formula


def _adaptive_avg_pool(rank: int) -> OperatorFormula:
    """Factory: ``visits`` (adds plus one divide per window)."""

    def formula(args: tuple, kwargs: dict, out: object) -> int:
        values = first_tensor(out)
        assert values is not None
        return _visits(args[0], values, rank)

    return formula


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

# --- B.9: attention (closed forms in attention_ops) ----------------------------------------------

_register("_scaled_dot_product_flash_attention_for_cpu")(cpu_sdpa_flops)
_register("_native_multi_head_attention")(fused_mha_flops)
_register("_transformer_encoder_layer_fwd")(fused_encoder_layer_flops)

# --- real-models.md 2.4: recurrent kernels and nn.Bilinear (closed forms in recurrent_ops) ------

for _kind in recurrent_ops.GATES:
    _register(_kind)(recurrent_ops.sequence_formula(_kind))
    _register(f"{_kind}_cell")(recurrent_ops.cell_formula(_kind))
_register("_thnn_fused_lstm_cell")(recurrent_ops.fused_cell_formula("lstm"))
_register("_thnn_fused_gru_cell")(recurrent_ops.fused_cell_formula("gru"))
_register("mkldnn_rnn_layer")(recurrent_ops.mkldnn_rnn_layer_flops)
_register("bilinear")(recurrent_ops.bilinear_op_flops)
_register("_trilinear")(recurrent_ops.trilinear_op_flops)
