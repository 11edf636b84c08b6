"""Supplemental formulas called directly on meta tensors (counts, unsupported reasons, dtype rules)
and the B.7/B.8 rules through dispatch (formulas.md B.6–B.8).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch
from operator_counting import COMPLEX, INTERPOLATION, MHA_BASE, Case, check
from torch import nn
from torch.nn import functional as F

from torchscan.formulas.operators import UnsupportedOperatorFormula, supplemental_formula


def meta(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.empty(*shape, dtype=dtype, device="meta")


def formula(name: str) -> Callable[[tuple, dict, object], int]:
    found = supplemental_formula(name)
    assert found is not None
    return found


SDPA = "_scaled_dot_product_flash_attention_for_cpu"
GROUPED_MM = "Grouped matmul counts cover 2-D and 3-D operands with matching inner widths only."
EMPTY_BATCH_NORM = "Empty native BatchNorm work depends on strides unavailable to the shape formula."
SDPA_SHAPES = (
    "Fused attention formula requires matching batches, divisible query/KV heads, "
    "Q/K widths, and K/V lengths."
)
FUSED_MHA = "Fused MHA counts require dense batched self-attention with matching widths."


def qkv(query: tuple[int, ...], key: tuple[int, ...], value: tuple[int, ...], *extra: object) -> tuple:
    return (meta(*query), meta(*key), meta(*value), *extra)


@pytest.mark.parametrize(
    ("name", "args", "kwargs", "out", "expected"),
    [
        # C23 meta shapes q (1, 2, 3, 4), k = v (1, 2, 5, 4): rows 6, scores 30: 2·30·8 + 30 + 150 − 12
        (SDPA, qkv((1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4)), {}, None, 648),
        # grouped-query attention, Hq = 4 over Hk = 2: rows 12, scores 36: 2·36·4 + 36 + 156
        (SDPA, qkv((1, 4, 3, 2), (1, 2, 3, 2), (1, 2, 3, 2)), {}, None, 480),
        # explicit scale: values change, not the count
        (SDPA, qkv((1, 4, 3, 2), (1, 2, 3, 2), (1, 2, 3, 2)), {"scale": 0.1}, None, 480),
        # empty key length: no scores, no softmax rows
        (SDPA, qkv((1, 2, 3, 2), (1, 2, 0, 2), (1, 2, 0, 2)), {}, None, 0),
        # fused MHA on meta: the same closed form as on CPU
        ("_native_multi_head_attention", qkv((2, 3, 4), (2, 3, 4), (2, 3, 4), 4, 2), {}, None, MHA_BASE + 36),
        # 2·in·N = 2·48·5
        (
            "_grouped_mm",
            (meta(6, 8, dtype=torch.bfloat16), meta(3, 8, 5, dtype=torch.bfloat16)),
            {},
            None,
            480,
        ),
        ("rms_norm", (meta(2, 3), [3], meta(3), None), {}, meta(2, 3), 28),  # (3 + 1)·6 + 2·2
        ("_fused_rms_norm", (meta(2, 3), [3], None, None), {}, (meta(2, 3), meta(2, 1)), 22),  # 3·6 + 2·2
        ("native_layer_norm", (meta(2, 2, 2, 3), [2, 3], None, meta(2, 3), 1e-5), {}, None, 176),  # A = 1
        ("mean", (meta(0, 3), [1]), {}, meta(0), 0),  # empty rows, but no output either
        ("sum", (meta(0, 3),), {}, meta(()), 0),  # max(0 − 1, 0)
        ("cumsum", (meta(2, 0), 1), {}, meta(2, 0), 0),  # width 0
        ("_softmax", (meta(0, 4), -1, False), {}, meta(0, 4), 0),
        ("_softmax", (meta(2, 0), -1, False), {}, meta(2, 0), 0),
        ("_softmax", (meta(()), 0, False), {}, meta(()), 3),  # one row of one value: 5 − 2
    ],
)
def test_formulas_on_meta_tensors(name, args, kwargs, out, expected):
    assert formula(f"aten.{name}")(args, kwargs, out) == expected


@pytest.mark.parametrize(
    ("name", "args", "kwargs", "reason"),
    [
        (SDPA, qkv((1, 3, 3, 2), (1, 2, 3, 2), (1, 2, 3, 2)), {}, SDPA_SHAPES),  # 3 heads over 2
        (SDPA, qkv((1, 2, 3, 2), (1, 2, 3, 4), (1, 2, 3, 2)), {}, SDPA_SHAPES),  # Q/K widths differ
        (SDPA, qkv((1, 2, 3, 2), (1, 2, 3, 2), (1, 2, 4, 2)), {}, SDPA_SHAPES),  # K/V lengths differ
        (SDPA, qkv((2, 3, 2), (2, 3, 2), (2, 3, 2)), {}, SDPA_SHAPES),  # not 4-D
        (SDPA, qkv((2, 2, 3, 2), (1, 2, 3, 2), (1, 2, 3, 2)), {}, SDPA_SHAPES),  # batches differ
        # (the CPU kernel itself refuses dropout, so this one is only reachable by direct call)
        (
            SDPA,
            qkv((1, 2, 3, 2), (1, 2, 3, 2), (1, 2, 3, 2), 0.1),
            {},
            "Fused attention formula does not cover dropout.",
        ),
        ("_native_batch_norm_legit", (meta(0, 3, 4), None, None, True, 0.1, 1e-5), {}, EMPTY_BATCH_NORM),
        ("native_batch_norm", (meta(2, 3, 0), None, None, None, None, True, 0.1, 1e-5), {}, EMPTY_BATCH_NORM),
        ("_native_multi_head_attention", qkv((2, 3, 4), (2, 5, 4), (2, 5, 4), 4, 2), {}, FUSED_MHA),
        ("_native_multi_head_attention", qkv((2, 3, 4), (2, 3, 4), (2, 3, 4), 8, 2), {}, FUSED_MHA),
        ("_native_multi_head_attention", qkv((3, 4), (3, 4), (3, 4), 4, 2), {}, FUSED_MHA),
        ("_transformer_encoder_layer_fwd", (meta(2, 3, 4), 8, 2), {}, FUSED_MHA),
        ("_grouped_mm", (meta(6, 8), meta(3, 4, 5)), {}, GROUPED_MM),
        ("_grouped_mm", (meta(2, 6, 8, 1), meta(2, 8, 5)), {}, GROUPED_MM),  # a 4-D operand
        (
            "rms_norm",
            (meta(2, 3), [3], meta(1, 3), None),
            {},
            "RMSNorm FLOPs require a matching weight shape.",
        ),
        (
            "native_group_norm",
            (meta(2, 0, 3), None, None, 2, 0, 3, 1, 1e-5),
            {},
            "GroupNorm FLOPs require a nonempty normalized group.",
        ),
        ("mean", (meta(2, 0), [1]), {}, "Mean FLOPs require nonempty reduction rows."),
        (
            "gelu",
            (meta(2),),
            {"approximate": "sigmoid"},
            "GELU estimates support only 'none' and 'tanh' approximations.",
        ),
        ("upsample_linear1d", (meta(1, 1, 3, dtype=torch.int64), [6], False), {}, INTERPOLATION),
        ("upsample_linear1d", (meta(1, 1, 3, dtype=torch.complex64), [6], False), {}, COMPLEX),
        # truth.md 3 prices complex add/sub/mul/div/abs; other complex element-wise work stays
        # unsupported (a real formula would undercount it)
        ("exp", (meta(2, dtype=torch.complex64),), {}, COMPLEX),
        ("pow", (meta(2, dtype=torch.complex64), 2), {}, COMPLEX),
        ("cumsum", (meta(2), 0), {"dtype": torch.complex128}, COMPLEX),  # a complex dtype argument
        ("masked_fill", (meta(2, dtype=torch.complex64), meta(2, dtype=torch.bool), 0.0), {}, COMPLEX),
    ],
)
def test_unsupported_reasons(name, args, kwargs, reason):
    with pytest.raises(UnsupportedOperatorFormula) as info:
        formula(f"aten.{name}")(args, kwargs, meta(2))
    assert str(info.value) == reason


def dispatch_cases() -> dict[str, Case]:
    x, integers = torch.ones(2, 3), torch.ones(2, 3, dtype=torch.int64)
    vector, mask = torch.ones(3), torch.ones(2, 3, dtype=torch.bool)
    experts = torch.ones(3, 8, 8, dtype=torch.bfloat16).transpose(-2, -1)
    rows, offsets = torch.ones(6, 8, dtype=torch.bfloat16), torch.tensor([2, 4, 6], dtype=torch.int32)
    return {
        "pow-2": Case(lambda: x**2, 6),
        "pow-2.0": Case(lambda: x.pow(2.0), 6),
        # real-models.md 2.2: any exponent costs one FLOP per output element
        "pow-3": Case(lambda: x**3, 6, {"aten.pow": 6}),
        "pow-tensor-exponent": Case(lambda: 2**x, 6, {"aten.pow": 6}),
        "pow-int": Case(lambda: integers**3, 0, {"aten.pow": 0}),  # integer exclusion comes first
        "clamp-both": Case(lambda: x.clamp(0, 1), 12),  # 6 · 2 bounds
        "clamp-min": Case(lambda: x.clamp(min=0), 6),
        "clamp-tensor-bounds": Case(lambda: x.clamp(vector, vector), 12),
        "clamp_min": Case(lambda: x.clamp_min(0), 6),
        "addcmul-value": Case(lambda: torch.addcmul(x, x, x, value=0.5), 18),  # 6 · (2 + 1)
        "addcdiv": Case(lambda: torch.addcdiv(x, x, x), 12),  # 6 · 2
        # integer operands: the float coefficient does not make them count
        "addcmul-int": Case(
            lambda: torch.addcmul(integers, integers, integers, value=2), 0, {"aten.addcmul": 0}
        ),
        "masked_fill": Case(lambda: x.masked_fill(mask, 1.0), 6),
        "masked_fill-int-float-value": Case(
            lambda: integers.masked_fill(mask, 1.5), 0, {"aten.masked_fill": 0}
        ),
        "where": Case(lambda: torch.where(mask, x, 0.0), 6, ignored={"aten.scalar_tensor": 1}),
        "max-full": Case(lambda: x.max(), 5),  # 6 − 1
        "max-dim": Case(lambda: x.max(dim=1), 4),  # 6 − 2 values
        "min-dim-keepdim": Case(lambda: x.min(dim=0, keepdim=True), 3),  # 6 − 3
        "max-binary": Case(lambda: torch.max(x, x), 6),  # dispatched as maximum
        "max-binary-overload": Case(lambda: torch.ops.aten.max.other(x, x), 6),
        "any": Case(lambda: x.any(), 5),  # a floating input counts
        "cumsum": Case(lambda: x.cumsum(1), 4),  # 6 − 6/3
        "cumsum-int-float-dtype": Case(lambda: integers.cumsum(1, dtype=torch.float32), 4),
        "norm-2": Case(lambda: torch.linalg.vector_norm(x), 12),  # 2·6
        "norm-1": Case(lambda: torch.linalg.vector_norm(x, 1, dim=1), 10),  # 12 − 2
        "norm-inf": Case(lambda: torch.linalg.vector_norm(x, math.inf, dim=0), 9),  # 12 − 3
        "norm-overload": Case(lambda: torch.ops.aten.norm.Scalar(x, 2), 12),
        "norm-3": Case(
            lambda: x.norm(p=3),
            0,
            unsupported={"aten.linalg_vector_norm": "Norm FLOPs cover only orders 1, 2, and +/-infinity."},
        ),
        "dot": Case(lambda: torch.dot(vector, vector), 6),
        "vdot": Case(lambda: torch.vdot(vector, vector), 6),
        "mv": Case(lambda: torch.mv(x, vector), 12),  # 2·(2·3)
        "grouped_mm": Case(lambda: torch._grouped_mm(rows, experts, offsets), 768),  # 2·48·8
        # the weight gradient's layout: (K, M) × (M, N) = (8, 16) × (16, 8) with offs splitting M into
        # 4, 4, 8 -> (3, 8, 8); each group contracts its own rows only: 2·8·16·8 = 2048 (not 3 full
        # products, 6144)
        "grouped_mm-2d-2d": Case(
            lambda: torch._grouped_mm(
                torch.ones(8, 16, dtype=torch.bfloat16),
                torch.ones(16, 8, dtype=torch.bfloat16),
                torch.tensor([4, 8, 16], dtype=torch.int32),
            ),
            2048,
        ),
        # batched (G, M, K) × (G, K, N) without offs: 2·3·8·8·8
        "grouped_mm-3d-3d": Case(lambda: torch._grouped_mm(experts.contiguous(), experts), 3072),
        "safe_softmax": Case(lambda: torch.ops.aten._safe_softmax(x, -1), 38),  # 5·6 − 2·2 + 2·6
        "log_softmax": Case(lambda: torch.log_softmax(x, 0), 21),  # 4·6 − 3 rows
        "rrelu-training": Case(
            lambda: nn.RReLU().train()(x),
            0,
            unsupported={"aten.rrelu_with_noise": "RReLU FLOPs cover evaluation calls only."},
        ),
        # in-place variants: mul_ 6 + add_ with alpha 12 + clamp_ 6 + relu_ 6 + elu_ 36 + sigmoid_ 24
        "in-place": Case(
            lambda: F.elu(
                F.relu(x.clone().mul_(2).add_(x, alpha=2).clamp_(0), inplace=True), inplace=True
            ).sigmoid_(),
            90,
            ignored={"aten.clone": 1},
        ),
        # truth.md 3: a rounded division of floating values divides and rounds, 2·6
        "in-place-rounding": Case(
            lambda: x.clone().div_(2, rounding_mode="floor"), 12, ignored={"aten.clone": 1}
        ),
        "trunc-rounding": Case(lambda: torch.div(x, 2, rounding_mode="trunc"), 12, {"aten.div": 12}),
        "int-rounding": Case(lambda: torch.div(integers, 2, rounding_mode="floor"), 0, {"aten.div": 0}),
        "int-mul-float-scalar": Case(lambda: integers * 0.5, 6),  # a Python float involves floating values
        "bool-compare": Case(lambda: mask == mask, 0, {"aten.eq": 0}),
        "sub-alpha": Case(lambda: torch.sub(x, x, alpha=3), 12),
        "add-scalar-overload": Case(lambda: torch.ops.aten.add.Scalar(x, 1, 2), 12),
    }


DISPATCH = dispatch_cases()


@pytest.mark.parametrize("case", DISPATCH.values(), ids=DISPATCH.keys())
def test_b7_b8_rules_through_dispatch(case):
    check(case)
