"""Reference suite: pooling (truth.md §1, §5, §6).

The reference enumerates every window by brute force from PyTorch's documented geometry — window
``i`` of an axis starts at ``i·stride − padding`` and reads ``start + j·dilation`` for ``j < kernel``;
an adaptive window reads ``[⌊i·L/O⌋, ⌈(i+1)·L/O⌉)``; a fractional window starts at
``⌊(i + u)·α⌋ − ⌊u·α⌋`` with ``α = (L − k)/(O − 1)`` (the last at ``L − k``) — and keeps only the
in-bound positions: the taps the kernel executes. Before a count is trusted, the same windows
recompute the kernel's output values (means over the taps with PyTorch's divisor, maxima over the
taps), so the enumeration is the kernel's own, not a second copy of the library's arithmetic.

Per-window costs (formulas.md A.5.11 and B.8; training-and-hardware.md 2 for the gradients), for a
window of ``T`` in-bound taps:

* max forward: ``T − 1`` comparisons (0 for a window with no tap: its output is ``-inf``, written
  without comparing); max backward (indices saved): one add of the gradient at the argmax, only for a
  window with a tap (PyTorch drops the others' gradient); recomputed ``max_pool2d_backward``: ``T``;
* average forward: ``T − 1`` adds and one divide = ``T`` (``count_include_pad`` and
  ``divisor_override`` choose the divisor, not the work); backward: one divide per gradient and one
  add per tap = ``T + 1``;
* module formulas: max FLOPs = MACs = the forward comparisons, DMAs = taps + outputs ·
  (1 + [return_indices]); average FLOPs = taps, MACs = ``T − 1 + rank`` per window, DMAs = taps +
  outputs; adaptive the same with its visits.

Every case is compared with the library through real dispatch (``measure_flops``) and through the
public module formulas (``torchscan.modules``), forward and backward.
"""

from __future__ import annotations

import math
import random

import pytest
import torch
from torch import nn

import torchscan
from reference.harness import Library, cases, library_count, seeded
from reference.windows import adaptive_axis, fixed_axis, pooled, taps_per_window, window_mask
from torchscan.formulas.operator_registry import supplemental_formula
from torchscan.modules import module_dmas, module_flops, module_macs

MAX_POOL = {1: nn.MaxPool1d, 2: nn.MaxPool2d, 3: nn.MaxPool3d}
AVG_POOL = {1: nn.AvgPool1d, 2: nn.AvgPool2d, 3: nn.AvgPool3d}
LP_POOL = {1: nn.LPPool1d, 2: nn.LPPool2d, **({3: nn.LPPool3d} if hasattr(nn, "LPPool3d") else {})}
ADAPTIVE = {
    ("avg", 1): nn.AdaptiveAvgPool1d,
    ("avg", 2): nn.AdaptiveAvgPool2d,
    ("avg", 3): nn.AdaptiveAvgPool3d,
    ("max", 1): nn.AdaptiveMaxPool1d,
    ("max", 2): nn.AdaptiveMaxPool2d,
    ("max", 3): nn.AdaptiveMaxPool3d,
}
MAX_LENGTH = {1: 12, 2: 8, 3: 5}  # keeps the dense window masks (outputs × inputs) small


def padded_divisor_axis(length: int, outputs: int, kernel: int, stride: int, padding: int) -> torch.Tensor:
    """PyTorch's ``count_include_pad`` divisor along one axis: the window's positions that lie in the
    padded input ``[−padding, length + padding)`` (ceil-mode positions past it do not count)."""
    return torch.tensor(
        [
            sum(1 for j in range(kernel) if -padding <= i * stride - padding + j < length + padding)
            for i in range(outputs)
        ],
        dtype=torch.float64,
    )


def fractional_axis(length: int, outputs: int, kernel: int, sample: float) -> torch.Tensor:
    """Fractional window ``i`` starts at ``⌊(i + u)·α⌋ − ⌊u·α⌋``, ``α = (L − k)/(O − 1)``, the last at
    ``L − k`` (Graham's pseudo-random sequence as PyTorch draws it; in float32, as the kernel does)."""
    member = torch.zeros(outputs, length, dtype=torch.bool)
    u = torch.tensor(sample, dtype=torch.float32)
    alpha = torch.tensor((length - kernel) / (outputs - 1) if outputs > 1 else 0.0, dtype=torch.float32)
    for i in range(outputs):
        start = length - kernel if i == outputs - 1 else int((i + u) * alpha) - int(u * alpha)
        member[i, start : start + kernel] = True
    return member


# --- expected counts from the windows -------------------------------------------------------------


def expected(kind: str, taps: torch.Tensor, batch: int, rank: int) -> dict[str, int]:
    """Forward/backward operator FLOPs and module FLOPs/MACs/DMAs for ``batch`` copies of the windows
    whose tap counts are ``taps`` (per-window costs in the module docstring)."""
    total, windows = batch * int(taps.sum()), batch * taps.numel()
    nonempty = batch * int((taps > 0).sum())
    dmas = total + windows  # every tap read, every output written
    if kind == "max":
        comparisons = batch * int((taps - 1).clamp(min=0).sum())
        return {
            "forward": comparisons,
            "backward": nonempty,
            "flops": comparisons,
            "macs": comparisons,
            "dmas": dmas,
        }
    macs = total + windows * (rank - 1)
    return {"forward": total, "backward": total + windows, "flops": total, "macs": macs, "dmas": dmas}


def pool_operators(by_operator: dict[str, int]) -> int:
    """FLOPs of the pooling kernels of a report (1-D pooling reaches the 2-D kernels)."""
    return sum(value for name, value in by_operator.items() if "pool" in name)


def forward_and_backward(module: nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, Library, Library]:
    """The module's output and what ``measure_flops`` reports for its forward and, alone, for its
    backward from a given gradient (no loss operator)."""
    leaf = x.detach().requires_grad_(True)
    forward = library_count(lambda: module(leaf))
    assert forward.status == "complete", forward.diagnostics
    result = module(leaf)
    values = result[0] if isinstance(result, tuple) else result
    gradient = torch.ones_like(values)
    backward = library_count(lambda: values.backward(gradient))
    assert backward.status == "complete", backward.diagnostics
    return values.detach(), forward, backward


def check_module_formulas(module: nn.Module, x: torch.Tensor, want: dict[str, int]) -> None:
    with torch.no_grad():
        out = module(x)
    got = {
        "flops": module_flops(module, (x,), out),
        "macs": module_macs(module, x, out[0] if isinstance(out, tuple) else out),
        "dmas": module_dmas(module, x, out[0] if isinstance(out, tuple) else out),
    }
    indices = int(bool(getattr(module, "return_indices", False)))
    values = out[0] if isinstance(out, tuple) else out
    assert got == {**{k: want[k] for k in ("flops", "macs")}, "dmas": want["dmas"] + indices * values.numel()}


# --- fixed windows: max, average, Lp; 1-D/2-D/3-D ---------------------------------------------------


def sizes(rng: random.Random, rank: int, low: int, high: int) -> int | tuple[int, ...]:
    """An int (every axis) or one size per axis."""
    if rng.random() < 0.4:
        return rng.randint(low, high)
    return tuple(rng.randint(low, high) for _ in range(rank))


def expand(value: int | tuple[int, ...], rank: int) -> tuple[int, ...]:
    return (value,) * rank if isinstance(value, int) else value


def draw_fixed(rng: random.Random) -> tuple[str, int, nn.Module, torch.Tensor, dict]:
    """A random fixed-window pooling call PyTorch accepts: kind, rank, module, input, geometry."""
    while True:
        kind = rng.choice(["max", "max", "avg", "avg", "lp"])
        rank = rng.choice([r for r in (1, 2, 3) if kind != "lp" or r in LP_POOL])
        plain = kind == "lp" and rank == 1  # F.lp_pool1d multiplies by the kernel: an int only
        kernel = rng.randint(1, 4) if plain else sizes(rng, rank, 1, 4)
        stride = (rng.randint(1, 4) if plain else sizes(rng, rank, 1, 4)) if rng.random() < 0.7 else None
        padding = tuple(rng.randint(0, k // 2) for k in expand(kernel, rank)) if kind != "lp" else 0
        dilation = sizes(rng, rank, 1, 3) if kind == "max" else 1
        ceil_mode = rng.random() < 0.5
        if kind == "max":
            module: nn.Module = MAX_POOL[rank](
                kernel, stride, padding, dilation, return_indices=rng.random() < 0.3, ceil_mode=ceil_mode
            )
        elif kind == "avg":
            options = {"count_include_pad": rng.random() < 0.5}
            if rank > 1 and rng.random() < 0.2:
                options["divisor_override"] = rng.randint(1, 5)
            module = AVG_POOL[rank](kernel, stride, padding, ceil_mode, **options)
        else:
            module = LP_POOL[rank](rng.choice([1, 2, 3, 1.5]), kernel, stride, ceil_mode)
        lead = [rng.randint(1, 2)] if rng.random() < 0.3 else [rng.randint(0, 2) or 1, rng.randint(1, 2)]
        shape = (*lead, *(rng.randint(1, MAX_LENGTH[rank]) for _ in range(rank)))
        x = torch.rand(shape, generator=seeded(rng)) + 0.1
        try:
            with torch.no_grad():
                module(x)
        except RuntimeError:  # output size below 1, or a window PyTorch refuses: draw again
            continue
        geometry = {
            "kernel": expand(kernel, rank),
            "stride": expand(stride if stride is not None else kernel, rank),
            "padding": expand(padding, rank),
            "dilation": expand(dilation, rank),
        }
        return kind, rank, module, x, geometry


def fixed_windows(rank: int, x: torch.Tensor, out: torch.Tensor, geometry: dict) -> list[torch.Tensor]:
    return [
        fixed_axis(
            x.shape[x.dim() - rank + axis],
            out.shape[out.dim() - rank + axis],
            geometry["kernel"][axis],
            geometry["stride"][axis],
            geometry["padding"][axis],
            geometry["dilation"][axis],
        )
        for axis in range(rank)
    ]


def check_fixed_values(
    kind: str, rank: int, module: nn.Module, x: torch.Tensor, out: torch.Tensor, axes, geometry
):
    """The enumerated windows reproduce the kernel's values: proof that they are the executed ones."""
    mask = window_mask(axes)
    flat = x.reshape(-1, *x.shape[x.dim() - rank :])
    if kind == "max":
        reference = pooled(flat, mask, "max")
    elif kind == "avg":
        divisor = getattr(module, "divisor_override", None)
        if divisor is None and module.count_include_pad:
            per_axis = [
                padded_divisor_axis(
                    flat.shape[1 + axis],
                    mask.shape[axis],
                    geometry["kernel"][axis],
                    geometry["stride"][axis],
                    geometry["padding"][axis],
                ).reshape(*([1] * axis), -1, *([1] * (rank - axis - 1)))
                for axis in range(rank)
            ]
            divisor = math.prod(per_axis)
        reference = pooled(
            flat, mask, "avg", None if divisor is None else torch.as_tensor(divisor, dtype=torch.float64)
        )
    else:  # Lp: PyTorch computes avg_pool(x^p)·K with no padding and count_include_pad, whose divisor
        # is the window's in-input size (a ceil-mode window is clipped): (Σ x^p · K / T)^(1/p)
        p = float(module.norm_type)
        sums = pooled(flat**p, mask, "avg", taps_per_window(mask).double())
        reference = (sums * math.prod(geometry["kernel"])) ** (1 / p)
    torch.testing.assert_close(out.reshape(reference.shape).double(), reference, rtol=1e-4, atol=1e-5)
    return mask


@pytest.mark.parametrize("seed, rng", cases("pooling_fixed"))
def test_fixed_window_pooling_counts_the_executed_taps(seed: int, rng: random.Random) -> None:
    """Max, average and Lp pooling (1-D/2-D/3-D, padding, dilation, ceil mode, ``count_include_pad``,
    divisor override, batched or not): operator FLOPs forward and backward, and the module formulas,
    equal the clamped-window counts."""
    kind, rank, module, x, geometry = draw_fixed(rng)
    out, forward_report, backward_report = forward_and_backward(module, x)
    # Lp pooling is avg_pool of x^p wrapped in element-wise operators: compare its pooling kernels
    forward, backward = (
        (pool_operators(forward_report.by_operator), pool_operators(backward_report.by_operator))
        if kind == "lp"
        else (forward_report.total, backward_report.total)
    )
    axes = fixed_windows(rank, x, out, geometry)
    mask = check_fixed_values(kind, rank, module, x, out, axes, geometry)
    taps = taps_per_window(mask)
    batch = math.prod(x.shape[: x.dim() - rank])
    want = expected("max" if kind == "max" else "avg", taps, batch, rank)
    assert (forward, backward) == (want["forward"], want["backward"])
    if kind != "lp":
        check_module_formulas(module, x, want)
        return
    # LPPool has no module formula: crawl_module estimates it from its operators (real-models.md 1),
    # its avg_pool as the matching AvgPool module (1-D arrives as the 2-D kernel) and the element-wise
    # operators with 0 MACs, so the layer's MACs are the pooling's ``T − 1 + rank`` per window
    layer = torchscan.crawl_module(module, args=(x,))["layers"][0]["metrics"]
    assert layer["macs"]["value"] == want["flops"] + out.numel() * (max(rank, 2) - 1)


# --- adaptive windows -----------------------------------------------------------------------------


@pytest.mark.parametrize("seed, rng", cases("pooling_adaptive"))
def test_adaptive_pooling_counts_the_executed_windows(seed: int, rng: random.Random) -> None:
    """Adaptive average and max pooling, 1-D/2-D/3-D, outputs shorter or longer than the input, ``None``
    sizes: operator FLOPs forward and backward and the module formulas equal the window counts."""
    kind, rank = rng.choice(["avg", "max"]), rng.randint(1, 3)
    lengths = [rng.randint(1, MAX_LENGTH[rank]) for _ in range(rank)]
    output_size = [rng.randint(1, MAX_LENGTH[rank]) if rng.random() < 0.85 else None for _ in range(rank)]
    options = {"return_indices": rng.random() < 0.3} if kind == "max" else {}
    module = ADAPTIVE[kind, rank](output_size if rank > 1 else output_size[0] or lengths[0], **options)
    lead = [rng.randint(1, 3)] if rng.random() < 0.3 else [rng.randint(1, 2), rng.randint(1, 3)]
    x = torch.rand((*lead, *lengths), generator=seeded(rng))
    out, forward_report, backward_report = forward_and_backward(module, x)
    forward, backward = forward_report.total, backward_report.total
    axes = [adaptive_axis(x.shape[x.dim() - rank + a], out.shape[out.dim() - rank + a]) for a in range(rank)]
    mask = window_mask(axes)
    flat = x.reshape(-1, *lengths)
    torch.testing.assert_close(out.reshape(-1, *mask.shape[:rank]).double(), pooled(flat, mask, kind))
    want = expected(kind, taps_per_window(mask), math.prod(lead), rank)
    if kind == "max":  # adaptive windows are never empty: every gradient is added once
        want["backward"] = out.numel()
    elif "aten.mean" in forward_report.by_operator:
        # a 1×…×1 output is dispatched as ``mean`` (``T − 1`` adds and a divide per window, as the
        # kernel), whose gradient is broadcast and divided once per input element: ``T`` per window
        want["backward"] = x.numel()
    assert (forward, backward) == (want["forward"], want["backward"])
    check_module_formulas(module, x, want)


# --- fractional windows ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed, rng", cases("pooling_fractional"))
def test_fractional_max_pooling_windows_lie_inside_the_input(seed: int, rng: random.Random) -> None:
    """Fractional max pooling (2-D/3-D): every window has all ``K`` taps — ``⌊(i+u)α⌋ − ⌊uα⌋ ≤
    ⌊(O−1)α⌋ = L − k`` — so forward ``Nout·(K − 1)`` comparisons and backward ``Nout`` adds; the
    windows are checked against the kernel's values with the same random samples."""
    rank = rng.randint(2, 3)
    kernel = [rng.randint(1, 3) for _ in range(rank)]
    # PyTorch asks ``O + k − 1 ≤ L`` in 2-D and ``O + k − 1 < L`` in 3-D
    slack = rank - 2
    lengths = [rng.randint(k + slack, MAX_LENGTH[rank] + 1) for k in kernel]
    outputs = [rng.randint(1, length - k + 1 - slack) for length, k in zip(lengths, kernel, strict=True)]
    lead = [rng.randint(1, 2), rng.randint(1, 3)]
    x = torch.rand((*lead, *lengths), generator=seeded(rng))
    samples = torch.rand(lead[0], lead[1], rank, generator=seeded(rng), dtype=x.dtype)
    module = (nn.FractionalMaxPool2d if rank == 2 else nn.FractionalMaxPool3d)(
        kernel, output_size=outputs, _random_samples=samples
    )
    out, forward_report, backward_report = forward_and_backward(module, x)
    forward, backward = forward_report.total, backward_report.total
    for b in range(lead[0]):
        for c in range(lead[1]):
            # PyTorch's 2-D kernel takes the width's offset from sample 0 and the height's from 1; the
            # 3-D kernel takes time, height, width in order
            order = [1, 0] if rank == 2 else [0, 1, 2]
            axes = [
                fractional_axis(lengths[a], outputs[a], kernel[a], float(samples[b, c, order[a]]))
                for a in range(rank)
            ]
            mask = window_mask(axes)
            assert bool((taps_per_window(mask) == math.prod(kernel)).all())
            torch.testing.assert_close(out[b, c].double(), pooled(x[b, c].unsqueeze(0), mask, "max")[0])
    windows = out.numel()
    assert (forward, backward) == (windows * (math.prod(kernel) - 1), windows)
    # the module has no formula of its own: crawl_module estimates it from its kernel (real-models.md 1)
    if seed % 10 == 0:
        report = torchscan.crawl_module(module, args=(x,))
        assert report["layers"][0]["metrics"]["module_flops"]["value"] == windows * (math.prod(kernel) - 1)


# --- the figures of issue 39 and the kernels reached only on other devices --------------------------


def _counts(module: nn.Module, x: torch.Tensor) -> tuple[int, int, int, int, int]:
    """Operator forward, operator backward, module FLOPs, MACs, DMAs."""
    out, forward, backward = forward_and_backward(module, x)
    return (
        forward.total,
        backward.total,
        module_flops(module, (x,), out),
        module_macs(module, x, out),
        module_dmas(module, x, out),
    )


def test_a_kernel_reaching_past_the_input_counts_what_a_fitting_kernel_counts() -> None:
    """Issue 39: ``AvgPool2d(640, ceil_mode=True)`` on ``1×8×2×2`` is ``AvgPool2d(2)``: 8 windows of 4
    taps: operator 32 (was 3,276,800 = 8·640²), backward 32 + 8, module FLOPs 32, MACs 32 + 8·(2 − 1)
    = 40 (was 3,276,808), DMAs 32 + 8. Max pooling: 8·3 = 24 comparisons (was 3,276,792), backward 8."""
    x = torch.rand(1, 8, 2, 2)
    assert (
        _counts(nn.AvgPool2d(640, ceil_mode=True), x) == _counts(nn.AvgPool2d(2), x) == (32, 40, 32, 40, 40)
    )
    assert _counts(nn.MaxPool2d(640, ceil_mode=True), x) == _counts(nn.MaxPool2d(2), x) == (24, 8, 24, 24, 40)


@pytest.mark.parametrize("count_include_pad", [False, True])
def test_padding_costs_nothing_whatever_the_divisor(count_include_pad: bool) -> None:
    """Issue 39: ``AvgPool2d(3, stride=1, padding=1)`` on 4×4: windows of 2, 3, 3, 2 taps per axis,
    ``10² = 100`` taps (was 16·9 = 144), with or without ``count_include_pad``; backward 100 + 16;
    MACs 100 + 16·(2 − 1); DMAs 100 + 16."""
    module = nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=count_include_pad)
    assert _counts(module, torch.rand(1, 1, 4, 4)) == (100, 116, 100, 116, 116)


def test_a_dilated_window_on_padding_alone_costs_nothing() -> None:
    """``MaxPool1d(2, stride=1, padding=1, dilation=3)`` on length 2: one window reading −1 and 2,
    both outside: output ``-inf``, no comparison, and its gradient is dropped (no add)."""
    module, x = nn.MaxPool1d(2, stride=1, padding=1, dilation=3), torch.rand(1, 1, 2)
    out, forward, backward = forward_and_backward(module, x)
    assert out.isneginf().all()
    assert (forward.total, backward.total, module_flops(module, (x,), out), module_dmas(module, x, out)) == (
        0,
        0,
        0,
        1,
    )


def test_kernels_of_other_devices_count_the_clamped_windows() -> None:
    """``max_pool2d_backward`` (no saved indices) and the oneDNN kernels have no dense CPU kernel to
    dispatch, so their formulas are called with dense tensors of their arguments' shapes. ``k 3, s 2,
    p 1, ceil`` on 5×5 → 3×3 windows reading {0, 1}, {1, 2, 3}, {3, 4} per axis: 7² = 49 taps and 9
    windows per plane, 2 planes. Forward ``49 − 9`` comparisons; backward with indices 9 adds; the
    recomputing backward finds each argmax again and adds: ``T`` per window, 49."""
    x, out = torch.empty(1, 2, 5, 5), torch.empty(1, 2, 3, 3)
    geometry = ([3, 3], [2, 2], [1, 1], [1, 1], True)
    forward, backward, recomputing = (
        supplemental_formula(f"aten.{name}")
        for name in ("mkldnn_max_pool2d", "mkldnn_max_pool2d_backward", "max_pool2d_backward")
    )
    assert forward is not None and backward is not None and recomputing is not None
    assert forward((x, *geometry), {}, out) == 2 * (49 - 9)
    assert backward((out, out, x, *geometry), {}, x) == 2 * 9
    assert recomputing((out, x, *geometry), {}, x) == 2 * 49


def test_reference_windows_match_the_kernel_on_a_hand_example() -> None:
    """The reference itself, by hand: ``k 3, s 2, p 1`` on length 5 → windows {0, 1}, {1, 2, 3}, {3, 4}."""
    member = fixed_axis(5, 3, 3, 2, 1, 1)
    assert [row.nonzero().flatten().tolist() for row in member] == [[0, 1], [1, 2, 3], [3, 4]]
    assert [row.nonzero().flatten().tolist() for row in adaptive_axis(5, 3)] == [[0, 1], [1, 2, 3], [3, 4]]


def test_the_out_form_of_avg_pool1d_counts_the_clamped_windows() -> None:
    """``avg_pool1d.out`` (its functional overload is decomposed, its ``out=`` form has a kernel):
    ``k 3, s 2, p 1, ceil`` on length 5 → windows {0, 1}, {1, 2, 3}, {3, 4}: 7 taps per plane, 2
    planes (was 3·3 per plane)."""
    x, out = torch.rand(1, 2, 5), torch.empty(1, 2, 3)
    report = library_count(lambda: torch.ops.aten.avg_pool1d.out(x, [3], [2], [1], True, False, out=out))
    assert (report.status, report.total) == ("complete", 2 * 7)
