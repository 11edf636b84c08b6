"""Reference checks of the dense linear-algebra kernels (truth.md 1 and 5).

The library counts each kernel with the operation counts of the LAPACK routine PyTorch calls. Here
each routine is re-implemented from element-wise operators and batched matrix products, following the
reference LAPACK algorithm step by step, and counted by :class:`ElementaryCounter` (products at
``2·MACs``, as BLAS-2/3 counts them). As in LAPACK Working Note 41, a sign flip (``neg``,
``copysign``) is not an operation. Every re-implementation's result is checked against PyTorch's
before its count is compared with the library's, through real dispatch:

* ``getrf`` (``linalg_lu_factor_ex``, ``linalg_lu``): per column ``j`` of ``k = min(m, n)``, with the
  pivots PyTorch chose (the search and the swaps move data), where rows lie below the pivot: its
  reciprocal, the ``m − j − 1`` multipliers and the rank-1 update of the trailing block (a multiply
  and a subtract per entry). ``dgetf2`` scales a column only ``IF( J.LT.M )``: the last pivot of a
  square (or wide) matrix needs no reciprocal;
* ``potrf`` (``linalg_cholesky_ex``): per column the dot of the row so far subtracted from the
  diagonal, its root, then the column below (a matrix-vector product subtracted) divided by it;
* ``trsm`` (triangular solves), ``getrs`` (``linalg_lu_solve``: permutation, unit-lower then upper
  substitution), ``potrs`` (``cholesky_solve``), ``potri`` (``cholesky_inverse``: the triangular inverse
  ``dtrti2`` and the product ``dlauu2``), ``geqrf`` (``dgeqr2``: per column the reflector ``dlarfg`` —
  norm, ``β``, ``τ``, scaling; a reflector of length 1 is the identity and computes nothing — and its
  application ``dlarf``: ``w = Cᵀv``, ``C −= v·(τw)ᵀ``);
* the compositions PyTorch runs (read from the profiler's nested operators): ``linalg_solve`` = LU +
  ``getrs``, ``linalg_inv`` = ``linalg_solve(A, I)``, ``linalg_det`` = LU, the product of ``U``'s
  diagonal and one multiply by the permutation's sign, ``linalg_slogdet`` = LU, ``sgn``, product and
  sign multiply of the diagonal for the sign, ``abs``, ``log`` and sum for ``logabsdet``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
import torch

from reference.elementary import elementary_count
from reference.harness import cases, library_count, seeded

SIGN_FLIPS = frozenset(("neg", "copysign"))


def _swap_rows(a: torch.Tensor, j: int, pivot: torch.Tensor) -> None:
    """Swap row ``j`` with row ``pivot[b]`` in every batch matrix (data movement)."""
    batch = torch.arange(a.shape[0])
    row = a[:, j].clone()
    a[:, j] = a[batch, pivot]
    a[batch, pivot] = row


def lu(a: torch.Tensor, pivots: torch.Tensor) -> torch.Tensor:
    """``getrf`` with the given 0-based pivots (``(B, k)``); returns the packed LU."""
    a = a.clone()
    rows, cols = a.shape[-2:]
    for j in range(min(rows, cols)):
        _swap_rows(a, j, pivots[:, j])
        if j < rows - 1:
            column = a[:, j + 1 :, j] * torch.reciprocal(a[:, j, j]).unsqueeze(-1)
            a[:, j + 1 :, j] = column
            if j < cols - 1:
                a[:, j + 1 :, j + 1 :] = a[:, j + 1 :, j + 1 :] - column.unsqueeze(-1) * a[
                    :, j, j + 1 :
                ].unsqueeze(-2)
    return a


def cholesky(a: torch.Tensor) -> torch.Tensor:
    """``potrf`` (lower), left-looking as ``dpotf2``."""
    n = a.shape[-1]
    factor = torch.zeros_like(a)
    for j in range(n):
        diagonal = a[:, j, j]
        if j:
            diagonal = diagonal - (factor[:, j, :j] * factor[:, j, :j]).sum(-1)
        root = torch.sqrt(diagonal)
        factor[:, j, j] = root
        if j < n - 1:
            column = a[:, j + 1 :, j]
            if j:
                column = column - (factor[:, j + 1 :, :j] * factor[:, j, :j].unsqueeze(-2)).sum(-1)
            factor[:, j + 1 :, j] = column / root.unsqueeze(-1)
    return factor


def lower_solve(factor: torch.Tensor, b: torch.Tensor, unit: bool) -> torch.Tensor:
    """``trsm``: ``factor⁻¹ b`` by forward substitution.

    ``factor`` is lower ``(B, n, n)``, ``b`` ``(B, n, k)``.
    """
    n = factor.shape[-1]
    x = torch.zeros_like(b)
    for i in range(n):
        value = b[:, i]
        if i:
            value = value - (factor[:, i, :i].unsqueeze(-1) * x[:, :i]).sum(-2)
        x[:, i] = value if unit else value / factor[:, i, i].unsqueeze(-1)
    return x


def flipped(t: torch.Tensor) -> torch.Tensor:
    """Reverse both matrix axes: an upper triangular system becomes a lower one (a view)."""
    return t.flip(-1).flip(-2)


def triangular_solve(a: torch.Tensor, b: torch.Tensor, upper: bool, unit: bool, left: bool) -> torch.Tensor:
    """``A X = B`` (``left``) or ``X A = B``, ``A`` triangular; other layouts by transposition."""
    if not left:
        return triangular_solve(a.mT, b.mT, not upper, unit, True).mT
    if upper:
        return lower_solve(flipped(a), b.flip(-2), unit).flip(-2)
    return lower_solve(a, b, unit)


def lu_solve(
    packed: torch.Tensor, pivots: torch.Tensor, b: torch.Tensor, left: bool, adjoint: bool
) -> torch.Tensor:
    """``getrs``: ``P L U X = B`` and its variants.

    ``adjoint``: ``(PLU)ᵀ X = B``; ``left=False``: ``X A = B``.
    """
    if not left:  # X A = B  <=>  Aᵀ Xᵀ = Bᵀ
        return lu_solve(packed, pivots, b.mT, True, not adjoint).mT
    # the substitutions read only their triangle (and the diagonal unless unit): the packed factors
    lower = upper = packed
    n = packed.shape[-1]
    order = torch.arange(n).repeat(packed.shape[0], 1)
    for j in range(n):  # the permutation P of the sequential row swaps
        batch = torch.arange(packed.shape[0])
        row = order[:, j].clone()
        order[:, j] = order[batch, pivots[:, j]]
        order[batch, pivots[:, j]] = row
    if not adjoint:  # P L U x = b: x = U⁻¹ L⁻¹ Pᵀ b
        permuted = torch.gather(b, 1, order.unsqueeze(-1).expand_as(b))
        y = triangular_solve(lower, permuted, upper=False, unit=True, left=True)
        return triangular_solve(upper, y, upper=True, unit=False, left=True)
    y = triangular_solve(upper.mT, b, upper=False, unit=False, left=True)  # Uᵀ Lᵀ Pᵀ x = b
    z = triangular_solve(lower.mT, y, upper=True, unit=True, left=True)
    return torch.zeros_like(z).scatter(1, order.unsqueeze(-1).expand_as(z), z)


def triangular_inverse(factor: torch.Tensor) -> torch.Tensor:
    """``dtrti2`` (lower, non-unit): ``X = L⁻¹`` with ``X_jj = 1/L_jj`` and, below, ``X_ij =
    −X_ii · Σ_{j ≤ k < i} L_ik X_kj`` (the sign flip of ``−X_ii`` is free)."""
    n = factor.shape[-1]
    x = torch.zeros_like(factor)
    inverse = torch.reciprocal(torch.diagonal(factor, dim1=-2, dim2=-1))
    negative = -inverse
    for i in range(n):
        x[:, i, i] = inverse[:, i]
        for j in range(i):
            terms = factor[:, i, j:i] * x[:, j:i, j]
            x[:, i, j] = terms.sum(-1) * negative[:, i]
    return x


def lower_gram(x: torch.Tensor) -> torch.Tensor:
    """``dlauu2`` (lower): ``XᵀX`` entry by entry over the lower triangle, ``Σ_{k ≥ i} X_ki X_kj``,
    then mirrored (a copy)."""
    n = x.shape[-1]
    result = torch.zeros_like(x)
    for i in range(n):
        for j in range(i + 1):
            result[:, i, j] = (x[:, i:, i] * x[:, i:, j]).sum(-1)
            result[:, j, i] = result[:, i, j]
    return result


def householder_qr(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``dgeqr2`` (``m ≥ n``): reflectors ``dlarfg`` and their application ``dlarf``; LAPACK's packed
    result and ``τ``."""
    a = a.clone()
    rows, cols = a.shape[-2:]
    taus = torch.zeros(a.shape[0], cols, dtype=a.dtype)
    for j in range(cols):
        length = rows - j
        if length < 2:  # dlarfg(1): H = I, τ = 0, nothing computed
            continue
        alpha, x = a[:, j, j], a[:, j + 1 :, j]
        xnorm = torch.sqrt((x * x).sum(-1))
        beta = -torch.copysign(torch.sqrt(alpha * alpha + xnorm * xnorm), alpha)
        tau = (beta - alpha) / beta
        v = x * torch.reciprocal(alpha - beta).unsqueeze(-1)
        a[:, j + 1 :, j], a[:, j, j], taus[:, j] = v, beta, tau
        if j < cols - 1:
            full = torch.cat([torch.ones(a.shape[0], 1, dtype=a.dtype), v], -1)  # v with its unit head
            block = a[:, j:, j + 1 :]
            w = torch.bmm(full.unsqueeze(1), block)  # (B, 1, c) = vᵀ C
            a[:, j:, j + 1 :] = block - full.unsqueeze(-1) * (tau.unsqueeze(-1).unsqueeze(-1) * w)
    return a, taus


# --- randomised cases --------------------------------------------------------------------------------


def _matrix(generator: torch.Generator, rows: int, cols: int, batch: tuple) -> torch.Tensor:
    return torch.randn(*batch, rows, cols, generator=generator, dtype=torch.float64)


def _spd(generator: torch.Generator, n: int, batch: tuple) -> torch.Tensor:
    a = torch.randn(*batch, n, n, generator=generator, dtype=torch.float64)
    return a @ a.mT + n * torch.eye(n, dtype=torch.float64)


def _flat(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(-1, *t.shape[-2:])


def _pivots(packed_pivots: torch.Tensor) -> torch.Tensor:
    return _flat(packed_pivots.unsqueeze(-1)).squeeze(-1) - 1


def _lawn(workload: Callable[[], Any]) -> tuple[Any, int]:
    result, counter = elementary_count(workload, free=SIGN_FLIPS)
    return result, counter.flops


def _case(
    rng: random.Random,
) -> tuple[str, Callable[[], object], Callable[[], tuple[Any, int]], Callable[[Any], None]]:
    """``(operator, the PyTorch call, the counted re-implementation, its value check)``."""
    generator = seeded(rng)
    batch = tuple(rng.randint(1, 3) for _ in range(rng.randint(0, 2)))
    n = rng.randint(1, 5)
    kind = rng.choice(
        ["lu_factor", "lu", "cholesky", "solve_triangular", "triangular_solve", "lu_solve", "solve",
         "inv", "det", "slogdet", "cholesky_solve", "cholesky_inverse", "geqrf"]
    )  # fmt: skip
    if kind in ("lu_factor", "lu", "geqrf"):
        rows, cols = n, rng.randint(1, 5)
        if kind == "geqrf":
            rows, cols = max(rows, cols), min(rows, cols)
        a = _matrix(generator, rows, cols, batch)
        if kind == "geqrf":

            def check(result: Any) -> None:
                packed, tau = torch.geqrf(a)
                torch.testing.assert_close(result[0], _flat(packed))
                torch.testing.assert_close(result[1], tau.reshape(-1, tau.shape[-1]))

            return (
                "aten.geqrf",
                lambda: torch.geqrf(a),
                lambda: _lawn(lambda: householder_qr(_flat(a))),
                check,
            )
        packed, pivots = torch.linalg.lu_factor(a)
        flat_a, flat_piv = _flat(a), _pivots(pivots)  # prepared before anything is counted
        call = (lambda: torch.linalg.lu_factor(a)) if kind == "lu_factor" else (lambda: torch.linalg.lu(a))
        name = "aten.linalg_lu_factor_ex" if kind == "lu_factor" else "aten.linalg_lu"
        return (
            name,
            call,
            lambda: _lawn(lambda: lu(flat_a, flat_piv)),
            lambda r: torch.testing.assert_close(r, _flat(packed)),
        )
    if kind == "cholesky":
        a = _spd(generator, n, batch)
        upper = rng.random() < 0.3
        return (
            "aten.linalg_cholesky_ex",
            lambda: torch.linalg.cholesky(a, upper=upper),
            lambda: _lawn(lambda: cholesky(_flat(a))),
            lambda r: torch.testing.assert_close(r, _flat(torch.linalg.cholesky(a))),
        )
    if kind in ("solve_triangular", "triangular_solve"):
        a = _matrix(generator, n, n, batch) + 3 * torch.eye(n, dtype=torch.float64)
        upper, unit = rng.random() < 0.5, rng.random() < 0.3
        a = a.triu() if upper else a.tril()
        left = kind == "triangular_solve" or rng.random() < 0.7
        k = rng.randint(1, 4)
        b = _matrix(generator, n, k, batch) if left else _matrix(generator, k, n, batch)
        if kind == "triangular_solve":
            transpose = rng.random() < 0.3
            call = lambda: torch.triangular_solve(b, a, upper=upper, transpose=transpose, unitriangular=unit)  # noqa: E731
            system, solved_upper = (a.mT, not upper) if transpose else (a, upper)
            expected = torch.triangular_solve(
                b, a, upper=upper, transpose=transpose, unitriangular=unit
            ).solution
            return (
                "aten.triangular_solve", call,
                lambda: _lawn(lambda: triangular_solve(_flat(system), _flat(b), solved_upper, unit, True)),
                lambda r: torch.testing.assert_close(r, _flat(expected)),
            )  # fmt: skip
        expected = torch.linalg.solve_triangular(a, b, upper=upper, left=left, unitriangular=unit)
        return (
            "aten.linalg_solve_triangular",
            lambda: torch.linalg.solve_triangular(a, b, upper=upper, left=left, unitriangular=unit),
            lambda: _lawn(lambda: triangular_solve(_flat(a), _flat(b), upper, unit, left)),
            lambda r: torch.testing.assert_close(r, _flat(expected)),
        )
    if kind in ("lu_solve", "solve", "inv", "det", "slogdet"):
        a = _matrix(generator, n, n, batch) + 2 * torch.eye(n, dtype=torch.float64)
        packed, pivots = torch.linalg.lu_factor(a)
        flat_a, flat_piv = _flat(a), _pivots(pivots)
        if kind in ("lu_solve", "solve"):
            left = rng.random() < 0.7
            adjoint = kind == "lu_solve" and rng.random() < 0.3
            k = rng.randint(1, 3)
            b = _matrix(generator, n, k, batch) if left else _matrix(generator, k, n, batch)
            if kind == "lu_solve":
                expected = torch.linalg.lu_solve(packed, pivots, b, left=left, adjoint=adjoint)
                return (
                    "aten.linalg_lu_solve",
                    lambda: torch.linalg.lu_solve(packed, pivots, b, left=left, adjoint=adjoint),
                    lambda: _lawn(lambda: lu_solve(_flat(packed), flat_piv, _flat(b), left, adjoint)),
                    lambda r: torch.testing.assert_close(r, _flat(expected)),
                )
            expected = torch.linalg.solve(a, b, left=left)

            def solve() -> torch.Tensor:
                return lu_solve(lu(flat_a, flat_piv), flat_piv, _flat(b), left, False)

            return (
                "aten._linalg_solve_ex",
                lambda: torch.linalg.solve(a, b, left=left),
                lambda: _lawn(solve),
                lambda r: torch.testing.assert_close(r, _flat(expected)),
            )
        if kind == "inv":
            identity = torch.eye(n, dtype=torch.float64).expand(flat_a.shape).clone()
            expected = torch.linalg.inv(a)
            return (
                "aten.linalg_inv_ex", lambda: torch.linalg.inv(a),
                lambda: _lawn(lambda: lu_solve(lu(flat_a, flat_piv), flat_piv, identity, True, False)),
                lambda r: torch.testing.assert_close(r, _flat(expected)),
            )  # fmt: skip
        # the permutation's sign (±1 from the integer pivots): an input of the kernel's last multiply
        swaps = (flat_piv != torch.arange(n)).sum(-1)
        parity = 1.0 - 2.0 * (swaps % 2).to(torch.float64)

        def diagonal_product(values: torch.Tensor) -> torch.Tensor:
            product = values[:, 0]
            for i in range(1, n):
                product = product * values[:, i]
            return product

        if kind == "det":

            def det() -> tuple[torch.Tensor, int]:
                packed_lu, lu_flops = _lawn(lambda: lu(flat_a, flat_piv))
                diagonal = torch.diagonal(packed_lu, dim1=-2, dim2=-1)
                value, counter = elementary_count(lambda: diagonal_product(diagonal) * parity)
                return value, lu_flops + counter.flops

            expected = torch.linalg.det(a)
            return (
                "aten._linalg_det",
                lambda: torch.linalg.det(a),
                det,
                lambda r: torch.testing.assert_close(r, expected.reshape(-1)),
            )

        def slogdet() -> tuple[tuple[torch.Tensor, torch.Tensor], int]:
            packed_lu, lu_flops = _lawn(lambda: lu(flat_a, flat_piv))
            diagonal = torch.diagonal(packed_lu, dim1=-2, dim2=-1)

            def parts() -> tuple[torch.Tensor, torch.Tensor]:
                sign = diagonal_product(torch.sgn(diagonal)) * parity
                return sign, torch.log(torch.abs(diagonal)).sum(-1)

            value, counter = elementary_count(parts)
            return value, lu_flops + counter.flops

        sign, logabsdet = torch.linalg.slogdet(a)

        def check(result: Any) -> None:
            torch.testing.assert_close(result[0], sign.reshape(-1))
            torch.testing.assert_close(result[1], logabsdet.reshape(-1))

        return "aten._linalg_slogdet", lambda: torch.linalg.slogdet(a), slogdet, check
    # Cholesky solves and inverse, from a factor
    a = _spd(generator, n, batch)
    factor = torch.linalg.cholesky(a)
    upper = rng.random() < 0.3
    given = factor.mT if upper else factor
    if kind == "cholesky_solve":
        b = _matrix(generator, n, rng.randint(1, 3), batch)
        expected = torch.cholesky_solve(b, given, upper=upper)

        def potrs() -> torch.Tensor:
            y = triangular_solve(_flat(factor), _flat(b), upper=False, unit=False, left=True)
            return triangular_solve(_flat(factor).mT, y, upper=True, unit=False, left=True)

        return (
            "aten.cholesky_solve", lambda: torch.cholesky_solve(b, given, upper=upper),
            lambda: _lawn(potrs), lambda r: torch.testing.assert_close(r, _flat(expected)),
        )  # fmt: skip
    expected = torch.cholesky_inverse(given, upper=upper)
    return (
        "aten.cholesky_inverse", lambda: torch.cholesky_inverse(given, upper=upper),
        lambda: _lawn(lambda: lower_gram(triangular_inverse(_flat(factor)))),
        lambda r: torch.testing.assert_close(r, _flat(expected)),
    )  # fmt: skip


@pytest.mark.parametrize(("seed", "rng"), cases("linalg_kernels"))
def test_linear_algebra_kernels_count_their_lapack_routine(seed: int, rng: random.Random) -> None:
    operator, call, reference, check = _case(rng)
    result, expected = reference()
    check(result)
    counted = library_count(call)
    assert counted.status == "complete", counted.diagnostics
    assert counted.operator(operator) == expected, (operator, counted.by_operator)


def test_wide_qr_is_unsupported_not_zero() -> None:
    """``geqrf`` of a wide matrix (``m < n``) has no formula: partial, never a complete 0."""
    counted = library_count(lambda: torch.geqrf(torch.randn(2, 3, dtype=torch.float64)))
    assert counted.status == "partial"
