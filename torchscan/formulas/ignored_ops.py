"""Operators ignored as zero-FLOP in ``torchscan_flops_v1`` (formulas.md B.6, real-models.md 2.1).

Ignored is not uncounted: an ignored operator moves, views, allocates, creates or selects data, and
its exact reason is reported beside the zero; it never makes a total partial. The tables here are
read by the dispatch observer through :mod:`torchscan.formulas.operators`, which re-exports them.
"""

from __future__ import annotations

from collections.abc import Callable

from torchscan.formulas import backend_ops, backward_ops, optimizer_ops
from torchscan.formulas.operator_common import arg

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
