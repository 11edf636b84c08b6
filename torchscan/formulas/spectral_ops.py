"""Operator formulas of the FFT family, fused weight normalisation and ``isin`` (families.md §2).

FFT kernels take and return complex tensors. The complex rule of B.7.2 ("supplemental formulas
cover real arithmetic only") exists because an element-wise formula written for real values
undercounts complex ones; the FFT formulas here are written *for* complex values (``5·n·log2 n``
counts the real additions and multiplies of a complex transform), so they use their own dtype rule,
:func:`spectral`, which always counts. Results are integers, rounded half up where fractional.
"""

from __future__ import annotations

import math

from torchscan.formulas.operator_common import (
    arg,
    elements,
    first_tensor,
    involves_floating,
    round_half_up,
)
from torchscan.formulas.operator_registry import register


def spectral(args: tuple, kwargs: dict, out: object = None) -> bool:
    """Dtype rule of the FFT kernels: always counted (their inputs are floating or complex by schema;
    an integer signal is converted by a dispatched, ignored ``_to_copy`` first)."""
    return True


def _transform(shape: tuple[int, ...], dims: list[int]) -> float:
    """``Σ_d 5·N·log2(n_d)`` for a complex transform of a tensor of ``shape`` over ``dims``."""
    total = math.prod(shape)
    return math.fsum(5 * total * math.log2(shape[d]) for d in dims if shape[d] > 1)


@register("_fft_c2c", rule=spectral)
def fft_c2c(args: tuple, kwargs: dict, out: object) -> int:
    """``_fft_c2c(x, dim, normalization, forward)``: ``Σ_d 5·N·log2(n_d)`` + ``2·N`` when normalised.

    ``N`` = elements of ``x``, ``n_d`` its length on each transformed dim: a length-``n`` complex
    transform costs ``5·n·log2 n`` real FLOPs (the radix-2 count, used for every length, so a
    non-power of two is fractional before rounding), done ``N/n_d`` times per dim. A normalisation
    (``normalization ≠ 0``: by ``1/√n`` or ``1/n``) scales each complex value: 2 real multiplies.
    Direction (``forward``) does not change the count.
    """
    x = args[0]
    normalised = int(arg(args, kwargs, 2, "normalization", 0)) != 0
    flops = _transform(tuple(x.shape), arg(args, kwargs, 1, "dim")) + (2 * elements(x) if normalised else 0)
    return round_half_up(flops)


@register("_fft_r2c", rule=spectral)
def fft_r2c(args: tuple, kwargs: dict, out: object) -> int:
    """``_fft_r2c(x, dim, normalization, onesided)``: half of :func:`fft_c2c` on the real input's shape,
    + ``2·(complex output elements)`` when normalised.

    A real transform of length ``n`` costs half a complex one (the two-for-one real FFT); the scaling
    applies to the complex values produced (one-sided or full, as returned).
    """
    x = args[0]
    normalised = int(arg(args, kwargs, 2, "normalization", 0)) != 0
    flops = _transform(tuple(x.shape), arg(args, kwargs, 1, "dim")) / 2
    return round_half_up(flops + (2 * elements(out) if normalised else 0))


@register("_fft_c2r", rule=spectral)
def fft_c2r(args: tuple, kwargs: dict, out: object) -> int:
    """``_fft_c2r(x, dim, normalization, last_dim_size)``: half of :func:`fft_c2c` on the real output's
    shape, + ``N_out`` when normalised (each real output value is scaled once)."""
    result = first_tensor(out)
    assert result is not None  # the kernel returns its real signal
    normalised = int(arg(args, kwargs, 2, "normalization", 0)) != 0
    flops = _transform(tuple(result.shape), arg(args, kwargs, 1, "dim")) / 2
    return round_half_up(flops + (elements(result) if normalised else 0))


@register("_weight_norm_interface")
def weight_norm_interface(args: tuple, kwargs: dict, out: object) -> int:
    """``_weight_norm_interface(v, g, dim)``: ``3·N(v) + S`` with ``S = v.shape[dim]`` slices.

    Per element of ``v``: a square, an add into its slice's sum, and the multiply scaling it by
    ``g / ‖v‖`` (3); per slice: one square root and one division (``g / ‖v‖``) — counted as one
    FLOP per slice, as the spec's row does. ``dim = −1`` normalises the whole tensor: one slice.
    """
    v = args[0]
    dim = int(arg(args, kwargs, 2, "dim", 0))
    slices = 1 if dim == -1 else int(v.shape[dim])
    return 3 * elements(v) + slices


def _count(value: object) -> int:
    """Elements of a tensor operand; a Scalar operand (``isin.Scalar_Tensor``) is one element."""
    return 1 if first_tensor(value) is None else elements(value)


@register("isin", rule=involves_floating)
def isin(args: tuple, kwargs: dict, out: object) -> int:
    """``isin(elements, test_elements)``: ``N(elements)·N(test_elements)`` comparisons, 0 when both are
    integer or boolean (B.7.1: integer comparisons count nothing).

    The dense convention: each element is compared with every test element; a sorting or hashing
    kernel does fewer comparisons in a way that depends on values, which this count does not credit.
    """
    return _count(arg(args, kwargs, 0, "elements")) * _count(arg(args, kwargs, 1, "test_elements"))
