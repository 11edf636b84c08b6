"""Operator-level formulas of ``torchscan_flops_v1`` (formulas.md B.6–B.9, checked against Part C).

Every hand number is checked by really dispatching the workload through a small test-only
``TorchDispatchMode`` that applies the B.2 precedence (PyTorch's native formula, else ours, else the
ignored table, else "uncounted"). The engine's own concerns (diagnostics, sparse/nested guard,
module attribution) are not modelled here.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry

from torchscan.formulas.operators import (
    IGNORED_OPERATORS,
    SUPPLEMENTAL_FORMULAS,
    UnsupportedOperatorFormula,
    supplemental_formula,
)

COMPLEX = "Supplemental FLOP formulas cover real arithmetic only."
ROUNDED = "Rounded division is not covered by the scalar arithmetic formula."
INTERPOLATION = "Interpolation FLOPs require floating inputs."
SDPA_SHAPES = (
    "CPU attention formula requires matching batches, divisible query/KV heads, Q/K widths, and K/V lengths."
)
FUSED_MHA = "Fused MHA counts require dense batched self-attention with matching widths."


# --- test-only counting engine --------------------------------------------------------------------


@dataclass
class Tally:
    """What the test mode observed: counted sums, ignored/uncounted calls, unsupported reasons."""

    by_operator: Counter[str] = field(default_factory=Counter)
    ignored: Counter[str] = field(default_factory=Counter)
    uncounted: Counter[str] = field(default_factory=Counter)
    unsupported: dict[str, set[str]] = field(default_factory=dict)
    calls: list[tuple[str, tuple, dict, object]] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.by_operator.values())

    @property
    def complete(self) -> bool:
        return not self.uncounted and not self.unsupported


class CountingMode(TorchDispatchMode):
    """Native formula first (B.2), then the supplemental table, then the ignored table."""

    def __init__(self) -> None:
        super().__init__()
        self.tally = Tally()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        packet, name = func.overloadpacket, str(func.overloadpacket)
        self.tally.calls.append((name, args, kwargs, out))
        if packet in flop_registry:
            self.tally.by_operator[name] += flop_registry[packet](*args, **kwargs, out_val=out)
        elif (formula := supplemental_formula(name)) is not None:
            try:
                value = formula(args, kwargs, out)
            except UnsupportedOperatorFormula as exc:
                self.tally.unsupported.setdefault(name, set()).add(str(exc))
                value = 0
            assert type(value) is int, f"{name} returned {type(value).__name__}"
            self.tally.by_operator[name] += value
        elif name in IGNORED_OPERATORS:
            self.tally.ignored[name] += 1
        else:
            self.tally.uncounted[name] += 1
        return out


def count(workload: Callable[[], object]) -> Tally:
    """Run ``workload`` once under :class:`CountingMode`."""
    mode = CountingMode()
    with mode:
        workload()
    return mode.tally


def module_call(factory: Callable[[], nn.Module], *shape: int, dtype: torch.dtype = torch.float32):
    """Workload calling a fresh evaluation-mode module on ``ones(shape)`` built outside the counter."""
    module, inputs = factory().eval(), torch.ones(*shape, dtype=dtype)
    return lambda: module(inputs)


@dataclass(frozen=True)
class Case:
    """One dispatched workload with its hand-derived expectations."""

    workload: Callable[[], object]
    total: int
    by_operator: dict[str, int] | None = None
    uncounted: tuple[str, ...] = ()
    unsupported: dict[str, str] = field(default_factory=dict)
    ignored: dict[str, int] | None = None


def check(case: Case) -> Tally:
    tally = count(case.workload)
    assert tally.total == case.total
    if case.by_operator is not None:
        assert dict(tally.by_operator) == case.by_operator
    assert sorted(tally.uncounted) == sorted(case.uncounted)
    assert {op: reasons for op, reasons in tally.unsupported.items()} == {
        op: {reason} for op, reason in case.unsupported.items()
    }
    if case.ignored is not None:
        assert dict(tally.ignored) == case.ignored
    return tally


# --- B.6 table and the interface --------------------------------------------------------------------


def test_ignored_table_has_the_exact_b6_reasons():
    reasons = Counter(IGNORED_OPERATORS.values())
    assert reasons == {
        "Metadata-only tensor view.": 18,  # B.6's 16 + detach_ and as_strided_ (observed in the zoo)
        # 18 named + 3 reflection + 3 replication + 6 nearest + unsafe_split(_with_sizes) (RNN gate chunks)
        # + training-and-hardware.md 2: 4 view gradients (slice/select/diagonal/unfold_backward) and
        # the optimizers' list copy and fill (_foreach_copy_, _foreach_zero_)
        "Data movement is excluded from FLOPs.": 32 + 4 + 2,
        "Tensor allocation is excluded from FLOPs.": 5,
        # B.6's 13 + creation by position formula (linspace, logspace, eye, tril/triu_indices)
        "Tensor creation is excluded from FLOPs.": 13 + 5,
        # real-models.md 2.1: 22 names + tril_ and triu_ + the order selections sort, argsort, msort,
        # topk (Mixtral's router); 14 names + the out-of-place normal
        "Indexing and selection move data and are excluded from FLOPs.": 28,
        "Random-number generation is excluded from FLOPs.": 15,
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
        assert namespace == "aten"
        assert str(getattr(torch.ops.aten, op)) == name


def test_tables_are_disjoint_and_never_shadow_native_formulas():
    native = {str(packet) for packet in flop_registry}
    assert not set(SUPPLEMENTAL_FORMULAS) & set(IGNORED_OPERATORS)
    assert not set(SUPPLEMENTAL_FORMULAS) & native


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
        ("aten.mm", False),  # native (B.2), never supplemental
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


# --- Part C through dispatch --------------------------------------------------------------------------

ACTIVATIONS = [
    # C9 on (2, 4): N = 8; cost · N (module FLOPs equal Op)
    pytest.param(nn.ReLU, 8, id="ReLU"),  # relu 1·8
    pytest.param(nn.ReLU6, 16, id="ReLU6"),  # hardtanh(0, 6) 2·8
    pytest.param(nn.ELU, 48, id="ELU"),  # elu 6·8
    pytest.param(nn.LeakyReLU, 32, id="LeakyReLU"),  # 4·8
    pytest.param(nn.Sigmoid, 32, id="Sigmoid"),  # 4·8
    pytest.param(nn.Tanh, 48, id="Tanh"),  # 6·8
    pytest.param(nn.Hardtanh, 16, id="Hardtanh"),  # 2·8
    pytest.param(lambda: nn.Threshold(0, 0), 16, id="Threshold"),  # 2·8
    pytest.param(nn.Hardshrink, 24, id="Hardshrink"),  # 3·8
    pytest.param(nn.Softsign, 24, id="Softsign"),  # abs 8 + add 8 + div 8
    pytest.param(nn.Hardsigmoid, 32, id="Hardsigmoid"),  # 4·8
    pytest.param(nn.PReLU, 32, id="PReLU"),  # _prelu_kernel 4·8 (weight view ignored)
    pytest.param(nn.RReLU, 32, id="RReLU"),  # evaluation rrelu_with_noise 4·8 (empty_like ignored)
    pytest.param(nn.Hardswish, 40, id="Hardswish"),  # 5·8
    pytest.param(nn.Softshrink, 40, id="Softshrink"),  # 5·8
    pytest.param(nn.SiLU, 40, id="SiLU"),  # 5·8
    pytest.param(nn.GELU, 40, id="GELU"),  # 5·8
    pytest.param(lambda: nn.GELU("tanh"), 112, id="GELU-tanh"),  # 14·8
    pytest.param(nn.CELU, 56, id="CELU"),  # 7·8
    pytest.param(nn.SELU, 56, id="SELU"),  # elu with scale ≠ 1: (6 + 1)·8
    pytest.param(nn.LogSigmoid, 56, id="LogSigmoid"),  # log_sigmoid_forward 7·8
    pytest.param(nn.Softplus, 56, id="Softplus"),  # 7·8
    pytest.param(nn.Tanhshrink, 56, id="Tanhshrink"),  # tanh 48 + sub 8
    pytest.param(nn.Mish, 80, id="Mish"),  # 10·8
    pytest.param(lambda: nn.GLU(-1), 20, id="GLU"),  # 5 · Nout = 5·4
    # C10 softmax family on (2, 4): R = 2, S = 4
    pytest.param(lambda: nn.Softmax(-1), 36, id="Softmax"),  # 5·8 − 2·2
    pytest.param(lambda: nn.LogSoftmax(-1), 30, id="LogSoftmax"),  # 4·8 − 2
    pytest.param(lambda: nn.Softmin(-1), 44, id="Softmin"),  # neg 8 + softmax 36
]


@pytest.mark.parametrize(("factory", "expected"), ACTIVATIONS)
def test_c9_c10_activations(factory, expected):
    tally = check(Case(module_call(factory, 2, 4), expected))
    assert set(tally.ignored) <= {"aten.view", "aten.empty_like"}
    # C9: an empty batch counts 0, complete
    check(Case(module_call(factory, 0, 4), 0))


NORMALIZATION_AND_POOLING = {
    # C5 BatchNorm1d(3) on (2, 3, 4): N = 24, C = 3
    "C5-eval-affine": Case(module_call(lambda: nn.BatchNorm1d(3), 2, 3, 4), 102),  # 48 + 6 + 48
    "C5-eval-plain": Case(module_call(lambda: nn.BatchNorm1d(3, affine=False), 2, 3, 4), 54),  # 48 + 6
    # C6 LayerNorm((2, 3)) on (2, 2, 2, 3): N = 24, R = 4: 6·24 + 2·4 + 2·24
    "C6-LayerNorm": Case(module_call(lambda: nn.LayerNorm((2, 3)), 2, 2, 2, 3), 200),
    "C6-LayerNorm-plain": Case(
        module_call(lambda: nn.LayerNorm((2, 3), elementwise_affine=False), 2, 2, 2, 3), 152
    ),
    # GroupNorm(3, 6) on (2, 6, 2): N = 24, batch·groups = 6: 144 + 12 + 48
    "C6-GroupNorm": Case(module_call(lambda: nn.GroupNorm(3, 6), 2, 6, 2), 204),
    "C6-GroupNorm-plain": Case(module_call(lambda: nn.GroupNorm(3, 6, affine=False), 2, 6, 2), 156),
    "C6-GroupNorm-empty-batch": Case(module_call(lambda: nn.GroupNorm(2, 4), 0, 4, 3), 0),
    "C6-LayerNorm-empty-row": Case(
        module_call(lambda: nn.LayerNorm(0), 2, 0),
        0,
        unsupported={"aten.native_layer_norm": "LayerNorm FLOPs require a nonempty normalized row."},
    ),
    # C7: MaxPool2d(2) on (1, 2, 8, 8): 32 outputs · (4 − 1)
    "C7-MaxPool2d": Case(module_call(lambda: nn.MaxPool2d(2), 1, 2, 8, 8), 96),
    "C7-AvgPool2d": Case(module_call(lambda: nn.AvgPool2d(2), 1, 2, 8, 8), 128),  # 32 · 4
    # 1-D pooling arrives as the 2-D kernel with kernel [1, 2]: 8 outputs · (2 − 1), 8 · 2
    "C7-MaxPool1d": Case(module_call(lambda: nn.MaxPool1d(2), 1, 2, 8), 8),
    "C7-AvgPool1d": Case(module_call(lambda: nn.AvgPool1d(2), 1, 2, 8), 16),
    # kernel [2] on a 2-D kernel means 2² = 4: 8 outputs · 3
    "C7-MaxPool2d-indices": Case(module_call(lambda: nn.MaxPool2d((2,), return_indices=True), 2, 4, 4), 24),
    # C8: (5 → 3) reads 5 + 3 − 1 = 7, (7 → 2) reads 7 + 2 − 1 = 8: visits 2·56 = 112, Nout 12
    "C8-AdaptiveAvgPool2d": Case(module_call(lambda: nn.AdaptiveAvgPool2d((3, 2)), 1, 2, 5, 7), 112),
    "C8-AdaptiveMaxPool2d": Case(module_call(lambda: nn.AdaptiveMaxPool2d((3, 2)), 1, 2, 5, 7), 100),
    "C8-AdaptiveAvgPool1d": Case(module_call(lambda: nn.AdaptiveAvgPool1d(3), 1, 2, 5), 14),  # 2·(5+3−1)
    # (4 → 2) reads 4 on each axis: visits 2·16 = 32, minus 8 outputs
    "C8-AdaptiveMaxPool2d-indices": Case(
        module_call(lambda: nn.AdaptiveMaxPool2d((2, 2), return_indices=True), 2, 4, 4), 24
    ),
    "C8-empty-batch": Case(module_call(lambda: nn.AdaptiveMaxPool2d((3, 2)), 0, 2, 5, 7), 0),
    "C10-Softmax2d": Case(module_call(nn.Softmax2d, 2, 4, 2, 2), 144),  # N = 32, R = 8: 160 − 16
    # C13: convolution 388,800 (native) + relu 7,200 + max pool 1,800·3
    "C13-Sequential": Case(
        module_call(lambda: nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.MaxPool2d(2)), 1, 3, 32, 32),
        401_400,
        {"aten.convolution": 388_800, "aten.relu": 7_200, "aten.max_pool2d_with_indices": 5_400},
    ),
}


@pytest.mark.parametrize("case", NORMALIZATION_AND_POOLING.values(), ids=NORMALIZATION_AND_POOLING.keys())
def test_c5_to_c8_normalization_and_pooling(case):
    check(case)


def _batch_norm_overloads() -> dict[str, Case]:
    x, mean, var = torch.ones(2, 3, 4), torch.zeros(3), torch.ones(3)
    legit, eval_only = (
        torch.ops.aten._native_batch_norm_legit,
        torch.ops.aten._native_batch_norm_legit_no_training,
    )
    return {
        # N = 24, C = 3, no affine: 2N + 2C = 54; training adds 4N = 96 → 150; buffers add 8C = 24 → 174
        "no_stats-training": Case(lambda: legit.no_stats(x, None, None, True, 0.1, 1e-5), 150),
        "buffers-training": Case(
            lambda: legit(x, None, None, mean.clone(), var.clone(), True, 0.1, 1e-5), 174
        ),
        "no_training": Case(lambda: eval_only(x, None, None, mean, var, 0.1, 1e-5), 54),
        # C5 module states through native_batch_norm: training, tracked, affine 102 + 96 + 24
        "module-training": Case(lambda: nn.BatchNorm1d(3).train()(x), 222),
        # buffers removed: statistics from the batch in both modes: 102 + 96
        "module-no-buffers": Case(lambda: nn.BatchNorm1d(3, track_running_stats=False).eval()(x), 198),
    }


@pytest.mark.parametrize("key", list(_batch_norm_overloads()))
def test_c5_native_batch_norm_overloads(key):
    # the module's own running-buffer update (an int64 counter add) counts 0
    check(_batch_norm_overloads()[key])


def _upsample(mode: str, size: int, *shape: int, dtype: torch.dtype = torch.float32) -> Callable[[], object]:
    return module_call(lambda: nn.Upsample(size=size, mode=mode), *shape, dtype=dtype)


LAYOUT = {
    # C12: zero-FLOP layout work is ignored (complete 0, nothing uncounted)
    "Embedding": Case(module_call(lambda: nn.Embedding(10, 4), 2, 2, dtype=torch.int64), 0, {}),
    "Unflatten": Case(module_call(lambda: nn.Unflatten(1, (2, 2)), 2, 4), 0, {}),
    "PixelShuffle": Case(module_call(lambda: nn.PixelShuffle(2), 1, 4, 2, 2), 0, {}),
    "PixelUnshuffle": Case(module_call(lambda: nn.PixelUnshuffle(2), 1, 1, 4, 4), 0, {}),
    "ChannelShuffle": Case(module_call(lambda: nn.ChannelShuffle(2), 1, 4, 2, 2), 0, {}),
    "Unfold": Case(module_call(lambda: nn.Unfold(2), 1, 1, 3, 3), 0, {}),
    "ConstantPad1d": Case(module_call(lambda: nn.ConstantPad1d(1, 0), 2, 4), 0, {}),
    "ConstantPad1d-crop": Case(module_call(lambda: nn.ConstantPad1d((-1, 0), 0), 2, 4), 0, {}),
    "ConstantPad2d": Case(module_call(lambda: nn.ConstantPad2d((1, 1), 0), 3, 4), 0, {}),
    "ReflectionPad1d": Case(module_call(lambda: nn.ReflectionPad1d(1), 2, 4), 0, {}),
    "ReplicationPad2d": Case(module_call(lambda: nn.ReplicationPad2d(1), 1, 1, 2, 2), 0, {}),
    "CircularPad1d": Case(module_call(lambda: nn.CircularPad1d(1), 2, 4), 0, {}),
    "nearest": Case(module_call(lambda: nn.UpsamplingNearest2d(scale_factor=2), 1, 1, 2, 2), 0, {}),
    "nearest-uint8": Case(
        module_call(lambda: nn.UpsamplingNearest2d(scale_factor=2), 1, 1, 2, 2, dtype=torch.uint8), 0, {}
    ),
    # (2n − 1)·out: linear n = 2 on 6 outputs, bilinear 4 on 16, trilinear 8 on 64, bicubic 16 on 16
    "linear": Case(_upsample("linear", 6, 1, 1, 3), 18),
    "bilinear": Case(module_call(lambda: nn.UpsamplingBilinear2d(size=4), 1, 1, 2, 2), 112),
    "trilinear": Case(_upsample("trilinear", 4, 1, 1, 2, 2, 2), 960),
    "bicubic": Case(_upsample("bicubic", 4, 1, 1, 2, 2), 496),
    "area": Case(_upsample("area", 2, 1, 1, 4, 4), 16),  # adaptive average: 4 + 2 − 2 = 4 per axis
    "bilinear-uint8": Case(
        module_call(lambda: nn.UpsamplingBilinear2d(size=4), 1, 1, 2, 2, dtype=torch.uint8),
        0,
        unsupported={"aten.upsample_bilinear2d": INTERPOLATION},
    ),
    "bicubic-uint8": Case(
        _upsample("bicubic", 4, 1, 1, 2, 2, dtype=torch.uint8),
        0,
        unsupported={"aten.upsample_bicubic2d": INTERPOLATION},
    ),
    "Embedding-max_norm": Case(
        module_call(lambda: nn.Embedding(10, 4, max_norm=1), 2, 2, dtype=torch.int64),
        0,
        uncounted=("aten.embedding_renorm_",),
    ),
}


@pytest.mark.parametrize("case", LAYOUT.values(), ids=LAYOUT.keys())
def test_c12_embedding_and_layout(case):
    check(case)


def _functional_cases() -> dict[str, Case]:
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
        "C20-rounding": Case(
            lambda: (inputs / 2, torch.div(inputs, 2, rounding_mode="floor")),
            6,
            unsupported={"aten.div": ROUNDED},
        ),
        # C21: native mm keeps 2·1·2·1 = 4 (the engine marks it incomplete); complex add is unsupported
        "C21-complex": Case(
            lambda: (
                torch.ones(1, 2, dtype=torch.complex64) @ torch.ones(2, 1, dtype=torch.complex64),
                torch.ones(1, 2, dtype=torch.complex64) + torch.ones(1, 2, dtype=torch.complex64),
            ),
            4,
            unsupported={"aten.add": COMPLEX},
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


FUNCTIONAL = _functional_cases()


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


def _attention_cases() -> dict[str, Case]:
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
        "S3-causal": Case(sdpa(3, is_causal=True), 480 + 36),
        "S3-causal-and-mask": Case(_causal_and_mask(), 480 + 36 + 36),
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


ATTENTION = _attention_cases()


@pytest.mark.parametrize("case", ATTENTION.values(), ids=ATTENTION.keys())
def test_c23_scaled_dot_product_attention(case):
    check(case)


# --- B.9 fused MultiheadAttention and encoder layer ---------------------------------------------------

# B = 2, L = 3, E = 4, H = 2: rows = 12, scores = 36
#   projections 8·2·3·16 = 768, query scale 2·3·4 = 24, products 4·2·9·4 = 288, softmax 5·36 − 24 = 156
MHA_BASE = 768 + 24 + 288 + 156  # 1,236
X = torch.ones(2, 3, 4)


def _mha() -> nn.MultiheadAttention:
    return nn.MultiheadAttention(4, 2, batch_first=True).eval()


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, MHA_BASE + 36),  # averaged weights returned: + scores
        ({"need_weights": False}, MHA_BASE),
        ({"average_attn_weights": False}, MHA_BASE),  # per-head weights: no averaging work
        # padding mask → float mask via masked_fill_ (2·3 = 6, zeros_like ignored), then + scores
        ({"key_padding_mask": torch.zeros(2, 3, dtype=torch.bool)}, 6 + MHA_BASE + 36 + 36),
    ],
)
def test_fused_multi_head_attention(kwargs, expected):
    module = _mha()
    with torch.no_grad():
        tally = count(lambda: module(X, X, X, **kwargs))
    assert tally.complete
    assert tally.total == expected
    fused = expected - 6 if "key_padding_mask" in kwargs else expected
    assert tally.by_operator["aten._native_multi_head_attention"] == fused


def test_fused_mha_reconciles_with_the_unfused_path():
    # With gradients enabled PyTorch runs the same attention op by op; the only extra work it shows
    # is the separate in-projection bias add (B·L·3E = 72), which the closed form omits like addmm.
    module = _mha()
    unfused = count(lambda: module(X, X, X))
    assert "aten._native_multi_head_attention" not in unfused.by_operator
    assert unfused.total == MHA_BASE + 36 + 72


ENCODER_MHA = MHA_BASE  # the encoder layer returns no attention weights
# rows = 6 tokens, F = 6, hidden = 36, Nsrc = 24: 4·36·4 = 576, 18·24 + 4·6 = 456
ENCODER_RELU = ENCODER_MHA + 576 + 36 + 456  # 2,304
ENCODER_GELU = ENCODER_MHA + 576 + 5 * 36 + 456  # 2,448


@pytest.mark.parametrize(
    ("activation", "norm_first", "mask", "expected"),
    [
        ("relu", False, None, ENCODER_RELU),
        ("gelu", False, None, ENCODER_GELU),
        ("relu", True, None, ENCODER_RELU),  # layer order does not change the count
        ("relu", False, torch.zeros(3, 3), ENCODER_RELU + 36),  # a mask adds one add per score
    ],
)
def test_fused_transformer_encoder_layer(activation, norm_first, mask, expected):
    layer = nn.TransformerEncoderLayer(
        4, 2, dim_feedforward=6, batch_first=True, activation=activation, norm_first=norm_first
    ).eval()
    with torch.no_grad():
        tally = count(lambda: layer(X, src_mask=mask))
    assert tally.complete
    assert tally.by_operator == {"aten._transformer_encoder_layer_fwd": expected}


def test_fused_encoder_layer_reconciles_with_the_unfused_path():
    # Unfused: in-projection bias add 72 more, and SDPA scales the 36 scores instead of the
    # 24 query values (+12); everything else (products, softmax, norms, residuals, FFN) matches.
    layer = nn.TransformerEncoderLayer(4, 2, dim_feedforward=6, batch_first=True).eval()
    unfused = count(lambda: layer(X))
    assert "aten._transformer_encoder_layer_fwd" not in unfused.by_operator
    assert unfused.complete
    assert unfused.total == ENCODER_RELU + 72 + 12


# --- direct formula calls: meta tensors, reasons, dtype rules -------------------------------------


def meta(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.empty(*shape, dtype=dtype, device="meta")


def formula(name: str) -> Callable[[tuple, dict, object], int]:
    found = supplemental_formula(name)
    assert found is not None
    return found


SDPA = "_scaled_dot_product_flash_attention_for_cpu"
GROUPED_MM = "Grouped matmul counts cover packed rows and equal-width expert matrices only."
EMPTY_BATCH_NORM = "Empty native BatchNorm work depends on strides unavailable to the shape formula."


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
            "CPU attention formula does not cover dropout.",
        ),
        ("_native_batch_norm_legit", (meta(0, 3, 4), None, None, True, 0.1, 1e-5), {}, EMPTY_BATCH_NORM),
        ("native_batch_norm", (meta(2, 3, 0), None, None, None, None, True, 0.1, 1e-5), {}, EMPTY_BATCH_NORM),
        ("_native_multi_head_attention", qkv((2, 3, 4), (2, 5, 4), (2, 5, 4), 4, 2), {}, FUSED_MHA),
        ("_native_multi_head_attention", qkv((2, 3, 4), (2, 3, 4), (2, 3, 4), 8, 2), {}, FUSED_MHA),
        ("_native_multi_head_attention", qkv((3, 4), (3, 4), (3, 4), 4, 2), {}, FUSED_MHA),
        ("_transformer_encoder_layer_fwd", (meta(2, 3, 4), 8, 2), {}, FUSED_MHA),
        ("_grouped_mm", (meta(6, 8), meta(3, 4, 5)), {}, GROUPED_MM),
        ("_grouped_mm", (meta(2, 6, 8), meta(2, 8, 5)), {}, GROUPED_MM),
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
        ("add", (meta(2, dtype=torch.complex64), 1), {}, COMPLEX),
        ("add", (meta(2), 1j), {}, COMPLEX),  # a complex Python scalar
        ("exp", (meta(2, dtype=torch.complex64),), {}, COMPLEX),
        ("cumsum", (meta(2), 0), {"dtype": torch.complex128}, COMPLEX),  # a complex dtype argument
        ("masked_fill", (meta(2, dtype=torch.complex64), meta(2, dtype=torch.bool), 0.0), {}, COMPLEX),
        ("div", (meta(2), 2), {"rounding_mode": "trunc"}, ROUNDED),
    ],
)
def test_unsupported_reasons(name, args, kwargs, reason):
    with pytest.raises(UnsupportedOperatorFormula) as info:
        formula(f"aten.{name}")(args, kwargs, meta(2))
    assert str(info.value) == reason


def _dispatch_cases() -> dict[str, Case]:
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
        "in-place-rounding": Case(
            lambda: x.clone().div_(2, rounding_mode="floor"), 0, unsupported={"aten.div_": ROUNDED}
        ),
        "int-rounding": Case(lambda: torch.div(integers, 2, rounding_mode="floor"), 0, {"aten.div": 0}),
        "int-mul-float-scalar": Case(lambda: integers * 0.5, 6),  # a Python float involves floating values
        "bool-compare": Case(lambda: mask == mask, 0, {"aten.eq": 0}),
        "sub-alpha": Case(lambda: torch.sub(x, x, alpha=3), 12),
        "add-scalar-overload": Case(lambda: torch.ops.aten.add.Scalar(x, 1, 2), 12),
    }


DISPATCH = _dispatch_cases()


@pytest.mark.parametrize("case", DISPATCH.values(), ids=DISPATCH.keys())
def test_b7_b8_rules_through_dispatch(case):
    check(case)


# --- purity: formulas read metadata only and dispatch nothing ------------------------------------------


class _NoDispatch(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        raise AssertionError(f"a formula dispatched {func}")


def test_formulas_dispatch_nothing():
    recorded: list[tuple[str, tuple, dict, object]] = []
    groups = (FUNCTIONAL, DISPATCH, ATTENTION, LAYOUT, NORMALIZATION_AND_POOLING)
    workloads = [case.workload for group in groups for case in group.values()]
    workloads += [module_call(factory, 2, 4) for factory, _ in (param.values for param in ACTIVATIONS)]
    for workload in workloads:
        recorded += [call for call in count(workload).calls if call[0] in SUPPLEMENTAL_FORMULAS]
    assert len({name for name, *_ in recorded}) > 60
    with _NoDispatch():
        for name, args, kwargs, out in recorded:
            try:
                SUPPLEMENTAL_FORMULAS[name](args, kwargs, out)
            except UnsupportedOperatorFormula:
                pass


def test_workloads_on_meta_match_cpu():
    def graph(device: str) -> Callable[[], object]:
        x = torch.ones(2, 4, 3, device=device)
        norm = nn.LayerNorm(3, device=device)
        return lambda: F.gelu(F.softmax(norm(x), -1) * 2 + x).mean(dim=-1).clamp(min=0).sum()

    cpu, on_meta = count(graph("cpu")), count(graph("meta"))
    # layer_norm 6·24 + 2·8 + 2·24 = 208, softmax 5·24 − 16 = 104, mul 24, add 24, gelu 5·24 = 120,
    # mean (24 − 8) + 8 = 24, clamp 8, sum 7
    assert cpu.total == on_meta.total == 208 + 104 + 24 + 24 + 120 + 24 + 8 + 7
    assert cpu.by_operator == on_meta.by_operator
