"""Classification by PyTorch's operator metadata, without a call (families.md 1).

``classify_overload`` is the decision ``resolve`` makes for real counting; the coverage table uses it
for every overload, so the two must never disagree.
"""

from __future__ import annotations

import pytest
import torch

from torchscan.analysis.dispatch import resolution
from torchscan.analysis.dispatch.resolution import classify_overload, is_composite, resolve
from torchscan.formulas.operators import RANDOM_REASON

aten = torch.ops.aten
METADATA = "Metadata views and allocation have no FLOPs."
INDEXING = "Indexing and selection move data and are excluded from FLOPs."
MOVE = "Data movement is excluded from FLOPs."


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        # step 2: in-place views (tag), alias-returning schemas, complex views
        (aten.unsqueeze_.default, ("ignored", METADATA)),
        (aten.transpose_.default, ("ignored", METADATA)),
        (aten.view_as_real.default, ("ignored", METADATA)),
        (aten.view_as_complex.default, ("ignored", METADATA)),
        (aten._conj.default, ("ignored", METADATA)),
        (aten._neg_view.default, ("ignored", METADATA)),
        # B.6 rows keep their exact text (formulas.md acceptance examples)
        (aten.view.default, ("ignored", "Metadata-only tensor view.")),
        (aten.t.default, ("ignored", "Metadata-only tensor view.")),
        # step 3: unchecked indexing, deduplication, data-dependent selection
        (aten._unsafe_index.Tensor, ("ignored", INDEXING)),
        (aten._unsafe_masked_index.default, ("ignored", INDEXING)),
        (aten._unique.default, ("ignored", INDEXING)),
        (aten._unique2.default, ("ignored", INDEXING)),
        (aten.unique_dim.default, ("ignored", INDEXING)),
        (aten.unique_consecutive.default, ("ignored", INDEXING)),
        (aten.nonzero.default, ("ignored", INDEXING)),
        # accumulation is arithmetic: a formula, with plain writes ignored by the indexing reason
        (aten._unsafe_index_put.default, ("supplemental", INDEXING)),
        # step 4: nearest resampling, never decomposed (B.6 data movement row)
        (aten.upsample_nearest2d.vec, ("ignored", MOVE)),
        (aten.upsample_nearest2d.default, ("ignored", MOVE)),
        (aten._upsample_nearest_exact1d.default, ("ignored", MOVE)),
        (aten._upsample_nearest_exact3d.vec, ("ignored", MOVE)),
        # step 5: only C++ composites decompose
        (aten.linear.default, ("decomposed", None)),
        (aten.upsample_bilinear2d.vec, ("decomposed", None)),  # C++ composite of .default
        (aten.native_batch_norm.default, ("supplemental", None)),  # has its own kernel
        (aten.upsample_bilinear2d.default, ("supplemental", None)),
        # formulas first
        (aten.mm.default, ("supplemental", None)),
        (aten.add.Tensor, ("supplemental", None)),
        # data-dependent but arithmetic: never ignored by the tag
        (aten.bincount.default, ("supplemental", None)),  # data-dependent shape, arithmetic: a formula
    ],
    ids=str,
)
def test_classification_follows_the_metadata(op, expected):
    assert classify_overload(op) == expected


def test_unlisted_operators_are_classified_by_their_metadata():
    # aten.t_ is in no table but tagged inplace_view; aten._reshape_alias is in no table but its
    # schema returns an alias without writing: both are metadata only
    assert "aten.t_" not in resolution.operators.IGNORED_OPERATORS
    assert torch.Tag.inplace_view in aten.t_.default.tags
    assert classify_overload(aten.t_.default) == ("ignored", METADATA)
    assert "aten._reshape_alias" not in resolution.operators.IGNORED_OPERATORS
    assert torch.Tag.inplace_view not in aten._reshape_alias.default.tags
    assert classify_overload(aten._reshape_alias.default) == ("ignored", METADATA)


def test_writing_schemas_are_never_metadata():
    # Tensor(a!) returns alias an input that the operator writes: work, not a view
    # (cauchy_ is ignored only because it is a sampler: random numbers, never a view)
    assert classify_overload(aten.cauchy_.default) == ("ignored", RANDOM_REASON)
    assert classify_overload(aten.logcumsumexp.out) == ("uncounted", None)
    assert classify_overload(aten.embedding_renorm_.default) == ("uncounted", None)
    assert classify_overload(aten.renorm_.default) == ("supplemental", None)  # its formula, not a view


def test_a_python_decomposition_is_not_a_composite():
    op = aten._upsample_nearest_exact1d.default
    # PyTorch's own check sees the py_kernels entry; the C++ registration has none
    assert op.has_kernel_for_dispatch_key(torch._C.DispatchKey.CompositeImplicitAutograd)
    assert not is_composite(op)
    assert is_composite(aten.linear.default)
    assert not is_composite(aten.mm.default)
    assert not is_composite("aten.linear")


def test_custom_mapping_takes_precedence_over_every_rule():
    custom = {aten.unsqueeze_: lambda *a, **k: 1, aten.linear: lambda *a, **k: 1}
    assert classify_overload(aten.unsqueeze_.default, custom) == ("custom", None)
    assert classify_overload(aten.linear.default, custom) == ("custom", None)
    assert classify_overload(aten.upsample_nearest2d.vec, {aten.upsample_nearest2d: len}) == ("custom", None)


def test_a_non_overload_is_uncounted():
    assert classify_overload(aten.add) == ("uncounted", None)
    assert classify_overload("aten.add.Tensor") == ("uncounted", None)


def _aten_overloads():
    for full in torch._C._dispatch_get_all_op_names():
        namespace, _, rest = full.partition("::")
        if namespace != "aten":
            continue
        packet, _, overload = rest.partition(".")
        try:
            yield getattr(getattr(aten, packet), overload or "default")
        except (AttributeError, RuntimeError):
            continue


def test_resolve_never_disagrees_with_classify_overload():
    native = resolution.native_registry()
    custom = {aten.sin: resolution.wrap_caller_formula(lambda *a, **k: 0)}
    kinds = {}
    for op in _aten_overloads():
        kind, reason = classify_overload(op, custom, native)
        entry = resolve(op, custom, native)
        assert entry.kind == resolution.CLASSIFICATION_KINDS[kind], op
        if kind == "ignored":
            assert entry.reason == reason, op
        kinds[kind] = kinds.get(kind, 0) + 1
    assert kinds["custom"] >= 1 and kinds["ignored"] > 100 and kinds["decomposed"] > 100
