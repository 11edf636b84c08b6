"""The direct equivalents of PyTorch's hot native formulas give PyTorch's own counts, and the observer
only trusts them after checking that on the call at hand."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.flop_counter import FlopCounterMode, flop_registry

from torchscan import measure_flops
from torchscan.analysis import operand_checks
from torchscan.analysis import operator_resolution as resolution
from torchscan.formulas import native_equivalents

aten = torch.ops.aten
dims = st.integers(min_value=0, max_value=9)


def _native(packet: object, *args: object, out: torch.Tensor) -> int:
    return int(flop_registry[packet](*args, out_val=out))


@settings(max_examples=40, deadline=None)
@given(m=dims, k=dims, n=dims, batch=dims)
def test_matrix_products_equal_pytorch(m: int, k: int, n: int, batch: int) -> None:
    a, b, bias = torch.empty(m, k), torch.empty(k, n), torch.empty(n)
    out = torch.empty(m, n)
    assert native_equivalents.mm((a, b), out) == _native(aten.mm, a, b, out=out)
    assert native_equivalents.addmm((bias, a, b), out) == _native(aten.addmm, bias, a, b, out=out)
    ba, bb = torch.empty(batch, m, k), torch.empty(batch, k, n)
    bout = torch.empty(batch, m, n)
    assert native_equivalents.bmm((ba, bb), bout) == _native(aten.bmm, ba, bb, out=bout)
    assert native_equivalents.baddbmm((bout, ba, bb), bout) == _native(aten.baddbmm, bout, ba, bb, out=bout)


@settings(max_examples=40, deadline=None)
@given(
    batch=st.integers(1, 3),
    groups=st.sampled_from([1, 2]),
    channels=st.integers(1, 3),
    kernel=st.integers(1, 3),
    size=st.integers(3, 7),
    stride=st.integers(1, 2),
    transposed=st.booleans(),
    rank=st.sampled_from([1, 2, 3]),
)
def test_convolution_equals_pytorch(
    batch: int, groups: int, channels: int, kernel: int, size: int, stride: int, transposed: bool, rank: int
) -> None:
    c_in, c_out = channels * groups, 2 * groups
    x = torch.randn(batch, c_in, *([size] * rank))
    if transposed:
        w = torch.randn(c_in, c_out // groups, *([kernel] * rank))
    else:
        w = torch.randn(c_out, c_in // groups, *([kernel] * rank))
    args = (x, w, None, [stride] * rank, [0] * rank, [1] * rank, transposed, [0] * rank, groups)
    out = aten.convolution(*args)
    assert native_equivalents.convolution(args, out) == _native(aten.convolution, *args, out=out)


def test_every_equivalent_names_a_pytorch_formula() -> None:
    for name in native_equivalents.EQUIVALENTS:
        packet = getattr(aten, name.removeprefix("aten."))
        assert resolution.is_pytorch_formula(flop_registry[packet])
    assert not resolution.is_pytorch_formula(lambda *a, **k: 0)


def test_a_disagreeing_equivalent_is_dropped_after_its_check() -> None:
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    out = a @ b
    entry = resolution.Entry("aten.mm", resolution.NATIVE, resolution.native_caller(flop_registry[aten.mm]))
    entry.equivalent = lambda args, out: 7  # wrong on purpose
    assert resolution.native_count(entry, entry.formula, (a, b), {}, out) == 120
    assert entry.checked and entry.equivalent is None
    assert resolution.native_count(entry, entry.formula, (a, b), {}, out) == 120


def test_an_agreeing_equivalent_is_trusted_after_its_check() -> None:
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    out = a @ b
    entry = resolution.Entry("aten.mm", resolution.NATIVE, resolution.native_caller(flop_registry[aten.mm]))
    entry.equivalent = native_equivalents.mm
    assert resolution.native_count(entry, entry.formula, (a, b), {}, out) == 120
    assert entry.checked and entry.equivalent is native_equivalents.mm
    bigger = torch.randn(6, 4)
    assert resolution.native_count(entry, entry.formula, (bigger, b), {}, bigger @ b) == 240


def test_measure_flops_matches_flop_counter_mode_on_products_and_convolutions() -> None:
    x = torch.randn(2, 3, 9, 9)
    w = torch.randn(4, 3, 3, 3)
    wt = torch.randn(3, 2, 2, 2)
    a, b = torch.randn(2, 5, 6), torch.randn(2, 6, 7)
    bias, rows, cols = torch.randn(2, 5, 7), torch.randn(3, 6), torch.randn(6, 2)
    lin = torch.nn.Linear(6, 7)

    def workload() -> None:
        for _ in range(2):  # the second calls go through the checked equivalents
            F.conv2d(x, w, stride=2)
            F.conv_transpose2d(x, wt, stride=2)
            torch.bmm(a, b)
            torch.baddbmm(bias, a, b)
            lin(rows)
            torch.mm(rows, cols)

    with FlopCounterMode(display=False) as reference:
        workload()
    report = measure_flops(workload)
    assert report["total"]["status"] == "complete", report["diagnostics"]
    assert report["by_operator"] == {str(k): v for k, v in reference.get_flop_counts()["Global"].items()}


def test_operator_checks_skip_int_lists_but_not_optional_tensor_lists() -> None:
    sparse = torch.eye(3).to_sparse()
    assert operand_checks.any_unsupported_layout(([1, 2, 3], [None, sparse]))
    assert operand_checks.any_unsupported_layout(((sparse,),))
    assert not operand_checks.any_unsupported_layout(([1, 2, 3], [None, torch.eye(3)], []))
    assert operand_checks.any_complex((torch.eye(2), [None, torch.eye(2, dtype=torch.complex64)], None))
    assert not operand_checks.any_complex((torch.eye(2), [3, 4], torch.eye(2)))
