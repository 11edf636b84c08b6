"""Supplemental operator formulas of ``torchscan_flops_v1`` (formulas.md B.7–B.9), ignored ones beside.

The dispatch engine looks an observed operator up by its normalized packet name
(``str(func.overloadpacket)``, e.g. ``"aten.add"``). PyTorch's native formulas take precedence
(B.2); the engine applies the sparse/nested layout guard (B.7.4) before calling anything here. The
integer/boolean exclusion (B.7.1) and the complex rule (B.7.2) are applied inside every formula of
this table through its *dtype rule*; the arithmetic that truth.md 3 prices on complex values, and
rounded division, live in ``arithmetic_ops`` with complex-aware rules.

The element-wise, reduction and indexing formulas live here; the operators ignored as zero-FLOP
(B.6) and their reasons in ``ignored_ops`` (re-exported here); the operand-dependent arithmetic
(``mul``, ``add``, ``sub``, ``div``, ``abs``, ...) in ``arithmetic_ops``; the layer kernels (softmax,
normalization, pooling, attention, recurrent) in ``operator_layers``; the table they register into in
``operator_registry``.

Counts are nominal scalar arithmetic of a documented algorithm — not kernel instructions, FLOP/s,
bytes or latency — and are never the module-formula FLOPs of Part A (the two views are not added).
"""

from __future__ import annotations

import functools
import math

import torch

from torchscan.formulas import backward_ops, gradient_ops, loss_ops, optimizer_ops
from torchscan.formulas.ignored_ops import (
    ALLOCATE_REASON,
    ARITHMETIC_DATA_DEPENDENT,
    COMPLEX_VIEWS,
    IGNORED_OPERATORS,
    IGNORED_UNLESS_ACCUMULATING,
    INDEXING_REASON,
    METADATA_REASON,
    MOVE_REASON,
    NEAREST_RESAMPLING,
    PROFILER_REASON,
    RANDOM_REASON,
    SCALAR_REASON,
    VIEW_REASON,
    ignored_reason,
)
from torchscan.formulas.operator_common import (
    OperatorFormula,
    UnsupportedOperatorFormula,
    arg,
    dim_size,
    elements,
    filled_tensor,
    floating_result,
    involves_floating,
    power_sum_flops,
    reduction_dtype,
    tensor_operands,
)
from torchscan.formulas.operator_registry import (
    SUPPLEMENTAL_FORMULAS,
    supplemental_formula,
)
from torchscan.formulas.operator_registry import per_input as _per_input
from torchscan.formulas.operator_registry import per_output as _per_output
from torchscan.formulas.operator_registry import register as _register

__all__ = [
    "ALLOCATE_REASON",
    "ARITHMETIC_DATA_DEPENDENT",
    "COMPLEX_VIEWS",
    "IGNORED_OPERATORS",
    "IGNORED_UNLESS_ACCUMULATING",
    "INDEXING_REASON",
    "METADATA_REASON",
    "MOVE_REASON",
    "NEAREST_RESAMPLING",
    "PROFILER_REASON",
    "RANDOM_REASON",
    "SCALAR_REASON",
    "SUPPLEMENTAL_FORMULAS",
    "VIEW_REASON",
    "OperatorFormula",
    "UnsupportedOperatorFormula",
    "ignored_reason",
    "pointwise_fallback",
    "supplemental_formula",
]

# --- B.8: element-wise families ------------------------------------------------------------------


_OUTPUT_COSTS: dict[int, tuple[str, ...]] = {
    1: (
        "relu", "sin", "cos", "log", "reciprocal", "where", "clamp_min", "clamp_max", "maximum",
        "minimum", "exp", "sqrt", "rsqrt", "pow", "float_power", "ceil", "floor", "round", "trunc",
        "frac", "sign",
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
_register("masked_fill", rule=filled_tensor)(_per_output(1))
# in-place right shift: untagged, unlike __rshift__ (pointwise); integer shifts count 0 (B.7.1)
_register("__irshift__")(_per_output(1))


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


@_register("rrelu_with_noise", "rrelu_with_noise_functional")
def _rrelu(args: tuple, kwargs: dict, out: object) -> int:
    """``4·in`` in evaluation; training draws random slopes and is unsupported."""
    if arg(args, kwargs, 4, "training", False):
        raise UnsupportedOperatorFormula("RReLU FLOPs cover evaluation calls only.")
    return 4 * elements(args[0])


# --- real-models.md 2.1: indexing that accumulates -----------------------------------------------


@_register("index_put", "_unsafe_index_put", "_index_put_impl")
def _index_put(args: tuple, kwargs: dict, out: object) -> int:
    """``accumulate=True``: one add per written element, the elements of ``self[indices]``.

    Advanced indexing broadcasts the index tensors to one shape ``B``; every dimension of ``self``
    without an index tensor (a ``None`` entry, the full slice of ``bias[:, idx]``'s backward, or a
    trailing dimension past the list) is kept whole. Wherever ``B`` lands in the result (adjacent
    index tensors keep their place, separated ones move to the front), the written elements are
    ``prod(B) · prod(kept dimensions)`` (truth.md 6: as without ``None`` entries). Boolean masks make
    the count depend on tensor values and are unsupported.
    """
    self, indices = args[0], list(args[1])
    tensors = [index for index in indices if index is not None]
    if not tensors or any(
        not isinstance(index, torch.Tensor) or index.dtype in (torch.bool, torch.uint8) for index in tensors
    ):
        raise UnsupportedOperatorFormula(
            "Accumulating index_put FLOPs cover integer index tensors (and None entries) only."
        )
    positions = math.prod(torch.broadcast_shapes(*(index.shape for index in tensors)))
    kept = [size for size, index in zip(self.shape, indices, strict=False) if index is None]
    return positions * math.prod(kept) * math.prod(self.shape[len(indices) :])


@_register("_unsafe_masked_index_put_accumulate")
def _masked_index_put_accumulate(args: tuple, kwargs: dict, out: object) -> int:
    """``(self, mask, indices, values)``: ``index_put``'s accumulating count over the broadcast index
    positions; masked-out positions add the zeros the kernel substitutes."""
    return _index_put((args[0], args[2]), {}, out)


@_register("scatter", "scatter_add", "scatter_reduce")
def _scatter_combine(args: tuple, kwargs: dict, out: object) -> int:
    """One combine per scattered element (``index`` elements); a ``mean`` reduction adds ``out``."""
    reduce = kwargs.get("reduce", args[4] if len(args) > 4 else None)
    return elements(args[2]) + (elements(out) if reduce == "mean" else 0)


@_register("index_add")
def _index_add(args: tuple, kwargs: dict, out: object) -> int:
    """``index_add(self, dim, index, source, alpha=1)``: one add per ``source`` element (accumulation,
    as ``scatter_add``), plus one multiply per element when ``alpha ≠ 1`` scales ``source`` first."""
    alpha = arg(args, kwargs, 4, "alpha", 1)
    return elements(args[3]) * (1 if alpha == 1 else 2)


_POINTWISE = functools.wraps(_per_output(1))(
    lambda args, kwargs, out: elements(out) if floating_result(args, kwargs, out) else 0
)
_POINTWISE.dtype_rule = floating_result  # type: ignore[attr-defined]  # as a registered formula's guard


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


# _is_all_true/_is_any_true: the boolean reductions of runtime checks (0 by the input rule)
_register("all", "any", "_is_all_true", "_is_any_true", rule=involves_floating)(_sum)


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


@_register("aminmax", "_aminmax")
def _min_and_max(args: tuple, kwargs: dict, out: object) -> int:
    """``2·max(in − out, 0)``: a ``min`` and a ``max`` reduction over the same rows (``out`` = the
    elements of one of the two results), each costing what the ``max``/``min`` reduction costs."""
    return 2 * max(elements(args[0]) - elements(out), 0)


@_register("argmax", "argmin", rule=involves_floating)
def _arg_extremum(args: tuple, kwargs: dict, out: object) -> int:
    """``max(in − out, 0)`` comparisons, as the ``max``/``min`` reduction; the integer result does not
    make floating comparisons free (the input rule decides)."""
    return max(elements(args[0]) - elements(out), 0)


@_register("histc")
def _histc(args: tuple, kwargs: dict, out: object) -> int:
    """``in``: one bin-count increment per input element (the bin-index arithmetic is not counted);
    with ``min == max`` (the default) the kernel first finds the data's bounds (``aminmax``,
    ``2·(in − 1)`` comparisons)."""
    inputs = elements(args[0])
    bounded = arg(args, kwargs, 2, "min", 0) != arg(args, kwargs, 3, "max", 0)
    return inputs + (0 if bounded else 2 * max(inputs - 1, 0))


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


@_register("linalg__powsum")
def _power_sum(args: tuple, kwargs: dict, out: object) -> int:
    """``Σ |x|^ord`` (a vector norm without its root): :func:`power_sum_flops`."""
    return power_sum_flops(elements(args[0]), elements(out), arg(args, kwargs, 1, "ord", 2))


@_register("dot", "vdot", "mv")
def _vector_product(args: tuple, kwargs: dict, out: object) -> int:
    """``2 · prod(first input shape)``: one multiply-add per element of the first operand."""
    return 2 * math.prod(args[0].shape)


# Layer kernels (softmax, normalization, pooling, attention, recurrent), library kernels and grid
# sampling (families.md 2: torchvision names only, never an import), FFT, weight norm and isin
# register on import.
from torchscan.formulas import (  # noqa: E402, F401
    antialias_ops,
    arithmetic_ops,
    attention_kernels,
    ctc_ops,
    fused_ops,
    linalg_ops,
    operator_layers,
    product_ops,
    spectral_ops,
    statistics_ops,
    sync_batch_norm_ops,
    vision_ops,
)

# --- training-and-hardware.md 2: backward, loss and optimizer kernels (derivations beside them) --

# --- torch-versions.md 1: products, convolutions and fused attention, also in FlopCounterMode's
# registry, counted by TorchScan's own reference-checked formulas on every torch ------------------

for _name, _kernel in {**product_ops.PRODUCTS, **product_ops.CONVOLUTIONS}.items():
    _register(_name, rule=product_ops.any_dtype)(_kernel)
for _name, _kernel in attention_kernels.ATTENTION_KERNELS.items():
    _register(_name)(_kernel)

for _name, _formula in {
    **backward_ops.BACKWARD_FORMULAS,
    **gradient_ops.GRADIENT_FORMULAS,
    **loss_ops.LOSS_FORMULAS,
    **optimizer_ops.FOREACH_FORMULAS,
    **optimizer_ops.FUSED_FORMULAS,
    **optimizer_ops.AMP_FORMULAS,
}.items():
    _register(_name)(_formula)
