"""The B.6 ignored table and the supplemental formula interface (formulas.md B.6, B.2).

The tables are checked against PyTorch's own registry: real normalized packets, disjoint, never
shadowing a native formula.
"""

from __future__ import annotations

from collections import Counter

import pytest
import torch
from torch.utils.flop_counter import flop_registry

from torchscan.formulas.operators import (
    IGNORED_OPERATORS,
    SUPPLEMENTAL_FORMULAS,
    UnsupportedOperatorFormula,
    supplemental_formula,
)


def test_ignored_table_has_the_exact_b6_reasons():
    reasons = Counter(IGNORED_OPERATORS.values())
    assert reasons == {
        "Metadata-only tensor view.": 18,  # B.6's 16 + detach_ and as_strided_ (observed in the zoo)
        # 18 named + 3 reflection + 3 replication + 6 nearest + unsafe_split(_with_sizes) (RNN gate chunks)
        # + training-and-hardware.md 2: 4 view gradients (slice/select/diagonal/unfold_backward) and
        # the optimizers' list copy and fill (_foreach_copy_, _foreach_zero_)
        # + issue #19: 14 copies and fills into positions (index_copy/fill, masked_scatter and the
        # functional copy/fill/zero, _reshape_copy, _chunk_cat, lift, _pin_memory, rot90)
        # + 24 layout conversions (sparse, oneDNN, nested/jagged <-> padded, _copy_from, _lazy_clone)
        # and 4 placements (complex, block_diag, max_unpool2d/3d)
        # + the functional list copy, quantized integers and their reinterpretation (4), sparse copies
        # and diagonals (2), and 7 weight-packing kernels of backends (backend_ops.IGNORED_BACKEND)
        "Data movement is excluded from FLOPs.": 32 + 4 + 2 + 14 + 24 + 4 + 6 + 7,
        # B.6's 5 + empty_permuted, the 4 resizes and 2 quantized empties (issue #19)
        # + the quantized empty and 3 sparse resizes
        "Tensor allocation is excluded from FLOPs.": 5 + 5 + 2 + 4,
        # B.6's 13 + creation by position formula (linspace, logspace, eye, tril/triu_indices)
        # + issue #19: range and 5 spectral windows, 6 sparse/zero-tensor constructors
        # + fft_(r)fftfreq, from_file and a sparse compressed constructor
        "Tensor creation is excluded from FLOPs.": 13 + 5 + 6 + 6 + 2 + 2,
        # real-models.md 2.1: 22 names + tril_ and triu_ + the order selections sort, argsort, msort,
        # topk (Mixtral's router) + families.md 1 step 3: _unsafe_index, _unsafe_masked_index, _unique,
        # _unique2, unique_dim, unique_consecutive; 14 names + the out-of-place normal
        # + issue #19: 8 order-statistic and search selections (median, kthvalue, searchsorted, ...)
        # + _stack, 2 sparse index conversions, 2 sparse masks and lu_unpack
        "Indexing and selection move data and are excluded from FLOPs.": 28 + 6 + 8 + 1 + 5,
        # 15 + issue #19: 15 samplers only (tagged nondeterministic_seeded; never dropout or rrelu)
        # + philox, random, dirichlet; binomial and the fused attention kernels' dropout mask
        "Random-number generation is excluded from FLOPs.": 15 + 15 + 5 + 2,
        # families.md 1 step 2: metadata queries (sym_size, stride, ..., a jagged tensor's offsets)
        # + issue #19: 5 sparse/pinned queries and 6 runtime assertions and export tokens, 3 more
        # checks (_functional_assert_scalar, ...), set and 7 nested/sparse/quantized layout queries
        # and 6 quantization/stream queries (q_scale, qscheme, record_stream, ...)
        # + 3 sparse/nested bookkeeping kernels and 5 backend queries (which kernel, whether aligned)
        "Metadata views and allocation have no FLOPs.": 19 + 5 + 6 + 3 + 8 + 6 + 3 + 5,
    }
    assert IGNORED_OPERATORS["aten.view"] == "Metadata-only tensor view."
    assert IGNORED_OPERATORS["aten.squeeze_"] == "Metadata-only tensor view."
    assert IGNORED_OPERATORS["aten._upsample_nearest_exact3d"] == "Data movement is excluded from FLOPs."
    assert IGNORED_OPERATORS["aten.new_empty_strided"] == "Tensor allocation is excluded from FLOPs."
    assert IGNORED_OPERATORS["aten.scalar_tensor"] == "Tensor creation is excluded from FLOPs."
    # real-models.md 2.1 amends B.6: random numbers and indexing are ignored
    for name in ("aten.bernoulli_", "aten.normal_", "aten.uniform_"):
        assert IGNORED_OPERATORS[name] == "Random-number generation is excluded from FLOPs."
    assert IGNORED_OPERATORS["aten.gather"] == "Indexing and selection move data and are excluded from FLOPs."
    # training-and-hardware.md 2: backward kernels are counted by a formula, never ignored
    name = "aten.native_layer_norm_backward"
    assert name not in IGNORED_OPERATORS and supplemental_formula(name) is not None


@pytest.mark.parametrize("table", [IGNORED_OPERATORS, SUPPLEMENTAL_FORMULAS], ids=["ignored", "formulas"])
def test_every_key_is_a_real_normalized_packet(table):
    for name in table:
        namespace, _, op = name.partition(".")
        if namespace == "torchvision" and table is SUPPLEMENTAL_FORMULAS:
            continue  # library kernels (families.md 2): checked below, where torchvision is installed
        assert namespace == "aten"
        assert str(getattr(torch.ops.aten, op)) == name


def test_library_keys_are_real_torchvision_packets():
    library = [name for name in SUPPLEMENTAL_FORMULAS if not name.startswith("aten.")]
    assert sorted(library) == [
        "torchvision._deform_conv2d_backward",
        "torchvision._ps_roi_align_backward",
        "torchvision._ps_roi_pool_backward",
        "torchvision._roi_align_backward",
        "torchvision._roi_pool_backward",
        "torchvision.box_iou_rotated",
        "torchvision.deform_conv2d",
        "torchvision.nms",
        "torchvision.ps_roi_align",
        "torchvision.ps_roi_pool",
        "torchvision.roi_align",
        "torchvision.roi_pool",
    ]
    pytest.importorskip("torchvision")
    for name in library:
        assert str(getattr(torch.ops.torchvision, name.partition(".")[2])) == name


def test_tables_are_disjoint_and_cover_every_formula_flop_counter_mode_has():
    # torch-versions.md 1: every operator packet PyTorch's FlopCounterMode counts on this torch has a
    # formula of TorchScan's own (checked by tests/formulas/reference), which is the one used
    native = {str(packet) for packet in flop_registry if isinstance(packet, torch._ops.OpOverloadPacket)}
    assert not set(SUPPLEMENTAL_FORMULAS) & set(IGNORED_OPERATORS)
    assert native <= set(SUPPLEMENTAL_FORMULAS)


@pytest.mark.parametrize(
    ("name", "has_formula"),
    [
        ("aten.add", True),
        ("aten.add_", True),  # B.8: in-place variants share the formula
        ("aten.div_", True),
        ("aten.relu_", True),
        ("aten.masked_fill_", True),
        ("aten.rrelu_with_noise_", True),
        ("aten.sum_", False),  # PyTorch has no in-place sum
        ("aten.atan", False),  # C16: not in B.8
        ("aten.mm", True),  # TorchScan's own on every torch (torch-versions.md 1)
        ("aten.view", False),  # ignored, not counted
        ("aten.add.Tensor", False),  # keys are packets, not overloads
    ],
)
def test_supplemental_formula_lookup(name, has_formula):
    assert (supplemental_formula(name) is not None) is has_formula


def test_inplace_variant_shares_the_rule():
    assert SUPPLEMENTAL_FORMULAS["aten.add_"] is SUPPLEMENTAL_FORMULAS["aten.add"]
    assert SUPPLEMENTAL_FORMULAS["aten.gelu_"] is SUPPLEMENTAL_FORMULAS["aten.gelu"]


def test_unsupported_reason_is_the_exception_text():
    x = torch.ones(2, 3)
    with pytest.raises(UnsupportedOperatorFormula) as info:
        SUPPLEMENTAL_FORMULAS["aten.norm"]((x, 3), {}, x)
    assert str(info.value) == "Norm FLOPs cover only orders 1, 2, and +/-infinity."
