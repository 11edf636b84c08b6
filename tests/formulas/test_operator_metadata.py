"""Operator FLOPs classified by PyTorch's metadata on real workloads (families.md 1, 4; issue #19).

Each test is a regression test for one cause of the issue: nearest resampling decomposed into made-up
arithmetic, upsampling decomposed by Python under ``inference_mode``, in-place and complex views
uncounted, a nested (jagged) tensor raising ``RecursionError``.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from torchscan import crawl_module
from torchscan.measure.flops import measure_flops

METADATA = "Metadata views and allocation have no FLOPs."
MOVE = "Data movement is excluded from FLOPs."
LAYOUT = "Shape FLOP formulas require dense strided tensors; sparse and nested layouts are unsupported."
GRAD_MODES = (torch.no_grad, torch.inference_mode)


def _both_modes(run):
    reports = []
    for mode in GRAD_MODES:
        with mode():
            reports.append(run())
    return reports


def _uncounted(report):
    return [d["operator"] for d in report["diagnostics"] if d["code"] == "uncounted_operator"]


# --- families.md 4: nearest resampling is data movement, never decomposed ----------------------------


def test_nearest_interpolation_is_a_complete_zero_under_both_grad_modes():
    x = torch.rand(1, 4, 8, 8)
    for report in _both_modes(
        lambda: measure_flops(lambda: F.interpolate(x, scale_factor=2, mode="nearest"))
    ):
        assert report["total"]["status"] == "complete" and report["total"]["value"] == 0
        assert report["ignored_operators"] == {"aten.upsample_nearest2d": {"calls": 1, "reason": MOVE}}
        assert report["by_operator"] == {}  # no made-up add/mul of a Python decomposition
        assert report["diagnostics"] == []


def test_bilinear_interpolation_is_identical_under_both_grad_modes():
    x = torch.rand(1, 2, 8, 8)
    graded, inference = _both_modes(
        lambda: measure_flops(lambda: F.interpolate(x, size=(16, 16), mode="bilinear"))
    )
    assert graded["total"] == inference["total"]
    # 2·16·16 = 512 outputs, 7 FLOPs each (4 taps: 4 mul + 3 add) = 3584
    assert graded["total"]["status"] == "complete" and graded["total"]["value"] == 3584
    assert graded["by_operator"] == inference["by_operator"] == {"aten.upsample_bilinear2d": 3584}


_SHAPES = {1: (1, 2, 8), 2: (1, 2, 6, 6), 3: (1, 2, 4, 4, 4)}
_MODES = {
    "nearest": (1, 2, 3),
    "nearest-exact": (1, 2, 3),
    "linear": (1,),
    "bilinear": (2,),
    "bicubic": (2,),
    "trilinear": (3,),
    "area": (1, 2, 3),
}
_ALIGNABLE = ("linear", "bilinear", "bicubic", "trilinear")


def _interpolation_cases():
    for mode, dims in _MODES.items():
        for dim in dims:
            for sizing in ("scale_factor", "size"):
                for align in (False, True) if mode in _ALIGNABLE else (None,):
                    yield pytest.param(mode, dim, sizing, align, id=f"{mode}-{dim}d-{sizing}-align{align}")


@pytest.mark.parametrize(("mode", "dim", "sizing", "align"), list(_interpolation_cases()))
def test_every_interpolation_mode_is_identical_under_both_grad_modes(mode, dim, sizing, align):
    x = torch.rand(*_SHAPES[dim])
    kwargs = (
        {"scale_factor": 2} if sizing == "scale_factor" else {"size": (3 if mode == "area" else 11,) * dim}
    )
    if align is not None:
        kwargs["align_corners"] = align
    graded, inference = _both_modes(lambda: measure_flops(lambda: F.interpolate(x, mode=mode, **kwargs)))
    assert graded["total"] == inference["total"]
    assert graded["total"]["status"] == "complete", graded["diagnostics"]
    # no interpolation mode dispatches a different kernel under inference_mode
    assert graded["by_operator"] == inference["by_operator"]
    assert graded["ignored_operators"] == inference["ignored_operators"]
    if mode.startswith("nearest"):
        assert graded["total"]["value"] == 0 and graded["by_operator"] == {}
    else:
        assert graded["total"]["value"] > 0


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "area"])
def test_upsample_modules_are_identical_under_both_grad_modes_in_crawl_module(mode):
    model = nn.Sequential(nn.Conv2d(2, 2, 1), nn.Upsample(scale_factor=2, mode=mode)).eval()
    x = torch.rand(1, 2, 4, 4)
    graded, inference = _both_modes(lambda: crawl_module(model, args=(x,)))
    assert graded["totals"]["operator_flops"] == inference["totals"]["operator_flops"]
    assert graded["totals"]["operator_flops"]["status"] == "complete"
    for a, b in zip(graded["layers"], inference["layers"], strict=True):
        assert a["metrics"]["operator_flops_self"] == b["metrics"]["operator_flops_self"]


# --- families.md 1 step 2: in-place and complex views are metadata -----------------------------------


@pytest.mark.parametrize(
    ("name", "run"),
    [
        ("aten.unsqueeze_", lambda: torch.rand(3, 4).unsqueeze_(0)),
        ("aten.transpose_", lambda: torch.rand(3, 4).transpose_(0, 1)),
        ("aten.t_", lambda: torch.rand(3, 4).t_()),  # in no table: its inplace_view tag decides
    ],
)
def test_in_place_views_are_metadata_under_both_grad_modes(name, run):
    for report in _both_modes(lambda: measure_flops(run)):
        assert report["total"]["status"] == "complete" and report["total"]["value"] == 0
        assert report["ignored_operators"][name] == {"calls": 1, "reason": METADATA}


def test_view_as_real_is_metadata_not_uncounted():
    # the FFT's own formula is another rule (families.md 2); only the view is asserted here
    report = measure_flops(lambda: torch.view_as_real(torch.fft.fft(torch.rand(8))))
    assert report["ignored_operators"]["aten.view_as_real"] == {"calls": 1, "reason": METADATA}
    assert "aten.view_as_real" not in _uncounted(report)


def test_view_as_complex_is_metadata():
    x = torch.rand(4, 2)
    report = measure_flops(lambda: torch.view_as_complex(x))
    assert report["total"]["status"] == "complete" and report["total"]["value"] == 0
    assert report["ignored_operators"]["aten.view_as_complex"]["reason"] == METADATA


def test_gru_in_place_views_are_classified_under_both_grad_modes():
    # torch 2.13's CPU GRU transposes its hidden state in place (aten.transpose_)
    gru = nn.GRU(4, 3, batch_first=True).eval()
    x = torch.rand(2, 5, 4)
    graded, inference = _both_modes(lambda: measure_flops(lambda: gru(x)))
    assert graded["total"] == inference["total"]
    assert graded["total"]["status"] == "complete", graded["diagnostics"]
    assert _uncounted(graded) == _uncounted(inference) == []


def test_plain_unsafe_index_put_is_ignored_and_accumulation_counts():
    x, index, values = torch.zeros(5), torch.tensor([0, 2]), torch.ones(2)
    plain = measure_flops(lambda: torch.ops.aten._unsafe_index_put(x, [index], values))
    assert plain["total"]["status"] == "complete" and plain["total"]["value"] == 0
    assert "aten._unsafe_index_put" in plain["ignored_operators"]
    accumulating = measure_flops(lambda: torch.ops.aten._unsafe_index_put(x, [index], values, True))
    assert accumulating["total"]["status"] == "complete"
    assert accumulating["by_operator"] == {"aten._unsafe_index_put": 2}  # one add per indexed position


def test_unique_is_selection():
    x = torch.tensor([3.0, 1.0, 3.0])
    report = measure_flops(lambda: torch.unique(x, return_counts=True))
    assert report["total"]["status"] == "complete" and report["total"]["value"] == 0
    assert report["ignored_operators"]["aten._unique2"]["reason"] == (
        "Indexing and selection move data and are excluded from FLOPs."
    )


# --- families.md 4: nested (jagged) tensors never make TorchScan raise -------------------------------


def _jagged():
    return torch.nested.nested_tensor([torch.rand(2, 4), torch.rand(3, 4)], layout=torch.jagged)


def test_linear_on_a_jagged_tensor_is_named_not_raised():
    linear, nt = nn.Linear(4, 3), _jagged()
    expected = linear(nt)  # the kernel itself works
    for mode in (None, *GRAD_MODES):
        if mode is None:
            report = measure_flops(lambda: linear(nt))
        else:
            with mode():
                report = measure_flops(lambda: linear(nt))
        assert report["total"]["status"] == "partial"
        assert [(d["code"], d["operator"], d["message"]) for d in report["diagnostics"]] == [
            ("unsupported_operator_formula", "aten.linear", LAYOUT)
        ]
    assert expected.is_nested


def test_a_kernel_error_on_a_jagged_tensor_reaches_the_caller_unchanged():
    linear, nt = nn.Linear(5, 3), _jagged()  # wrong feature size: the kernel raises
    with pytest.raises(RuntimeError) as bare:
        linear(nt)
    raised = RuntimeError("workload")

    def workload():
        try:
            linear(nt)
        except RuntimeError as error:
            nonlocal raised
            raised = error
            raise

    with pytest.raises(RuntimeError) as observed:
        measure_flops(workload)
    assert observed.value is raised  # the very object the kernel raised
    assert type(observed.value) is type(bare.value) and str(observed.value) == str(bare.value)


def test_crawl_module_on_a_jagged_tensor_is_named_not_raised():
    report = crawl_module(nn.Linear(4, 3), args=(_jagged(),))
    operator_flops = report["totals"]["operator_flops"]
    assert operator_flops["status"] == "partial"
    codes = {(d["code"], d.get("operator")) for d in report["diagnostics"]}
    assert ("unsupported_operator_formula", "aten.linear") in codes
