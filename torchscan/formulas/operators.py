"""Supplemental operator formulas and ignored operators of ``torchscan_flops_v1`` (formulas.md B.6–B.9).

The dispatch engine looks an observed operator up by its normalized packet name
(``str(func.overloadpacket)``, e.g. ``"aten.add"``). PyTorch's native formulas take precedence
(B.2); the engine applies the sparse/nested layout guard (B.7.4) before calling anything here. The
integer/boolean exclusion (B.7.1) and the complex rule (B.7.2) are applied inside every formula of
this table through its *dtype rule*; the arithmetic that truth.md 3 prices on complex values, and
rounded division, live in ``arithmetic_ops`` with complex-aware rules.

The element-wise, reduction and indexing formulas live here; the operand-dependent arithmetic
(``mul``, ``add``, ``sub``, ``div``, ``abs``, ...) in ``arithmetic_ops``; the layer kernels (softmax,
normalization, pooling, attention, recurrent) in ``operator_layers``; the table they register into in
``operator_registry``.

Counts are nominal scalar arithmetic of a documented algorithm — not kernel instructions, FLOP/s,
bytes or latency — and are never the module-formula FLOPs of Part A (the two views are not added).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import torch

from torchscan.formulas import backend_ops, backward_ops, gradient_ops, loss_ops, optimizer_ops
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
    "METADATA_REASON",
    "MOVE_REASON",
    "NEAREST_RESAMPLING",
    "SCALAR_REASON",
    "SUPPLEMENTAL_FORMULAS",
    "VIEW_REASON",
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
# families.md 1 step 2: overloads found metadata-only by PyTorch's own tags and schemas (in-place views,
# alias-returning schemas, complex views) that no name table lists; the B.6 rows above keep their text
METADATA_REASON = "Metadata views and allocation have no FLOPs."
# issue #19: an overload whose schema takes no tensor and returns none (``aten.add.int``, symbolic
# sizes) is Python-number bookkeeping; it does no tensor work whatever its packet's formula says
SCALAR_REASON = "Python scalar and symbolic-size arithmetic does no tensor work."
MOVE_REASON = _MOVE
# generation.md 1: operators ignored with these reasons move no bytes (views, metadata, allocation)
VIEW_REASON = _VIEW
ALLOCATE_REASON = _ALLOCATE

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
        # copies and fills into positions, and functional forms of copy_/fill_/zero_ (issue #19)
        "index_copy", "index_copy_", "index_fill", "index_fill_", "masked_scatter", "masked_scatter_",
        "copy", "fill", "zero", "_reshape_copy", "_chunk_cat", "lift", "_pin_memory", "rot90",
        # layout conversions (sparse, mkldnn, nested/jagged <-> padded) and copies between them
        "_to_dense", "_to_sparse", "_to_sparse_csr", "_to_sparse_csc", "_to_sparse_bsr",
        "_to_sparse_bsc", "to_mkldnn", "_mkldnn_reshape", "_mkldnn_transpose", "_mkldnn_transpose_",
        "mkldnn_reorder_conv2d_weight", "mkldnn_reorder_conv3d_weight", "to_padded_tensor",
        "_nested_from_padded", "_nested_from_padded_and_nested_example", "_nested_from_padded_tensor",
        "_nested_tensor_from_tensor_list", "_nested_tensor_from_mask", "_jagged_to_padded_dense_forward",
        "_padded_dense_to_jagged_forward", "_copy_from", "_copy_from_and_resize", "_lazy_clone",
        "_pack_padded_sequence", "complex", "block_diag", "max_unpool2d", "max_unpool3d",
        "upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d",
        "_upsample_nearest_exact1d", "_upsample_nearest_exact2d", "_upsample_nearest_exact3d",
        # the functional list copy; a quantized tensor's integers, and integers reinterpreted as one
        "_foreach_copy", "int_repr", "_make_per_tensor_quantized_tensor",
        "_make_per_channel_quantized_tensor", "copy_sparse_to_sparse", "_spdiags",
    ),
    _ALLOCATE: (
        "empty", "empty_strided", "empty_like", "new_empty", "new_empty_strided", "empty_permuted",
        "resize", "resize_as", "_resize_output", "_resize_output_", "_empty_affine_quantized",
        "_empty_per_channel_affine_quantized", "empty_quantized", "resize_as_sparse", "sparse_resize",
        "sparse_resize_and_clear",
    ),
    # families.md 1 step 2: queries of a tensor's metadata (and of a jagged tensor's stored offsets),
    # dispatched as operators for tensor subclasses such as nested (jagged) tensors
    METADATA_REASON: (
        "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "size", "stride", "numel", "dim",
        "storage_offset", "is_contiguous", "is_strides_like_format", "is_non_overlapping_and_dense",
        "is_same_size", "is_coalesced", "is_pinned", "dense_dim", "sparse_dim", "_nnz",
        # runtime assertions and export's ordering tokens and range constraints: nothing computed
        "_assert_tensor_metadata", "_assert_async", "_functional_assert_async", "_make_dep_token",
        "_functional_sym_constrain_range", "_functional_sym_constrain_range_for_size",
        "_functional_assert_scalar", "_linalg_check_errors", "_has_same_storage_numel",
        # storage rebinding (set), nested/sparse/quantized layout queries
        "set", "_nested_tensor_size", "_nested_tensor_strides", "_nested_tensor_storage_offsets",
        "_dimI", "_dimV", "q_per_channel_scales", "q_per_channel_zero_points", "q_per_channel_axis",
        "q_scale", "q_zero_point", "qscheme", "is_set_to", "record_stream",
        "_nested_get_offsets", "_nested_get_lengths", "_nested_get_ragged_idx",
        "_nested_get_min_seqlen", "_nested_get_max_seqlen", "_nested_get_jagged_dummy",
        # a sparse tensor's coalesced flag and index check, a nested tensor's stride bookkeeping
        "_coalesced", "_validate_compressed_sparse_indices", "_nested_compute_contiguous_strides_offsets",
    ),
    _CREATE: (
        "full", "full_like", "lift_fresh", "lift_fresh_copy", "ones", "ones_like", "scalar_tensor",
        "zeros", "zeros_like", "arange", "new_zeros", "new_ones", "new_full",
        # creation by formula of position, like arange (observed: torchvision RAFT, position grids)
        "linspace", "logspace", "eye", "tril_indices", "triu_indices",
        # issue #19: the same rule for range and the spectral windows (a function of position only)
        "range", "hann_window", "hamming_window", "bartlett_window", "blackman_window", "kaiser_window",
        # sparse tensors built from given indices and values, and zero tensors without storage
        "sparse_coo_tensor", "_sparse_coo_tensor_with_dims", "_sparse_coo_tensor_with_dims_and_tensors",
        "sparse_compressed_tensor", "_efficientzerotensor", "_new_zeros_with_same_feature_meta",
        "fft_fftfreq", "fft_rfftfreq", "from_file", "_sparse_compressed_tensor_with_dims",
    ),
    # real-models.md 2.1 (index_put and scatter are conditional: IGNORED_UNLESS_ACCUMULATING)
    INDEXING_REASON: (
        "gather", "index", "index_select", "take", "take_along_dim", "stack", "hstack", "vstack",
        "tril", "tril_", "triu", "triu_", "flip", "roll", "repeat", "repeat_interleave",
        "masked_select", "nonzero", "diagonal", "diag_embed", "unfold", "slice_scatter",
        "select_scatter", "diagonal_scatter", "_stack",
        # selection by order (Mixtral's router and expert grouping): the comparisons a sort makes
        # depend on the algorithm and on the values, so no shape formula describes them
        "sort", "argsort", "msort", "topk",
        # families.md 1 step 3: the unchecked indexing kernels (decompositions of gathers and nearest
        # resampling) and deduplication (batched NMS); _unsafe_index_put is conditional, below
        "_unsafe_index", "_unsafe_masked_index", "_unique", "_unique2", "unique_dim",
        "unique_consecutive",
        # selection by order statistics and by search (issue #19): comparisons depend on the values
        # and the algorithm, like sort/topk; as_strided_scatter writes like slice_scatter
        "median", "nanmedian", "mode", "kthvalue", "bucketize", "searchsorted", "nonzero_static",
        "as_strided_scatter",
        # sparse index conversions and masks (integer index arithmetic and selection), LU unpacking
        "_convert_indices_from_coo_to_csr", "_convert_indices_from_csr_to_coo", "sparse_mask",
        "_sparse_mask_projection", "lu_unpack",
    ),
    RANDOM_REASON: (
        "bernoulli", "bernoulli_", "normal", "normal_", "uniform_", "exponential_", "random_", "rand",
        "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "multinomial",
        # samplers only (torch.Tag.nondeterministic_seeded, issue #19); dropout and rrelu, which also
        # compute with the samples, are not here
        "uniform", "normal_functional", "cauchy", "cauchy_", "exponential", "geometric",
        "geometric_", "log_normal", "log_normal_", "poisson", "_standard_gamma",
        "_philox_key_fold_in", "_philox_key_split", "_philox_normal_", "_philox_uniform_",
        "_philox_normal", "_philox_uniform", "random", "_sample_dirichlet", "_cudnn_init_dropout_state",
        "binomial", "_fill_mem_eff_dropout_mask_",
    ),
}  # fmt: skip

# training-and-hardware.md 2: view gradients zero-fill and copy; list copies and fills of optimizers
_IGNORED_BY_REASON[_MOVE] += backward_ops.IGNORED_BACKWARD + optimizer_ops.IGNORED_FOREACH
# weight packing into a backend's layout moves data; backend queries read metadata (backend_ops)
_IGNORED_BY_REASON[_MOVE] += backend_ops.IGNORED_BACKEND["move"]
_IGNORED_BY_REASON[METADATA_REASON] += backend_ops.IGNORED_BACKEND["query"]
IGNORED_OPERATORS: dict[str, str] = {
    f"aten.{name}": reason for reason, names in _IGNORED_BY_REASON.items() for name in names
}
"""Normalized packet name -> the exact B.6 / real-models.md 2.1 reason. Ignored is not uncounted: it
never makes a total partial. Backward kernels other than view gradients are absent on purpose (they
have formulas in ``backward_ops``; without one they are uncounted gaps); arithmetic applying random
values (dropout's ``mul``) keeps its own row."""


def _plain_index_put(args: tuple, kwargs: dict) -> bool:
    """``index_put(self, indices, values, accumulate=False)``: a plain write moves data only."""
    return not arg(args, kwargs, 3, "accumulate", False)


def _plain_scatter(args: tuple, kwargs: dict) -> bool:
    """``scatter`` overloads without ``reduce`` write values; with a reduction they combine them."""
    return kwargs.get("reduce", args[4] if len(args) > 4 else None) is None


IGNORED_UNLESS_ACCUMULATING: dict[str, Callable[[tuple, dict], bool]] = {
    "aten.index_put": _plain_index_put,
    "aten.index_put_": _plain_index_put,
    "aten._unsafe_index_put": _plain_index_put,  # same arguments; no bounds check
    "aten._index_put_impl": _plain_index_put,  # index_put's kernel (+ unsafe flag): same arguments
    "aten._index_put_impl_": _plain_index_put,
    "aten.put": _plain_index_put,  # put(self, index, source, accumulate=False): same position
    "aten.put_": _plain_index_put,
    "aten.scatter": _plain_scatter,
    "aten.scatter_": _plain_scatter,
}
"""Packets ignored with the indexing reason when ``predicate(args, kwargs)`` holds; other calls are
counted by their supplemental formula (accumulation and reduction are arithmetic)."""


NEAREST_RESAMPLING = frozenset(
    f"aten.{name}"
    for name in (
        "upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d",
        "_upsample_nearest_exact1d", "_upsample_nearest_exact2d", "_upsample_nearest_exact3d",
    )
)  # fmt: skip
"""families.md 1 step 4: nearest-neighbour resampling copies source elements (B.6 data movement) under
every grad mode; its ``.vec`` overloads are never decomposed (PyTorch's Python decomposition of them
computes source indices with ``arange``/``mul``/``add``, which are not the kernel's work)."""

COMPLEX_VIEWS = frozenset(
    f"aten.{name}"
    for name in ("view_as_real", "view_as_complex", "_conj", "_neg_view", "resolve_conj", "resolve_neg")
)
"""families.md 1 step 2: complex and conjugate views. ``resolve_conj``/``resolve_neg`` are C++
composites: decomposed under ``torch.inference_mode`` they return the input (nothing to count) or run
the copy they stand for, exactly as outside it."""

ARITHMETIC_DATA_DEPENDENT = frozenset({"aten.bincount"})
"""Overloads tagged ``dynamic_output_shape``/``data_dependent_output`` that do arithmetic (``bincount``
adds weights): the selection rule of families.md 1 step 3 never ignores them."""


# ``prim::layout`` and friends read a tensor's metadata (dispatched for tensor subclasses)
_PRIM_QUERIES = frozenset({"prim.layout", "prim.device", "prim.dtype", "prim.is_nested"})


def ignored_reason(packet_name: str) -> str | None:
    """The exact reason a packet is always ignored, or ``None`` (profiler ops included by namespace)."""
    reason = IGNORED_OPERATORS.get(packet_name)
    if reason is None and packet_name.startswith("profiler."):
        return PROFILER_REASON
    if reason is None and packet_name in _PRIM_QUERIES:
        return METADATA_REASON
    return reason


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
