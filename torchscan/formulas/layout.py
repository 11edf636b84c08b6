"""Identity, Flatten, Unflatten (formulas.md A.5.1), Embedding and layout modules (A.5.13).

A.5.1 is an older family (subclasses accepted, a changed forward is not recognised); A.5.13 needs the
exact native type with an unchanged forward. Layout modules move data: FLOPs and MACs are 0 except
for interpolating upsampling, and their receptive field is not applicable.
"""

from __future__ import annotations

import math
from typing import Any

from torch import Tensor, nn

from torchscan.formulas.native import LAYOUT_REASON, require_exact_native, require_native_forward
from torchscan.formulas.pool_windows import adaptive_visits
from torchscan.formulas.registry import UnsupportedConfiguration, dmas, flops, macs, receptive_field
from torchscan.formulas.tensors import call_tensors, require_dense

# --- Identity, Flatten, Unflatten (A.5.1) ------------------------------------------------------

Modules = tuple[type[nn.Module], ...]
PASS_THROUGH: Modules = (nn.Identity, nn.Flatten, nn.Unflatten)
POINTWISE_RF = (1.0, 1.0, 0.0)


def _pass_through(module: nn.Module, inp: Tensor, out: Tensor) -> None:
    require_native_forward(module, PASS_THROUGH)
    require_dense(inp, out)


@flops.register(*PASS_THROUGH)
def pass_through_flops(module: nn.Module, inputs: tuple[Any, ...], output: Any) -> int:
    """0. Identity and Flatten count 0 whatever the input (complex, sparse or nested included)."""
    require_native_forward(module, PASS_THROUGH)
    if isinstance(module, nn.Unflatten):
        _pass_through(module, *call_tensors(inputs, output))
    return 0


@macs.register(*PASS_THROUGH)
def pass_through_macs(module: nn.Module, inp: Tensor, out: Tensor) -> int:
    """0."""
    _pass_through(module, inp, out)
    return 0


@dmas.register(*PASS_THROUGH)
def pass_through_dmas(module: nn.Module, inp: Tensor, out: Tensor) -> int:
    """Identity ``N``, Flatten ``2N`` (counted as a copy), Unflatten 0 (a metadata-only view)."""
    _pass_through(module, inp, out)
    if isinstance(module, nn.Unflatten):
        return 0
    return inp.numel() * (2 if isinstance(module, nn.Flatten) else 1)


@receptive_field.register(*PASS_THROUGH)
def pass_through_rf(module: nn.Module, inp: Tensor, out: Tensor) -> tuple[float, float, float] | None:
    """``(1, 1, 0)`` for Identity and Flatten; not applicable for Unflatten."""
    _pass_through(module, inp, out)
    return None if isinstance(module, nn.Unflatten) else POINTWISE_RF


# --- Embedding and layout modules (A.5.13) -----------------------------------------------------


def _optional(*names: str) -> Modules:
    """The named ``torch.nn`` classes that the installed PyTorch provides."""
    return tuple(getattr(nn, name) for name in names if hasattr(nn, name))


COPIES: Modules = (
    nn.PixelShuffle,
    nn.PixelUnshuffle,
    nn.ChannelShuffle,
    nn.Unfold,
    nn.ReflectionPad1d,
    nn.ReflectionPad2d,
    nn.ReflectionPad3d,
    nn.ReplicationPad1d,
    nn.ReplicationPad2d,
    nn.ReplicationPad3d,
    *_optional("CircularPad1d", "CircularPad2d", "CircularPad3d"),
)
CONSTANT_PADS: Modules = (
    nn.ConstantPad1d,
    nn.ConstantPad2d,
    nn.ConstantPad3d,
    *_optional("ZeroPad1d", "ZeroPad2d", "ZeroPad3d"),
)
UPSAMPLE: Modules = (nn.Upsample, nn.UpsamplingNearest2d, nn.UpsamplingBilinear2d)
LAYOUT: Modules = (nn.Embedding, *COPIES, *CONSTANT_PADS, *UPSAMPLE)

NEIGHBOURS = {"linear": 2, "bilinear": 4, "trilinear": 8, "bicubic": 16}
NEAREST = ("nearest", "nearest-exact")
LAYOUT_DENSE_REASON = "Layout estimates require dense real tensors."
MODE_REASON = "Unsupported native interpolation mode."
FLOATING_REASON = "Interpolation FLOPs require floating inputs."
MAX_NORM_REASON = "Embedding estimates do not cover in-place weight renormalization."
GEOMETRY_REASON = "Embedding estimates require native weight geometry."


def _kept(module: Any, inp: Tensor) -> int:
    """Input elements left after applying only the negative (cropping) pads of a constant pad."""
    sizes = list(inp.shape)
    padding = module.padding
    for axis in range(len(padding) // 2):
        dim = len(sizes) - 1 - axis
        sizes[dim] = max(0, sizes[dim] + min(0, padding[2 * axis]) + min(0, padding[2 * axis + 1]))
    return math.prod(sizes)


def _layout(module: Any, inp: Tensor, out: Tensor) -> tuple[int, int, int]:
    """Validate the call and return ``(FLOPs, MACs, DMAs)``."""
    require_exact_native(module, LAYOUT, LAYOUT_REASON)
    require_dense(inp, out, reason=LAYOUT_DENSE_REASON)
    n, n_out = inp.numel(), out.numel()
    if isinstance(module, nn.Embedding):
        if module.max_norm is not None:
            raise UnsupportedConfiguration(MAX_NORM_REASON)
        if tuple(module.weight.shape) != (module.num_embeddings, module.embedding_dim):
            raise UnsupportedConfiguration(GEOMETRY_REASON)
        return 0, 0, n + 2 * n_out
    if isinstance(module, CONSTANT_PADS):
        return 0, 0, _kept(module, inp) + n_out
    if isinstance(module, COPIES) or module.mode in NEAREST:
        return 0, 0, 2 * n_out
    if module.mode in NEIGHBOURS:
        k = NEIGHBOURS[module.mode]
        return (2 * k - 1) * n_out, k * n_out, (k + 1) * n_out
    if module.mode == "area":
        rank = inp.dim() - 2
        visits = adaptive_visits(inp.shape, out.shape, rank)
        return visits, visits + n_out * (rank - 1), visits + n_out
    raise UnsupportedConfiguration(MODE_REASON)


@flops.register(*LAYOUT)
def layout_flops(module: nn.Module, inputs: tuple[Any, ...], output: Any) -> int:
    """0, except interpolating upsampling: ``(2n − 1)·Nout`` for ``n`` neighbours, area ``visits``."""
    inp, out = call_tensors(inputs, output)
    count = _layout(module, inp, out)[0]
    interpolating = isinstance(module, UPSAMPLE) and module.mode not in NEAREST
    if interpolating and not inp.dtype.is_floating_point:
        raise UnsupportedConfiguration(FLOATING_REASON)
    return count


@macs.register(*LAYOUT)
def layout_macs(module: nn.Module, inp: Tensor, out: Tensor) -> int:
    """0, except interpolating upsampling: ``n·Nout``, area ``visits + Nout·(rank − 1)``."""
    return _layout(module, inp, out)[1]


@dmas.register(*LAYOUT)
def layout_dmas(module: nn.Module, inp: Tensor, out: Tensor) -> int:
    """Embedding ``N + 2·Nout``; copies ``2·Nout``; constant pads ``Nkept + Nout``; see A.5.13."""
    return _layout(module, inp, out)[2]


@receptive_field.register(*LAYOUT)
def layout_rf(module: nn.Module, inp: Tensor, out: Tensor) -> None:
    """Not applicable: layout modules move elements, they have no spatial window of their own."""
    _layout(module, inp, out)
    return None
