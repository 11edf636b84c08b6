"""Operator formulas of the direct dense linear-algebra kernels, ``torchscan_flops_v1``.

LU, Cholesky and QR factorizations and the triangular solves built on them run a fixed sequence of
operations that depends on the shapes only, so their counts are exact polynomials: those of LAPACK
Working Note 41 ("Operation counts for LAPACK", Dongarra, Gustavson, Karp; multiplications, divisions
and additions each count 1), written per batch matrix and multiplied by the batch. PyTorch's kernels
call exactly these LAPACK/MAGMA/cuSOLVER routines (``getrf``, ``getrs``, ``potrf``, ``potrs``,
``trsm``, ``geqrf``, ``potri``); ``linalg.inv`` is ``linalg.solve(A, I)`` and counts so.

Not here, on purpose: iterative methods (``eig``, ``eigh``, ``svd``, ``eigvals``, ``matrix_exp``'s
scaling, ``pinv`` through SVD) whose work depends on the values and convergence, and kernels whose
pivoting work depends on the values (``ldl_factor``): they stay uncounted. ``householder_product``,
``ormqr`` and the QR of a wide matrix are not covered yet (uncounted, never zero).
"""

from __future__ import annotations

import math

import torch

from torchscan.formulas.operator_common import UnsupportedOperatorFormula, arg, elements, first_tensor
from torchscan.formulas.operator_registry import register

# --- LAWN 41 counts of one matrix -------------------------------------------------------------------


def _sum_products(a: int, b: int, steps: int) -> int:
    """``Σ_{j<steps} (a − j)·(b − j)``, in closed form (power sums of ``j``)."""
    first, second = steps * (steps - 1) // 2, (steps - 1) * steps * (2 * steps - 1) // 6
    return steps * a * b - (a + b) * first + second


def lu_factor_flops(rows: int, cols: int) -> int:
    """``getrf`` of an ``m×n`` matrix, ``k = min(m, n)`` steps of the right-looking algorithm: per step
    ``j`` with rows below the pivot, its reciprocal and the ``m − j − 1`` multipliers, then the
    ``(m − j − 1)·(n − j − 1)`` multiply-adds of the trailing update (pivot search and row swaps move
    data). ``dgetf2`` scales a column only ``IF( J.LT.M )``: the last pivot of a square or wide matrix
    needs no reciprocal, which LAWN 41's polynomial counts. Square ``n``: ``2n³/3 − n²/2 + 5n/6 − 1``."""
    steps = min(rows, cols)
    scaled = min(steps, max(rows - 1, 0))  # steps with at least one row below the pivot
    multipliers = steps * (rows - 1) - steps * (steps - 1) // 2
    return scaled + multipliers + 2 * _sum_products(rows - 1, cols - 1, steps)


def cholesky_flops(size: int) -> int:
    """``potrf`` of an ``n×n`` matrix: ``n³/3 + n²/2 + n/6 = n(n + 1)(2n + 1)/6`` (LAWN 41: ``n³/6 +
    n²/2 + n/3`` multiplications, divisions and square roots, ``n³/6 − n/6`` additions)."""
    return size * (size + 1) * (2 * size + 1) // 6


def qr_factor_flops(rows: int, cols: int) -> int:
    """``geqrf`` (``dgeqr2``) of an ``m×n`` matrix with ``m ≥ n``: per column ``j`` the reflector
    ``dlarfg`` of length ``L = m − j`` (norm, ``β``, ``τ`` and the scaling: ``3L + 5``) and, for the
    ``c = n − j − 1`` columns to its right, its application ``dlarf`` (``w = Cᵀv``, ``C −= v·(τw)ᵀ``:
    ``(4L + 1)·c``). In all ``2mn² − 2n³/3 + mn + n² + 14n/3`` (LAWN 41: ``mn² − n³/3 + mn + n²/2 +
    23n/6`` multiplications, ``mn² − n³/3 + n²/2 + 5n/6`` additions), less 8 for a square matrix: its
    last reflector has length 1, where ``dlarfg`` returns ``τ = 0`` without computing anything."""
    if rows < cols:
        raise UnsupportedOperatorFormula(
            "QR factorization FLOPs cover tall or square matrices only (m >= n)."
        )
    n, m = cols, rows
    identity_reflector = 8 if m == n and n > 0 else 0
    return (6 * m * n * n - 2 * n**3 + 3 * m * n + 3 * n * n + 14 * n) // 3 - identity_reflector


def cholesky_inverse_flops(size: int) -> int:
    """``potri`` from the Cholesky factor: the triangular inverse (``trtri``, ``n³/3 + 2n/3``) and the
    product of the inverse with its transpose (``lauum``, ``n³/3 + n²/2 + n/6``), counted entry by
    entry: ``(4n³ + 3n² + 5n)/6``."""
    return (4 * size**3 + 3 * size * size + 5 * size) // 6


def _batch(tensor: torch.Tensor) -> int:
    return math.prod(tensor.shape[:-2])


def _square(tensor: torch.Tensor) -> int:
    rows, cols = (int(size) for size in tensor.shape[-2:])
    if rows != cols:
        raise UnsupportedOperatorFormula("This factorization's FLOPs need square matrices.")
    return rows


def _right_hand_sides(result: object, size: int) -> int:
    """Columns solved for, over the whole batch: the result's elements over the system size."""
    return elements(first_tensor(result)) // size if size else 0


# --- factorizations -------------------------------------------------------------------------------


@register("linalg_lu_factor_ex", "linalg_lu")
def lu_factor(args: tuple, kwargs: dict, out: object) -> int:
    """``(A[..., m, n], pivot, ...)``: :func:`lu_factor_flops` per matrix (``linalg_lu``'s unpacking
    into ``P``, ``L``, ``U`` moves data)."""
    matrix = args[0]
    return _batch(matrix) * lu_factor_flops(int(matrix.shape[-2]), int(matrix.shape[-1]))


@register("linalg_cholesky_ex")
def cholesky(args: tuple, kwargs: dict, out: object) -> int:
    """``(A[..., n, n], upper, check_errors)``: :func:`cholesky_flops` per matrix."""
    return _batch(args[0]) * cholesky_flops(_square(args[0]))


@register("geqrf")
def qr_factor(args: tuple, kwargs: dict, out: object) -> int:
    """``(A[..., m, n])`` with ``m ≥ n``: :func:`qr_factor_flops` per matrix."""
    matrix = args[0]
    return _batch(matrix) * qr_factor_flops(int(matrix.shape[-2]), int(matrix.shape[-1]))


@register("_linalg_det")
def determinant(args: tuple, kwargs: dict, out: object) -> int:
    """``(A[..., n, n])`` -> ``(det, LU, pivots)``: the LU factorization, the product of the ``n``
    diagonal entries (``n − 1`` multiplies) and its multiply by the permutation's sign (1; the sign
    itself is integer work on the pivots)."""
    size = _square(args[0])
    return _batch(args[0]) * (lu_factor_flops(size, size) + max(size - 1, 0) + 1)


@register("_linalg_slogdet")
def log_determinant(args: tuple, kwargs: dict, out: object) -> int:
    """``(A[..., n, n])`` -> ``(sign, logabsdet, LU, pivots)``: the LU factorization; the sign, ``sgn``
    of the ``n`` diagonal entries, their product and its multiply by the permutation's sign (``2n``);
    ``logabsdet``, ``|u_ii|``, ``log`` and the sum over the diagonal (``3n − 1``): ``5n − 1``."""
    size = _square(args[0])
    sign = size + max(size - 1, 0) + 1
    return _batch(args[0]) * (lu_factor_flops(size, size) + sign + 2 * size + max(size - 1, 0))


@register("cholesky_inverse")
def cholesky_inverse(args: tuple, kwargs: dict, out: object) -> int:
    """``(L[..., n, n], upper)``: :func:`cholesky_inverse_flops` per matrix."""
    return _batch(args[0]) * cholesky_inverse_flops(_square(args[0]))


# --- solves ---------------------------------------------------------------------------------------


def lu_solve_flops(size: int, columns: int) -> int:
    """``getrs``: forward substitution with the unit lower factor and back substitution with the upper
    one, ``2n² − n`` per right-hand side (LAWN 41: ``n²`` multiplications, ``n² − n`` additions)."""
    return columns * (2 * size * size - size)


@register("linalg_lu_solve")
def lu_solve(args: tuple, kwargs: dict, out: object) -> int:
    """``(LU[..., n, n], pivots, B, *, left, adjoint)``: :func:`lu_solve_flops` for every column of
    the (broadcast) result."""
    size = int(args[0].shape[-1])
    return lu_solve_flops(size, _right_hand_sides(out, size))


@register("_linalg_solve_ex")
def solve(args: tuple, kwargs: dict, out: object) -> int:
    """``(A[..., n, n], B, *, left, check_errors)`` -> ``(result, LU, pivots, info)``: the LU
    factorization of every matrix of the factor's batch, then :func:`lu_solve_flops` for every column
    of the result."""
    size = _square(args[0])
    factors = out[1] if isinstance(out, list | tuple) and len(out) > 1 else args[0]
    return _batch(factors) * lu_factor_flops(size, size) + lu_solve_flops(size, _right_hand_sides(out, size))


@register("linalg_inv_ex")
def inverse(args: tuple, kwargs: dict, out: object) -> int:
    """``(A[..., n, n], check_errors)``: ``linalg.solve(A, I)`` as PyTorch computes it, the LU
    factorization and ``n`` right-hand sides: ``2n³/3 − n²/2 + 5n/6 − 1 + 2n³ − n²`` per matrix."""
    size = _square(args[0])
    return _batch(args[0]) * (lu_factor_flops(size, size) + lu_solve_flops(size, size))


@register("cholesky_solve", "_cholesky_solve_helper")
def cholesky_solve(args: tuple, kwargs: dict, out: object) -> int:
    """``(B, L[..., n, n], upper)``: two triangular solves with non-unit diagonals, ``2n²`` per column
    of the result (LAWN 41 ``potrs``: ``n² + n`` multiplications and divisions, ``n² − n`` additions)."""
    size = int(args[1].shape[-1])
    return 2 * size * size * _right_hand_sides(out, size)


def triangular_solve_flops(size: int, columns: int, unit: bool) -> int:
    """``trsm``: ``n²`` per right-hand side (``n(n + 1)/2`` multiplications and divisions, ``n(n − 1)/2``
    additions); a unit diagonal saves the ``n`` divisions."""
    return columns * (size * size - (size if unit else 0))


@register("triangular_solve")
def triangular_solve(args: tuple, kwargs: dict, out: object) -> int:
    """``(B, A[..., n, n], upper, transpose, unitriangular)`` -> ``(solution, A)``."""
    size = int(args[1].shape[-1])
    unit = bool(arg(args, kwargs, 4, "unitriangular", False))
    return triangular_solve_flops(size, _right_hand_sides(out, size), unit)


@register("linalg_solve_triangular")
def solve_triangular(args: tuple, kwargs: dict, out: object) -> int:
    """``(A[..., n, n], B, *, upper, left, unitriangular)``: :func:`triangular_solve_flops` for every
    column (``left``) or row (``left=False``) of the result."""
    size = int(args[0].shape[-1])
    return triangular_solve_flops(
        size, _right_hand_sides(out, size), bool(kwargs.get("unitriangular", False))
    )
