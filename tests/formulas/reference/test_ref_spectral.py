"""Reference checks of the FFT kernels ``_fft_c2c``, ``_fft_r2c`` and ``_fft_c2r`` (truth.md 1, 5).

Every ``torch.fft`` function and ``torch.stft``/``istft`` reach these three kernels (several calls for
``hfftn``/``ihfftn``/``istft``); each randomised case runs one such function, records the kernel calls
PyTorch dispatches, and recomputes each call independently:

* (a) for transformed lengths that are powers of two, a radix-2 Cooley–Tukey FFT re-implemented from
  real element-wise operators on the real and imaginary parts (:func:`radix2`), counted by
  :class:`ElementaryCounter`: each of the ``n/2·log2 n`` butterflies multiplies by a twiddle (4
  multiplies, 1 subtract, 1 add) and adds and subtracts (4): ``5·n·log2 n`` per transform, applied
  along each transformed dim in turn; its result is checked against the kernel's output, which also
  validates the reading of the kernel's ``dim``, ``normalization`` and ``onesided``/``last_dim_size``
  arguments;
* (b) for other lengths, the same closed form ``Σ_d 5·N·log2 n_d`` (the radix-2 count used for every
  length, families.md 2), values checked with a dense DFT.

A real-data transform (``r2c``, ``c2r``) counts half the complex one on its real-side shape, the
benchFFT convention for real-data FFTs (2.5·N·log2 N) that families.md 2 adopts; a normalisation
multiplies each complex output by a real factor (2) or each real output (1). Counts are rounded half
up per kernel call.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from reference.elementary import elementary_count
from reference.harness import cases, library_count, seeded

KERNELS = ("aten._fft_c2c", "aten._fft_r2c", "aten._fft_c2r")


class KernelRecorder(TorchDispatchMode):
    """Records ``(name, args, out)`` of every FFT kernel call (nothing counted)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, tuple, Any]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        out = func(*args, **(kwargs or {}))
        if str(func.overloadpacket) in KERNELS:
            # a copy: callers reshape the result in place (stft's ``transpose_``)
            self.calls.append((str(func.overloadpacket), args, out.detach().clone()))
        return out


def _twiddles(n: int, inverse: bool, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    sign = 1.0 if inverse else -1.0
    angles = [sign * 2 * math.pi * k / n for k in range(n // 2)]
    return (
        torch.tensor([math.cos(a) for a in angles], dtype=dtype),
        torch.tensor([math.sin(a) for a in angles], dtype=dtype),
    )


def radix2(re: torch.Tensor, im: torch.Tensor, inverse: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Unnormalised DFT along the last dim (a power of two) by recursive decimation in time."""
    n = re.shape[-1]
    if n == 1:
        return re, im
    even_re, even_im = radix2(re[..., 0::2], im[..., 0::2], inverse)
    odd_re, odd_im = radix2(re[..., 1::2], im[..., 1::2], inverse)
    wr, wi = _twiddles(n, inverse, re.dtype)
    tr = wr * odd_re - wi * odd_im
    ti = wr * odd_im + wi * odd_re
    return torch.cat([even_re + tr, even_re - tr], -1), torch.cat([even_im + ti, even_im - ti], -1)


def dense_dft(z: torch.Tensor, dim: int, inverse: bool) -> torch.Tensor:
    """Unnormalised DFT along ``dim`` by the definition (values only, for lengths not a power of two)."""
    n = z.shape[dim]
    k = torch.arange(n, dtype=torch.float64)
    matrix = torch.exp((1j if inverse else -1j) * 2 * math.pi * torch.outer(k, k) / n).to(z.dtype)
    return torch.tensordot(z.movedim(dim, -1), matrix, dims=([-1], [0])).movedim(-1, dim)


def power_of_two(n: int) -> bool:
    return n & (n - 1) == 0


def transform(z: torch.Tensor, dims: list[int], inverse: bool) -> tuple[torch.Tensor, float]:
    """The unnormalised complex transform of ``z`` over ``dims`` and its FLOPs: counted on the radix-2
    re-implementation when every length is a power of two, else the closed form ``Σ 5·N·log2 n_d``."""
    if all(power_of_two(int(z.shape[d])) for d in dims):
        re, im = z.real.clone(), z.imag.clone()

        def run() -> tuple[torch.Tensor, torch.Tensor]:
            r, i = re, im
            for d in dims:
                r, i = radix2(r.movedim(d, -1), i.movedim(d, -1), inverse)
                r, i = r.movedim(-1, d), i.movedim(-1, d)
            return r, i

        (r, i), counter = elementary_count(run)
        return torch.complex(r, i), float(counter.flops)
    result = z
    for d in dims:
        result = dense_dft(result, d, inverse)
    total = z.numel()
    return result, math.fsum(5 * total * math.log2(z.shape[d]) for d in dims if z.shape[d] > 1)


def _scale(normalization: int, lengths: list[int]) -> float:
    size = math.prod(lengths)
    return {0: 1.0, 1: 1 / math.sqrt(size), 2: 1 / size}[normalization]


def round_half_up(value: float) -> int:
    return math.floor(value + 0.5)


def reference_call(name: str, args: tuple, out: torch.Tensor) -> int:
    """The FLOPs of one kernel call, after checking the re-implementation's values against ``out``."""
    x, dims, normalization = args[0], [d % args[0].dim() for d in args[1]], int(args[2])
    wide = torch.complex128
    if name == "aten._fft_c2c":
        values, flops = transform(x.to(wide), dims, inverse=not bool(args[3]))
        scale = _scale(normalization, [x.shape[d] for d in dims])
        torch.testing.assert_close(out.to(wide), values * scale, atol=1e-4, rtol=1e-4)
        return round_half_up(flops + (2 * out.numel() if normalization else 0))
    if name == "aten._fft_r2c":
        values, flops = transform(x.to(wide), dims, inverse=False)
        if bool(args[3]):  # onesided: the non-redundant half of the last transformed dim
            values = values.narrow(dims[-1], 0, x.shape[dims[-1]] // 2 + 1)
        scale = _scale(normalization, [x.shape[d] for d in dims])
        torch.testing.assert_close(out.to(wide), values * scale, atol=1e-4, rtol=1e-4)
        return round_half_up(flops / 2 + (2 * out.numel() if normalization else 0))
    # c2r: rebuild the Hermitian spectrum along the last dim, inverse transform, keep the real part
    last, length = dims[-1], int(args[3])
    half = x.to(wide).narrow(last, 0, length // 2 + 1)
    mirror = half.narrow(last, 1, length - length // 2 - 1).flip(last).conj()
    for d in dims[:-1]:  # the conjugate partner of index k is -k on every other transformed dim
        mirror = torch.roll(mirror.flip(d), 1, d)
    full = torch.cat([half, mirror], last)
    values, flops = transform(full, dims, inverse=True)
    scale = _scale(normalization, [out.shape[d] for d in dims])
    torch.testing.assert_close(out.to(torch.float64), values.real * scale, atol=1e-4, rtol=1e-4)
    return round_half_up(flops / 2 + (out.numel() if normalization else 0))


# --- randomised calls of the public API ------------------------------------------------------------

LENGTHS = (1, 2, 2, 4, 4, 8, 8, 16, 3, 5, 6, 12)


def _call(rng: random.Random) -> Callable[[], object]:
    """One ``torch.fft``/``stft`` call on a random tensor, norm, dims and sizes."""
    generator = seeded(rng)
    kind = rng.choice(
        ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn",
         "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "stft", "istft"]
    )  # fmt: skip
    norm = rng.choice([None, "backward", "ortho", "forward"])
    if kind in ("stft", "istft"):
        n_fft = rng.choice([4, 8, 16, 6])
        hop = rng.randint(1, n_fft)
        # istft needs a window whose overlap-add never vanishes: the rectangular one, for any hop
        hann = kind == "stft" and rng.random() < 0.6
        window = (
            torch.hann_window(n_fft, dtype=torch.float64) if hann else torch.ones(n_fft, dtype=torch.float64)
        )
        signal = torch.randn(
            rng.randint(1, 2), rng.randint(n_fft, 40), generator=generator, dtype=torch.float64
        )
        center, onesided, normalized = rng.random() < 0.5, rng.random() < 0.7, rng.random() < 0.3
        options = {"window": window, "center": center, "onesided": onesided, "normalized": normalized}
        spec = torch.stft(signal, n_fft, hop, return_complex=True, **options)
        if kind == "stft":
            return lambda: torch.stft(signal, n_fft, hop, return_complex=True, **options)
        return lambda: torch.istft(spec, n_fft, hop, return_complex=not onesided, **options)

    rank = 1 if kind in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft") else rng.randint(2, 3)
    shape = [rng.choice(LENGTHS) for _ in range(rank + rng.randint(0, 1))]
    complex_input = kind in ("ifft", "irfft", "hfft", "ifft2", "irfft2", "ifftn", "irfftn", "hfftn") or (
        kind in ("fft", "fft2", "fftn") and rng.random() < 0.6
    )
    dtype = rng.choice(
        [torch.complex64, torch.complex128] if complex_input else [torch.float32, torch.float64]
    )
    function = getattr(torch.fft, kind)
    if rank == 1:
        dims = [rng.randrange(len(shape))]
    else:
        dims = sorted(rng.sample(range(len(shape)), min(rank, len(shape))))[: 2 if kind.endswith("2") else 3]
    if kind in ("irfft", "hfft", "irfft2", "irfftn", "hfftn"):  # a real output of 2·(n − 1) points
        shape[dims[-1]] = max(shape[dims[-1]], 2)
    x = torch.randn(shape, generator=generator, dtype=dtype)
    if rank == 1:
        size = rng.choice([None, None, rng.choice(LENGTHS) + 1])
        return lambda: function(x, n=size, dim=dims[0] - len(shape), norm=norm)
    sizes = [rng.choice(LENGTHS) + 1 for _ in dims] if rng.random() < 0.3 else None
    return lambda: function(x, s=sizes, dim=dims, norm=norm)


@pytest.mark.parametrize(("seed", "rng"), cases("fft_kernels"))
def test_fft_kernels_count_the_radix2_convention(seed: int, rng: random.Random) -> None:
    call = _call(rng)
    recorder = KernelRecorder()
    with recorder:
        call()
    assert recorder.calls, "every case reaches at least one FFT kernel"
    expected = sum(reference_call(name, args, out) for name, args, out in recorder.calls)
    counted = library_count(call)
    assert counted.status == "complete", counted.diagnostics
    assert sum(counted.operator(name) for name in KERNELS) == expected, counted.by_operator


def test_radix2_butterflies_cost_five_n_log2_n() -> None:
    """The re-implementation's own count on one transform of 16: 16/2·4 = 32 butterflies of 10 real
    operations = 320 = 5·16·log2 16, and the library's for the same ``torch.fft.fft``."""
    z = torch.randn(16, dtype=torch.complex128)
    _, flops = transform(z, [0], inverse=False)
    assert flops == 320
    assert library_count(lambda: torch.fft.fft(z)).operator("aten._fft_c2c") == 320
