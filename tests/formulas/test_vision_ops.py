"""torchvision kernels and the grid samplers (families.md §2 and §4), hand-derived numbers.

Every workload is measured under ``enable_grad``, ``no_grad`` and ``inference_mode`` (identical value,
status, per-operator split and diagnostics). torchvision tests skip where torchvision is absent.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from kernel_checks import complete, unsupported
from torch import nn
from torch.nn import functional as F

from torchscan import crawl_module
from torchscan.formulas.functional import TensorMeta, capture, estimate_call
from torchscan.formulas.operators import UnsupportedOperatorFormula, supplemental_formula


@pytest.fixture
def ops():  # type: ignore[no-untyped-def]
    return pytest.importorskip("torchvision").ops


def meta(*shape: int) -> torch.Tensor:
    return torch.empty(*shape, device="meta")


# Four unit boxes far apart: no pair overlaps, so every box is kept (a value-independent output size).
BOXES = torch.tensor([[0.0, 0, 1, 1], [10, 10, 11, 11], [20, 20, 21, 21], [30, 30, 31, 31]])
SCORES = torch.tensor([0.9, 0.8, 0.7, 0.6])


def test_registration_names_torchvision_without_importing_it():
    code = (
        "import sys, torchscan.formulas.operators as o\n"
        "assert 'torchvision' not in sys.modules\n"
        "assert o.supplemental_formula('torchvision.nms') is not None\n"
        "assert o.supplemental_formula('torchvision.roi_align') is not None\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- nms: 3·n + 12·n·(n − 1)/2 ---------------------------------------------------------------------


def test_nms_of_four_boxes_is_84(ops):
    # 3·4 areas + 12 per pair · 6 pairs = 12 + 72
    assert complete(lambda: ops.nms(torch.rand(4, 4), torch.rand(4), 0.5)) == (84, {"torchvision.nms": 84})


@pytest.mark.parametrize(("n", "expected"), [(0, 0), (1, 3), (2, 18), (10, 570)])  # 30 + 12·45
def test_nms_formula_on_meta_boxes(n, expected):
    assert supplemental_formula("torchvision.nms")((meta(n, 4), meta(n), 0.5), {}, None) == expected


def test_batched_nms_counts_its_offsets_and_the_nms(ops):
    # coordinate trick: max over 16 coordinates (16 − 1 = 15), idxs·(max + 1): 1 add + 4 mul,
    # boxes + offsets[:, None]: 16 adds; then nms of 4 boxes: 84
    value, by_operator = complete(lambda: ops.batched_nms(BOXES, SCORES, torch.tensor([0, 1, 0, 1]), 0.5))
    assert by_operator["torchvision.nms"] == 84
    assert value == 84 + 15 + 1 + 4 + 16


# --- roi_align / ps_roi_align: K·C_out·ph·pw·8·s² ---------------------------------------------------


def test_roi_align_with_sampling_ratio_2_is_768(ops):
    # K = 3 boxes, C = 2, 2×2 bins, s = 2: 3·2·2·2·8·4
    boxes = [torch.tensor([[0.0, 0, 4, 4], [1, 1, 5, 5], [2, 2, 7, 7]])]
    value, by_operator = complete(
        lambda: ops.roi_align(torch.rand(1, 2, 8, 8), boxes, output_size=2, sampling_ratio=2)
    )
    assert (value, by_operator["torchvision.roi_align"]) == (768, 768)


def test_roi_align_adaptive_sampling_ratio_is_unsupported_naming_it(ops):
    boxes = [torch.rand(3, 4)]
    message = unsupported(
        lambda: ops.roi_align(torch.rand(1, 2, 8, 8), boxes, output_size=2, sampling_ratio=-1),
        "torchvision.roi_align",
    )
    assert "sampling_ratio" in message


def test_ps_roi_align_reads_one_channel_group_per_bin(ops):
    # C = 8 over 2×2 bins: C_out = 2; K = 3, s = 1: 3·2·2·2·8·1
    value, _ = complete(
        lambda: ops.ps_roi_align(torch.rand(1, 8, 8, 8), [torch.rand(3, 4)], 2, sampling_ratio=1)
    )
    assert value == 192
    message = unsupported(
        lambda: ops.ps_roi_align(torch.rand(1, 8, 8, 8), [torch.rand(3, 4)], 2, sampling_ratio=0),
        "torchvision.ps_roi_align",
    )
    assert "sampling_ratio" in message


@pytest.mark.parametrize("name", ["roi_pool", "ps_roi_pool"])
def test_roi_pool_is_unsupported_naming_the_bin_sizes(ops, name):
    pool = getattr(ops, name)
    message = unsupported(lambda: pool(torch.rand(1, 8, 8, 8), [torch.rand(3, 4)], 2), f"torchvision.{name}")
    assert "bin sizes" in message


# --- deform_conv2d: convolution + N·C_in·kh·kw·H_out·W_out·(7 + m) ----------------------------------


@pytest.mark.parametrize(("with_mask", "sampling"), [(False, 1134), (True, 1296)])
def test_deform_conv2d_adds_the_bilinear_taps_to_the_convolution(ops, with_mask, sampling):
    # input (1, 2, 5, 5), weight (3, 2, 3, 3), output 3×3: convolution 2·1·3·3·3·2·3·3 = 972;
    # taps 1·2·3·3·3·3 = 162 · 7 = 1134 (· 8 = 1296 with the modulation mask)
    x, offset, weight = torch.rand(1, 2, 5, 5), torch.rand(1, 18, 3, 3), torch.rand(3, 2, 3, 3)
    mask = torch.rand(1, 9, 3, 3) if with_mask else None
    conv, _ = complete(lambda: F.conv2d(x, weight))
    assert conv == 972
    value, by_operator = complete(lambda: ops.deform_conv2d(x, offset, weight, mask=mask))
    assert value == by_operator["torchvision.deform_conv2d"] == conv + sampling


def test_deform_conv2d_groups_and_bias_follow_the_convolution(ops):
    # groups 2: weight (4, 1, 3, 3) on input (2, 2, 6, 6) padded 1, stride 2: output 3×3
    # convolution 2·N2·C_out4·9·(C_in/g 1)·9 = 1296 (bias not counted, as aten.convolution);
    # taps 2·2·9·9·7 = 2268
    x, weight, bias = torch.rand(2, 2, 6, 6), torch.rand(4, 1, 3, 3), torch.rand(4)
    offset = torch.rand(2, 18, 3, 3)
    conv, _ = complete(lambda: F.conv2d(x, weight, bias, stride=2, padding=1, groups=2))
    value, _ = complete(lambda: ops.deform_conv2d(x, offset, weight, bias, stride=2, padding=1))
    assert conv == 1296 and value == 1296 + 2268


# --- backward kernels (training a detection head) ------------------------------------------------


def _backward_report(forward):  # type: ignore[no-untyped-def]
    """measure_flops of forward + backward, run under enable_grad (backward needs autograd)."""
    from torchscan import measure_flops

    return measure_flops(lambda: forward().sum().backward())


def test_roi_align_backward_counts_the_forward_taps(ops):
    # grad (3, 2, 2, 2) with s = 2: 24·8·4 = 768, the forward's count
    boxes = [torch.tensor([[0.0, 0, 4, 4], [1, 1, 5, 5], [2, 2, 7, 7]])]
    x = torch.rand(1, 2, 8, 8, requires_grad=True)
    report = _backward_report(lambda: ops.roi_align(x, boxes, output_size=2, sampling_ratio=2))
    assert report["total"]["status"] == "complete", report["diagnostics"]
    assert report["by_operator"]["torchvision._roi_align_backward"] == 768
    assert report["by_phase"]["backward"]["value"] >= 768


def test_roi_align_backward_adaptive_ratio_is_unsupported(ops):
    x = torch.rand(1, 2, 8, 8, requires_grad=True)
    report = _backward_report(lambda: ops.roi_align(x, [torch.rand(3, 4)], output_size=2, sampling_ratio=0))
    codes = {(entry["code"], entry["operator"]) for entry in report["diagnostics"]}
    assert ("unsupported_operator_formula", "torchvision._roi_align_backward") in codes
    assert report["total"]["status"] == "partial"


def test_ps_roi_align_backward_counts_one_channel_group(ops):
    # grad (3, 2, 2, 2), s = 1: 24·8 = 192
    x = torch.rand(1, 8, 8, 8, requires_grad=True)
    report = _backward_report(lambda: ops.ps_roi_align(x, [torch.rand(3, 4)], 2, sampling_ratio=1))
    assert report["by_operator"]["torchvision._ps_roi_align_backward"] == 192


def test_roi_pool_backward_adds_each_gradient_once(ops):
    # the forward stays unsupported (bin sizes); the backward adds K·C·ph·pw = 3·8·2·2 = 96 gradients
    x = torch.rand(1, 8, 8, 8, requires_grad=True)
    report = _backward_report(lambda: ops.roi_pool(x, [torch.rand(3, 4) * 4], 2))
    assert report["by_operator"]["torchvision._roi_pool_backward"] == 96
    operators = {entry["operator"] for entry in report["diagnostics"]}
    assert operators == {"torchvision.roi_pool"}


def test_ps_roi_pool_backward_is_unsupported(ops):
    x = torch.rand(1, 8, 8, 8, requires_grad=True)
    report = _backward_report(lambda: ops.ps_roi_pool(x, [torch.rand(3, 4) * 4], 2))
    operators = {entry["operator"] for entry in report["diagnostics"]}
    assert operators == {"torchvision.ps_roi_pool", "torchvision._ps_roi_pool_backward"}


@pytest.mark.parametrize(("with_mask", "expected"), [(False, 5535), (True, 5859)])
def test_deform_conv2d_backward(ops, with_mask, expected):
    # forward convolution 972 (see above): 2·972 for the column and weight gradients; taps
    # 162·22 = 3564 (162·24 = 3888 with the mask); bias gradient 1·3·3·3 = 27 (torchvision passes a
    # zero bias when none is given)
    x = torch.rand(1, 2, 5, 5, requires_grad=True)
    offset, weight = torch.rand(1, 18, 3, 3), torch.rand(3, 2, 3, 3)
    mask = torch.rand(1, 9, 3, 3) if with_mask else None
    report = _backward_report(lambda: ops.deform_conv2d(x, offset, weight, mask=mask))
    assert report["total"]["status"] == "complete", report["diagnostics"]
    assert report["by_operator"]["torchvision._deform_conv2d_backward"] == expected


def test_rotated_box_iou_is_unsupported_naming_the_polygon(ops):
    boxes = torch.tensor([[1.0, 1, 2, 2, 0], [1, 1, 2, 2, 45]])
    rotated_iou = torch.ops.torchvision.box_iou_rotated
    message = unsupported(lambda: rotated_iou(boxes, boxes), "torchvision.box_iou_rotated")
    assert "polygon" in message


# --- grid samplers ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "expected"),
    # N = 1, C = 2, 3×3 output: 4·9 = 36 coordinate FLOPs + 2·9·t
    [("bilinear", 36 + 18 * 7), ("nearest", 36), ("bicubic", 36 + 18 * 31)],
)
def test_grid_sampler_2d_per_mode(mode, expected):
    x, grid = torch.rand(1, 2, 4, 4), torch.rand(1, 3, 3, 2) * 2 - 1
    value, by_operator = complete(lambda: F.grid_sample(x, grid, mode=mode, align_corners=False))
    assert (value, by_operator) == (expected, {"aten.grid_sampler_2d": expected})


@pytest.mark.parametrize(
    ("mode", "expected"),
    # N = 2, C = 3, 2×3×1 output: 12 locations: 6·12 = 72 + 3·12·t
    [("bilinear", 72 + 36 * 15), ("nearest", 72)],
)
def test_grid_sampler_3d_per_mode(mode, expected):
    x, grid = torch.rand(2, 3, 4, 4, 4), torch.rand(2, 2, 3, 1, 3) * 2 - 1
    value, by_operator = complete(
        lambda: F.grid_sample(x, grid, mode=mode, padding_mode="border", align_corners=False)
    )
    assert (value, by_operator) == (expected, {"aten.grid_sampler_3d": expected})


def test_grid_sampler_kernels_dispatched_elsewhere_share_the_formula():
    x, grid, out = meta(1, 2, 4, 4), meta(1, 3, 3, 2), meta(1, 2, 3, 3)
    assert supplemental_formula("aten._grid_sampler_2d_cpu_fallback")((x, grid, 2, 0, False), {}, out) == 594
    assert supplemental_formula("aten.cudnn_grid_sampler")((x, grid), {}, out) == 162  # bilinear


def test_grid_sampler_unknown_mode_is_unsupported():
    with pytest.raises(UnsupportedOperatorFormula, match="bilinear, nearest and bicubic"):
        supplemental_formula("aten.grid_sampler_3d")(
            (meta(1, 1, 2, 2, 2), meta(1, 1, 1, 1, 3), 2, 0, 0), {}, None
        )


# --- functional (module-formula) convention: MACs 0, DMAs = operands read + outputs written ---------


class Suppress(nn.Module):
    """A leaf without a module formula: its nms is estimated functionally (real-models.md 1 (b))."""

    def forward(self, boxes: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        from torchvision.ops import nms

        return nms(boxes, scores, 0.5)


def _totals(report: dict) -> tuple:
    totals = report["totals"]
    return tuple((totals[k]["status"], totals[k]["value"]) for k in ("module_flops", "macs", "dmas"))


def test_nms_in_a_module_reads_boxes_and_scores(ops):
    # FLOPs 84; DMAs: boxes 16 + scores 4 read, 4 kept indices written
    report = crawl_module(Suppress(), args=(BOXES, SCORES))
    assert _totals(report) == (("complete", 84), ("complete", 0), ("complete", 24))
    assert report["totals"]["operator_flops"]["value"] == 84


def test_roi_align_module_reads_its_features(ops):
    # RoIAlign(2, 1.0, 2): the box list becomes rois (3, 5) by cat([zeros (3, 1), boxes (3, 4)]):
    # a copy, DMAs 3 + 12 read + 15 written = 30 (slice is a view, full_like a creation: 0).
    # roi_align: FLOPs 768; DMAs features 128 + rois 15 read + output 3·2·2·2 = 24 written = 167.
    boxes = [torch.tensor([[0.0, 0, 4, 4], [1, 1, 5, 5], [2, 2, 7, 7]])]
    report = crawl_module(ops.RoIAlign(2, 1.0, 2), args=(torch.rand(1, 2, 8, 8), boxes))
    assert _totals(report) == (("complete", 768), ("complete", 0), ("complete", 30 + 167))


def test_unsupported_roi_align_leaves_module_flops_unestimated(ops):
    report = crawl_module(ops.RoIAlign(2, 1.0, -1), args=(torch.rand(1, 2, 8, 8), [torch.rand(3, 4)]))
    # the only row's FLOPs are unknown (unavailable, not a zero); its MACs are known to be 0
    totals = report["totals"]
    assert (totals["module_flops"]["status"], totals["module_flops"]["value"]) == ("unavailable", None)
    assert (totals["macs"]["status"], totals["macs"]["value"]) == ("complete", 0)
    assert totals["operator_flops"]["status"] == "partial"


def test_grid_sample_in_a_composite_frame():
    # grid_sampler_2d bilinear: FLOPs 162; DMAs input 32 + grid 18 read, output 18 written = 68
    class Warp(nn.Module):
        def forward(self, x: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
            return F.grid_sample(x, grid, align_corners=False)

    report = crawl_module(Warp(), args=(torch.rand(1, 2, 4, 4), torch.rand(1, 3, 3, 2)))
    assert _totals(report) == (("complete", 162), ("complete", 0), ("complete", 68))


def test_unique2_once_ignored_reads_every_operand_element():
    # _unique2(x (6,), sorted, return_inverse, return_counts) -> (values (4,), inverse (6,), counts (4,)):
    # DMAs 6 read + 14 written; not classified yet (uncounted): unestimated, never a zero
    x = torch.tensor([1.0, 2, 2, 3, 4, 4])
    out = torch.ops.aten._unique2(x, True, True, True)
    ignored = capture("aten._unique2", 3, 0, True, True, (x, True, True, True), {}, out)
    assert estimate_call(ignored) == (0, 0, 20)
    uncounted = capture("aten._unique2", 4, 0, False, False, (x, True, True, True), {}, out)
    assert estimate_call(uncounted) == (None, None, None)
    assert TensorMeta((6,), torch.float32).numel() == 6


def test_unique_in_a_module_reads_its_values():
    # torch.unique(x (6,), return_inverse, return_counts) dispatches _unique2, ignored as selection:
    # FLOPs 0, MACs 0, DMAs 6 read + values 4, inverse 6, counts 4 written = 20
    class Unique(nn.Module):
        def forward(self, x: torch.Tensor) -> tuple:
            return torch.unique(x, return_inverse=True, return_counts=True)

    report = crawl_module(Unique(), args=(torch.tensor([1.0, 2, 2, 3, 4, 4]),))
    assert _totals(report) == (("complete", 0), ("complete", 0), ("complete", 20))
