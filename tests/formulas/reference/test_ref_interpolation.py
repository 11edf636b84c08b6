"""Reference suite: interpolation (truth.md §1, §5): every ``F.interpolate`` mode, 1-D/2-D/3-D,
``align_corners``, scale factors, anti-aliasing, forward and backward.

The reference re-implements each mode from PyTorch's documented coordinate mapping and counts it with
``elementary.py`` (formulas.md A.4 per element), after checking its values against the kernel's (the
output, and the input gradient autograd yields):

* linear family (``linear``, ``bilinear``, ``trilinear``, ``bicubic``): per axis the source coordinate
  ``src = d·(L−1)/(O−1)`` (``align_corners``) or ``(d + ½)·scale − ½`` (clamped at 0 for the linear
  modes), two neighbours with weights ``1 − λ, λ`` or four with Keys' cubic weights (``A = −0.75``,
  indices clamped to the input). Each output is the weighted sum of the ``n`` neighbours of the
  axes' product: ``n`` products and ``n − 1`` adds (the weights depend on indices only and are
  computed outside the count, formulas.md B.8). Backward: each gradient is weighted and added into
  its ``n`` sources: ``2n`` per gradient.
* ``nearest`` / ``nearest-exact``: the output is a gather (0, data movement); backward one add per
  gradient into its source.
* ``area``: adaptive average pooling (its windows enumerated as in the pooling suite): ``T`` per
  window forward, ``T + 1`` backward.
* anti-aliased ``bilinear``/``bicubic``: separable passes, width then height, each skipped when its
  size does not change; output ``i`` of an axis reads the inputs of the filter's support
  ``[⌊c − s + ½⌋, ⌊c + s + ½⌋)`` clipped to the input (``c = scale·(i + ½)``, ``s`` = half the filter
  width times ``max(scale, 1)``), weights normalised to sum 1: ``2·taps − 1`` per output value; the
  backward transposes each pass: ``2·taps`` per gradient value.
"""

from __future__ import annotations

import math
import random

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from reference.elementary import elementary_count
from reference.harness import cases, library_count, seeded
from reference.windows import adaptive_axis, pooled, taps_per_window, window_mask
from torchscan.formulas.operator_registry import supplemental_formula
from torchscan.modules import module_dmas, module_flops, module_macs

RANKS = {
    "nearest": (1, 2, 3),
    "nearest-exact": (1, 2, 3),
    "area": (1, 2, 3),
    "linear": (1,),
    "bilinear": (2,),
    "bicubic": (2,),
    "trilinear": (3,),
}
NEIGHBOURS_PER_AXIS = {"linear": 2, "bilinear": 2, "trilinear": 2, "bicubic": 4}


# --- coordinate mapping (PyTorch's area_pixel_compute_scale / source index) ------------------------


def axis_scale(length: int, outputs: int, align_corners: bool, factor: float | None) -> float:
    """Input units per output unit."""
    if align_corners:
        return (length - 1) / (outputs - 1) if outputs > 1 else 0.0
    return 1.0 / factor if factor is not None and factor > 0 else length / outputs


def linear_axis(length: int, outputs: int, align: bool, factor: float | None) -> tuple[list, list]:
    """Per output: the two source indices and their weights ``(1 − λ, λ)``."""
    scale, indices, weights = axis_scale(length, outputs, align, factor), [], []
    for d in range(outputs):
        src = scale * d if align else max(scale * (d + 0.5) - 0.5, 0.0)
        low = min(int(src), length - 1)
        high = low + (1 if low < length - 1 else 0)
        lam = src - low
        indices.append([low, high])
        weights.append([1.0 - lam, lam])
    return indices, weights


def cubic_axis(length: int, outputs: int, align: bool, factor: float | None) -> tuple[list, list]:
    """Per output: four source indices (clamped) and Keys' cubic weights with ``A = −0.75``."""
    a = -0.75

    def near(x: float) -> float:
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: float) -> float:
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    scale, indices, weights = axis_scale(length, outputs, align, factor), [], []
    for d in range(outputs):
        src = scale * d if align else scale * (d + 0.5) - 0.5
        base = math.floor(src)
        t = src - base
        indices.append([min(max(base - 1 + k, 0), length - 1) for k in range(4)])
        weights.append([far(t + 1), near(t), near(1 - t), far(2 - t)])
    return indices, weights


def nearest_axis(length: int, outputs: int, exact: bool, factor: float | None) -> list[int]:
    scale = axis_scale(length, outputs, False, factor)
    offset = 0.5 if exact else 0.0
    return [min(math.floor((d + offset) * scale), length - 1) for d in range(outputs)]


def aa_axis(
    length: int, outputs: int, mode: str, align: bool, factor: float | None
) -> list[tuple[int, list]]:
    """Per output: the first input of its support and the normalised filter weights over the support."""
    scale = axis_scale(length, outputs, align, factor)
    half = {"bilinear": 1.0, "bicubic": 2.0}[mode]
    support = half * scale if scale >= 1.0 else half
    invscale = 1.0 / scale if scale >= 1.0 else 1.0

    def filter_(x: float) -> float:
        x = abs(x)
        if mode == "bilinear":
            return 1.0 - x if x < 1.0 else 0.0
        a = -0.5  # anti-aliased bicubic uses Keys' A = −0.5
        if x <= 1.0:
            return ((a + 2) * x - (a + 3)) * x * x + 1
        return (((x - 5) * x + 8) * x - 4) * a if x < 2.0 else 0.0

    rows = []
    for i in range(outputs):
        center = scale * (i + 0.5)
        low = max(int(center - support + 0.5), 0)
        size = min(int(center + support + 0.5), length) - low
        w = [filter_((j + low - center + 0.5) * invscale) for j in range(size)]
        total = sum(w)
        rows.append((low, [v / total if total else 0.0 for v in w]))
    return rows


# --- the re-implementations -------------------------------------------------------------------------


def weighted_neighbours(x: torch.Tensor, axes: list[tuple[list, list]]) -> tuple[list, list]:
    """Every neighbour combination of the axes: ``(index vectors per axis, weight tensor over the output)``
    — computed from indices only, before anything is counted."""
    combos = [([], torch.ones((), dtype=x.dtype))]
    for axis, (indices, weights) in enumerate(axes):
        index, weight = torch.tensor(indices), torch.tensor(weights, dtype=x.dtype)
        shape = [1] * len(axes)
        shape[axis] = -1
        combos = [
            ([*idx, index[:, k]], w * weight[:, k].reshape(shape))
            for idx, w in combos
            for k in range(index.shape[1])
        ]
    return [c[0] for c in combos], [c[1] for c in combos]


def gather(x: torch.Tensor, index_per_axis: list[torch.Tensor]) -> torch.Tensor:
    rank = len(index_per_axis)
    for axis, index in enumerate(index_per_axis):
        x = x.index_select(x.dim() - rank + axis, index)
    return x


def linear_forward(x: torch.Tensor, combos: tuple[list, list]) -> torch.Tensor:
    """``Σ_k w_k · x[neighbour k]``: ``n`` products and ``n − 1`` adds per output."""
    result = None
    for index, weight in zip(*combos, strict=True):
        term = gather(x, index) * weight
        result = term if result is None else result + term
    return result


def flat_sources(in_shape: tuple, out_shape: tuple, index_per_axis: list[torch.Tensor]) -> torch.Tensor:
    """The flattened input position each output reads through one neighbour (index arithmetic only,
    computed before anything is counted)."""
    rank = len(in_shape) - 2
    strides = [math.prod(in_shape[2 + a + 1 :]) for a in range(rank)]
    flat = sum(
        i.reshape([-1 if a == axis else 1 for a in range(rank)]) * strides[axis]
        for axis, i in enumerate(index_per_axis)
    )
    return torch.as_tensor(flat).expand(out_shape[2:]).reshape(-1)


def scatter_backward(
    g: torch.Tensor, in_shape: tuple, sources: list[torch.Tensor], weights: list | None
) -> torch.Tensor:
    """Each gradient weighted (when weights are given) and added into its source (``index_add``)."""
    lead = g.shape[:2]
    grad = torch.zeros(*lead, math.prod(in_shape[2:]), dtype=g.dtype)
    for k, flat in enumerate(sources):
        source = g * weights[k] if weights is not None else g
        grad.index_add_(2, flat, source.reshape(*lead, -1))
    return grad.reshape(in_shape)


def aa_pass_forward(x: torch.Tensor, dim: int, rows: list[tuple[int, list]]) -> torch.Tensor:
    """One separable anti-aliased pass along ``dim``: ``Σ_j w_j·x_j`` over each output's support."""
    outs = []
    for low, w in rows:
        window = x.narrow(dim, low, len(w))
        shape = [1] * x.dim()
        shape[dim] = len(w)
        outs.append((window * torch.tensor(w, dtype=x.dtype).reshape(shape)).sum(dim=dim, keepdim=True))
    return torch.cat(outs, dim=dim)


def aa_pass_backward(g: torch.Tensor, dim: int, length: int, rows: list[tuple[int, list]]) -> torch.Tensor:
    """The transposed pass: each gradient value weighted and added into its support."""
    shape = list(g.shape)
    shape[dim] = length
    grad = torch.zeros(shape, dtype=g.dtype)
    for i, (low, w) in enumerate(rows):
        wshape = [1] * g.dim()
        wshape[dim] = len(w)
        grad.narrow(dim, low, len(w)).add_(
            g.narrow(dim, i, 1) * torch.tensor(w, dtype=g.dtype).reshape(wshape)
        )
    return grad


# --- cases ----------------------------------------------------------------------------------------


def draw(rng: random.Random) -> tuple[str, int, dict, torch.Tensor]:
    """A random interpolation call PyTorch accepts (a scale factor that empties an axis is drawn again)."""
    while True:
        mode, rank, options, x = _draw(rng)
        try:
            out = F.interpolate(x, **options)
        except RuntimeError:
            continue
        # PyTorch 2.13–2.15 resample a width-1 input or output wrongly with antialias (a constant
        # along the height), so those values cannot be checked
        if options.get("antialias") and min(x.shape[-1], out.shape[-1]) < 2:
            continue
        return mode, rank, options, x


def _draw(rng: random.Random) -> tuple[str, int, dict, torch.Tensor]:
    mode = rng.choice([*RANKS, "bilinear-aa", "bicubic-aa"])
    antialias = mode.endswith("-aa")
    mode = mode.removesuffix("-aa")
    rank = 2 if antialias else rng.choice(RANKS[mode])
    lengths = [rng.randint(1, 6 if rank < 3 else 4) for _ in range(rank)]
    options: dict = {"mode": mode}
    if rng.random() < 0.5:
        options["size"] = [rng.randint(1, 8 if rank < 3 else 5) for _ in range(rank)]
    else:
        options["scale_factor"] = [rng.choice([0.5, 0.75, 1.0, 1.5, 2.0, 2.5]) for _ in range(rank)]
        options["recompute_scale_factor"] = rng.choice([None, True, False])
    if mode in NEIGHBOURS_PER_AXIS:
        options["align_corners"] = rng.random() < 0.5
    if antialias:
        options["antialias"] = True
    x = torch.randn(
        rng.randint(1, 2), rng.randint(1, 3), *lengths, generator=seeded(rng), dtype=torch.float64
    )
    return mode, rank, options, x


def factors(options: dict, x: torch.Tensor, out: torch.Tensor, rank: int) -> list:
    """The scale factors the kernel receives (``None`` when it computes them from the sizes)."""
    if "scale_factor" in options and not options.get("recompute_scale_factor"):
        return list(options["scale_factor"])
    return [None] * rank


def reference(
    mode: str, rank: int, options: dict, x: torch.Tensor, out: torch.Tensor, g: torch.Tensor
) -> dict:
    """Forward and backward counts and values of the re-implementation (values ``None`` where the
    count comes from enumerated windows instead)."""
    lengths, outputs = list(x.shape[2:]), list(out.shape[2:])
    scales = factors(options, x, out, rank)
    align = options.get("align_corners") or False
    if options.get("antialias"):
        rows = [aa_axis(lengths[a], outputs[a], mode, align, scales[a]) for a in range(rank)]

        def forward() -> torch.Tensor:
            y = aa_pass_forward(x, 3, rows[1]) if lengths[1] != outputs[1] else x
            return aa_pass_forward(y, 2, rows[0]) if lengths[0] != outputs[0] else y

        def backward() -> torch.Tensor:
            grad = aa_pass_backward(g, 2, lengths[0], rows[0]) if lengths[0] != outputs[0] else g
            return aa_pass_backward(grad, 3, lengths[1], rows[1]) if lengths[1] != outputs[1] else grad

    elif mode in NEIGHBOURS_PER_AXIS:
        axis = cubic_axis if mode == "bicubic" else linear_axis
        combos = weighted_neighbours(x, [axis(lengths[a], outputs[a], align, scales[a]) for a in range(rank)])
        sources = [flat_sources(tuple(x.shape), tuple(out.shape), index) for index in combos[0]]

        def forward() -> torch.Tensor:
            return linear_forward(x, combos)

        def backward() -> torch.Tensor:
            return scatter_backward(g, tuple(x.shape), sources, combos[1])

    elif mode.startswith("nearest"):
        index = [
            torch.tensor(nearest_axis(lengths[a], outputs[a], mode == "nearest-exact", scales[a]))
            for a in range(rank)
        ]

        sources = [flat_sources(tuple(x.shape), tuple(out.shape), index)]

        def forward() -> torch.Tensor:
            return gather(x, index)

        def backward() -> torch.Tensor:
            return scatter_backward(g, tuple(x.shape), sources, None)

    else:  # area: adaptive average pooling over enumerated windows
        mask = window_mask([adaptive_axis(lengths[a], outputs[a]) for a in range(rank)])
        taps = math.prod(x.shape[:2]) * int(taps_per_window(mask).sum())
        values = pooled(x.reshape(-1, *lengths), mask, "avg").reshape(out.shape)
        return {
            "forward": taps,
            "backward": taps + out.numel(),
            "out": values,
            "grad": None,
            "products": taps,
        }
    y, forward_count = elementary_count(forward)
    grad, backward_count = elementary_count(backward)
    products = forward_count.by_operator["mul"]
    return {
        "forward": forward_count.flops,
        "backward": backward_count.flops,
        "out": y,
        "grad": grad,
        "products": products,
    }


@pytest.mark.parametrize("seed, rng", cases("interpolation"))
def test_interpolation_counts_the_weighted_neighbours(seed: int, rng: random.Random) -> None:
    """Operator FLOPs forward and backward (real dispatch) and the Upsample module formulas equal the
    re-implementation's count, whose values equal the kernel's."""
    mode, rank, options, x = draw(rng)
    leaf = x.clone().requires_grad_(True)
    out = F.interpolate(leaf, **options)
    g = torch.randn(out.shape, generator=seeded(rng), dtype=x.dtype)
    ref = reference(mode, rank, options, x, out.detach(), g)
    torch.testing.assert_close(out.detach(), ref["out"].reshape(out.shape))
    (grad,) = torch.autograd.grad(F.interpolate(leaf, **options), leaf, g)
    if ref["grad"] is not None:
        torch.testing.assert_close(grad, ref["grad"].reshape(grad.shape))

    forward = library_count(lambda: F.interpolate(leaf, **options))
    result = F.interpolate(leaf, **options)
    backward = library_count(lambda: result.backward(g))
    assert (forward.status, backward.status) == ("complete", "complete")
    want_backward = ref["backward"]
    if "aten.mean" in forward.by_operator:
        # an area resize to 1×…×1 is dispatched as ``mean`` (the same ``T`` per window), whose gradient
        # is broadcast and divided once per input element
        want_backward = x.numel()
    assert (forward.total, backward.total) == (ref["forward"], want_backward), (
        forward.by_operator,
        backward.by_operator,
    )

    if not options.get("antialias"):
        check_module_formulas(mode, rank, options, x, out.detach(), ref)


def check_module_formulas(
    mode: str, rank: int, options: dict, x: torch.Tensor, out: torch.Tensor, ref: dict
) -> None:
    """``nn.Upsample`` (formulas.md A.5.13): FLOPs the forward count; MACs the products (``n`` per
    output; area ``T − 1 + rank`` per window); DMAs ``n`` reads and one write per output (nearest: one
    read and one write; area: the taps and the outputs)."""
    kwargs = {k: v for k, v in options.items() if k in ("size", "mode", "align_corners")}
    if "scale_factor" in options:
        kwargs["scale_factor"] = tuple(options["scale_factor"])  # Upsample takes a tuple, not a list
    if "recompute_scale_factor" in options:
        kwargs["recompute_scale_factor"] = options["recompute_scale_factor"]
    module = nn.Upsample(**kwargs)
    n_out = out.numel()
    if mode.startswith("nearest"):
        want = (0, 0, 2 * n_out)
    elif mode == "area":
        want = (ref["forward"], ref["forward"] + n_out * (rank - 1), ref["forward"] + n_out)
    else:
        n = NEIGHBOURS_PER_AXIS[mode] ** rank
        assert ref["products"] == n * n_out
        want = (ref["forward"], ref["products"], ref["products"] + n_out)
    assert (module_flops(module, (x,), out), module_macs(module, x, out), module_dmas(module, x, out)) == want


def test_lanczos_antialiasing_counts_its_support() -> None:
    """``_upsample_lanczos2d_aa`` (no ``F.interpolate`` mode reaches it; called directly): Lanczos-3
    has a support of 3 input units either side (times the scale when downsampling). 6×6 → 6×3: the
    height is unchanged (no pass); along the width, scale 2, support 6: outputs centred at 1, 3, 5
    read [0, 6) clipped, 6 taps each: per value ``2·6 − 1``, 6·3 values per plane, 2 planes."""
    x = torch.rand(1, 2, 6, 6)
    report = library_count(lambda: torch.ops.aten._upsample_lanczos2d_aa(x, [6, 3], False))
    assert (report.status, report.total) == ("complete", 2 * 6 * 3 * 11)
    formula = supplemental_formula("aten._upsample_lanczos2d_aa_backward")
    assert formula is not None
    assert formula((torch.empty(1, 2, 6, 3), [6, 3], [1, 2, 6, 6], False), {}, None) == 2 * 6 * 3 * 12
