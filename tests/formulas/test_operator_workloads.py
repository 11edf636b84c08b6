"""Operator formulas of functional workloads and scaled dot-product attention (formulas.md C4–C24,
C23, through :mod:`operator_counting`'s dispatch mode).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from operator_counting import COMPLEX, Case, check
from torch import nn
from torch.nn import functional as F


def functional_cases() -> dict[str, Case]:
    inputs, other = torch.ones(2, 3), torch.ones(3)
    left, right, linear = torch.ones(2, 3), torch.ones(3, 4), nn.Linear(4, 2)
    integers = torch.ones(3, dtype=torch.int64)
    grad_left, grad_right = left.clone().requires_grad_(), right.clone().requires_grad_()
    norm_input = torch.ones(2, 3, requires_grad=True)
    float64_buffer, int64_buffer = torch.empty((), dtype=torch.float64), torch.empty((), dtype=torch.int64)
    complex_buffer = torch.empty((), dtype=torch.complex64)
    lin34 = nn.Linear(3, 2)
    lin4, row4 = nn.Linear(4, 4), torch.ones(1, 4)
    single = torch.ones(1, 3)

    def c19() -> object:
        values = F.relu(torch.add(inputs + other, inputs, alpha=2)) * 2
        p = F.softmax(values, dim=-1)
        return p.sum() + p.mean()

    return {
        # C4: addmm 2·1·3·2 = 12 (native), the weight transpose is ignored
        "C4-Linear": Case(lambda: lin34(single), 12, {"aten.addmm": 12}, ignored={"aten.t": 1}),
        # C11: training dropout: div_ 6 + mul 6; bernoulli_ ignored (real-models.md 2.1), empty_like too
        "C11-Dropout": Case(
            lambda: nn.Dropout(0.5).train()(inputs),
            12,
            {"aten.mul": 6, "aten.div_": 6},
            ignored={"aten.empty_like": 1, "aten.bernoulli_": 1},
        ),
        "C11-Dropout-p1": Case(
            lambda: nn.Dropout(1.0).train()(inputs), 6, {"aten.mul": 6}, ignored={"aten.zeros": 1}
        ),
        "C11-Dropout-eval": Case(lambda: nn.Dropout(0.5).eval()(inputs), 0, {}, ignored={}),
        # C14: addmm 2·1·4·4 = 32 + residual add 4
        "C14-residual": Case(lambda: lin4(row4) + row4, 36, {"aten.addmm": 32, "aten.add": 4}),
        # C15: addmm 2·2·4·2 = 32, mm 2·2·3·4 = 48
        "C15": Case(lambda: linear(left @ right), 80, {"aten.addmm": 32, "aten.mm": 48}),
        "C16-atan": Case(lambda: torch.atan(torch.ones(8)), 0, {}, uncounted=("aten.atan",)),
        "C16-atan-mm": Case(lambda: torch.atan(left @ right), 48, {"aten.mm": 48}, uncounted=("aten.atan",)),
        "C16-sin": Case(lambda: torch.sin(torch.ones(8)), 8, {"aten.sin": 8}),
        "C18-view": Case(lambda: inputs.view(3, 2), 0, {}, ignored={"aten.view": 1}),
        # C19: add 6 + scaled add 12 + relu 6 + mul 6 + softmax 2·(5·3 − 2) + sum 5 + mean 6 + add 1
        "C19": Case(
            c19,
            68,
            {
                "aten.add": 19,
                "aten.relu": 6,
                "aten.mul": 6,
                "aten._softmax": 26,
                "aten.sum": 5,
                "aten.mean": 6,
            },
        ),
        # C20: integer and reduction dtypes
        "C20-int-add": Case(lambda: integers + 1, 0, {"aten.add": 0}),
        "C20-int-add-float": Case(lambda: integers + 0.5, 3),
        "C20-int-true-division": Case(lambda: integers / 2, 3),
        "C20-int-exp": Case(lambda: integers.exp(), 3),
        "C20-int-sqrt": Case(lambda: integers.sqrt(), 3),
        "C20-int-rsqrt": Case(lambda: integers.rsqrt(), 3),
        "C20-eq-all": Case(lambda: torch.ones(4).eq(2).all(), 4, {"aten.eq": 4, "aten.all": 0}),
        "C20-int-eq-all-item": Case(
            lambda: torch.arange(4).eq(2).all().item(), 0, {"aten.eq": 0, "aten.all": 0}
        ),
        "C20-sum-float64": Case(lambda: inputs.sum(dim=(0, 1), dtype=torch.float64), 5),
        "C20-mean-float64": Case(lambda: inputs.mean(dim=(0, 1), dtype=torch.float64), 6),
        "C20-sum-int64": Case(lambda: inputs.sum(dim=(0, 1), dtype=torch.int64), 0, {"aten.sum": 0}),
        "C20-sum-complex": Case(
            lambda: inputs.sum(dim=(0, 1), dtype=torch.complex64), 0, unsupported={"aten.sum": COMPLEX}
        ),
        "C20-mean-complex": Case(
            lambda: inputs.mean(dim=(0, 1), dtype=torch.complex64), 0, unsupported={"aten.mean": COMPLEX}
        ),
        "C20-sum-out-float64": Case(lambda: torch.sum(inputs, dim=(0, 1), out=float64_buffer), 5),
        "C20-mean-out-float64": Case(lambda: torch.mean(inputs, dim=(0, 1), out=float64_buffer), 6),
        "C20-sum-out-int64": Case(
            lambda: torch.sum(inputs, dim=(0, 1), out=int64_buffer), 0, {"aten.sum": 0}
        ),
        "C20-sum-out-complex": Case(
            lambda: torch.sum(inputs, dim=(0, 1), out=complex_buffer), 0, unsupported={"aten.sum": COMPLEX}
        ),
        "C20-mean-out-complex": Case(
            lambda: torch.mean(inputs, dim=(0, 1), out=complex_buffer), 0, unsupported={"aten.mean": COMPLEX}
        ),
        # truth.md 3 supersedes C20's rounding example: on the int64 inputs the rounded division has an
        # integer result (0) and the true division 3 -> complete 3; on floating inputs (2, 3) the true
        # division 6 and the rounded one 2·6 (divide, round) -> complete 18
        "C20-rounding": Case(
            lambda: (integers / 2, torch.div(integers, 2, rounding_mode="floor")), 3, {"aten.div": 3}
        ),
        "C20-rounding-floating": Case(
            lambda: (inputs / 2, torch.div(inputs, 2, rounding_mode="floor")), 18, {"aten.div": 18}
        ),
        # C21 amended by truth.md 3: a complex MAC is 4 real ones, mm 4·2·1·2·1 = 16; the complex add
        # counts 2 per element, 2·2 = 4
        "C21-complex": Case(
            lambda: (
                torch.ones(1, 2, dtype=torch.complex64) @ torch.ones(2, 1, dtype=torch.complex64),
                torch.ones(1, 2, dtype=torch.complex64) + torch.ones(1, 2, dtype=torch.complex64),
            ),
            20,
            {"aten.mm": 16, "aten.add": 4},
        ),
        # C24: forward mm 48 + sum of 8 values 7 + two backward mm 96
        "C24-mm-backward": Case(lambda: (grad_left @ grad_right).sum().backward(), 151),
        # C24: layer_norm 6·6 + 2·2 = 40, sum 5; its backward (training-and-hardware.md 2, input
        # gradient only, no affine): x̂ 2·6 + dx 7·6 = 54
        "C24-layer-norm-backward": Case(
            lambda: F.layer_norm(norm_input, (3,)).sum().backward(),
            99,
            {"aten.native_layer_norm": 40, "aten.sum": 5, "aten.native_layer_norm_backward": 54},
        ),
    }


FUNCTIONAL = functional_cases()


@pytest.mark.parametrize("case", FUNCTIONAL.values(), ids=FUNCTIONAL.keys())
def test_c4_to_c24_functional_workloads(case):
    check(case)


def _causal_and_mask() -> Callable[[], object]:
    """SDPA with both is_causal and a mask: through the public function where PyTorch accepts both
    (up to 2.13), else through the CPU kernel itself, which still takes both (2.14 rejects the pair in
    ``F.scaled_dot_product_attention`` but the kernel's formula must still count both terms)."""
    q, kv, mask = torch.ones(2, 2, 3, 2), torch.ones(2, 2, 3, 2), torch.zeros(3, 3)
    try:
        F.scaled_dot_product_attention(q, kv, kv, is_causal=True, attn_mask=mask)
    except RuntimeError:
        kernel = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
        return lambda: kernel(q, kv, kv, 0.0, True, attn_mask=mask)
    return lambda: F.scaled_dot_product_attention(q, kv, kv, is_causal=True, attn_mask=mask)


def attention_cases() -> dict[str, Case]:
    def sdpa(sources: int, **kwargs: object) -> Callable[[], object]:
        q, kv = torch.ones(2, 2, 3, 2), torch.ones(2, 2, sources, 2)
        return lambda: F.scaled_dot_product_attention(q, kv, kv, **kwargs)

    fused = "aten._scaled_dot_product_flash_attention_for_cpu"
    q, k, v = torch.ones(1, 2, 3, 2), torch.ones(1, 2, 5, 2), torch.ones(1, 2, 5, 3)
    return {
        # rows = 2·2·3 = 12, scores = 36: 2·36·(2 + 2) + 36 + (5·36 − 2·12)
        "S3": Case(sdpa(3), 480, {fused: 480}),
        # scores = 60: 2·60·4 + 60 + (300 − 24)
        "S5": Case(sdpa(5), 816, {fused: 816}),
        "S3-float-mask": Case(sdpa(3, attn_mask=torch.zeros(3, 3)), 480 + 36),
        "S5-float-mask": Case(sdpa(5, attn_mask=torch.zeros(3, 5)), 816 + 60),
        # the boolean mask becomes a float mask through where (one selection per stored entry, 3·S)
        "S3-bool-mask": Case(
            sdpa(3, attn_mask=torch.ones(3, 3, dtype=torch.bool)), 480 + 36 + 9, {fused: 516, "aten.where": 9}
        ),
        "S5-bool-mask": Case(sdpa(5, attn_mask=torch.ones(3, 5, dtype=torch.bool)), 816 + 60 + 15),
        # attention-and-scaling.md 1: the causal kernel keeps 3·4/2 = 6 pairs per head, 24 in all over
        # 12 rows: 2·24·4 + 24 + (5·24 − 2·12) = 312; with a mask tensor too, + 24
        "S3-causal": Case(sdpa(3, is_causal=True), 312),
        "S3-causal-and-mask": Case(_causal_and_mask(), 312 + 24),
        "S3-scale": Case(sdpa(3, scale=0.25), 480),
        # math path (value width 3 ≠ 2): Q scale 12 + K scale 20 + bmm 2·2·3·5·2 = 120 + bmm 2·2·3·5·3 = 180
        # + safe softmax (5·30 − 2·6) + 2·30 = 198
        "math-path": Case(
            lambda: F.scaled_dot_product_attention(q, k, v),
            530,
            {"aten.mul": 32, "aten.bmm": 300, "aten._safe_softmax": 198},
        ),
        # explicit graph: bmm 120 + mul 30 + add 30 + softmax 138 + bmm 180
        "explicit-graph": Case(
            lambda: F.softmax(q @ k.transpose(-1, -2) * 0.5 + torch.zeros(3, 5), -1) @ v,
            498,
            {"aten.bmm": 300, "aten.mul": 30, "aten.add": 30, "aten._softmax": 138},
        ),
    }


ATTENTION = attention_cases()


@pytest.mark.parametrize("case", ATTENTION.values(), ids=ATTENTION.keys())
def test_c23_scaled_dot_product_attention(case):
    check(case)
