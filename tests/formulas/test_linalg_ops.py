"""Direct dense linear algebra (issue #19 coverage): LAWN 41 operation counts, by hand and by brute
force, on real calls under every grad mode; iterative methods stay uncounted."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from kernel_checks import complete, unsupported

from torchscan.analysis.dispatch.resolution import classify_overload
from torchscan.formulas import linalg_ops

aten = torch.ops.aten
SPD = torch.eye(5).expand(3, 5, 5) * 4 + 1  # 3 symmetric positive-definite 5×5 matrices
RHS = torch.ones(3, 5, 2)
FACTOR = torch.eye(4) + 1  # a lower-triangular Cholesky factor needs only its lower half


def _brute_lu(rows: int, cols: int) -> int:
    """Right-looking LU, step by step: where rows lie below the pivot, its reciprocal, the multipliers
    and the trailing update (``dgetf2`` scales a column only ``IF( J.LT.M )``)."""
    total = 0
    for j in range(min(rows, cols)):
        below, right = rows - j - 1, cols - j - 1
        total += (below > 0) + below + 2 * below * right
    return total


@given(st.integers(1, 40), st.integers(1, 40))
def test_lu_closed_form_is_the_step_by_step_count(rows, cols):
    assert linalg_ops.lu_factor_flops(rows, cols) == _brute_lu(rows, cols)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 17])
def test_square_counts_are_lawn_41_polynomials(n):
    # LAWN 41's 2n³/3 − n²/2 + 5n/6 counts the last pivot's reciprocal, which dgetf2 never computes
    assert 6 * linalg_ops.lu_factor_flops(n, n) == 4 * n**3 - 3 * n * n + 5 * n - 6
    assert 6 * linalg_ops.cholesky_flops(n) == 2 * n**3 + 3 * n * n + n  # n³/3 + n²/2 + n/6
    assert 6 * linalg_ops.cholesky_inverse_flops(n) == 4 * n**3 + 3 * n * n + 5 * n
    # geqrf, m = n + 1: LAWN 41's multiplications plus additions
    m = n + 1
    mults = m * n * n - n**3 / 3 + m * n + n * n / 2 + 23 * n / 6
    adds = m * n * n - n**3 / 3 + n * n / 2 + 5 * n / 6
    assert linalg_ops.qr_factor_flops(m, n) == round(mults + adds)
    # square: the last reflector has length 1, dlarfg returns τ = 0 (LAWN 41 counts it at 8)
    mults = n**3 - n**3 / 3 + n * n + n * n / 2 + 23 * n / 6
    adds = n**3 - n**3 / 3 + n * n / 2 + 5 * n / 6
    assert linalg_ops.qr_factor_flops(n, n) == round(mults + adds) - 8


@pytest.mark.parametrize(
    ("workload", "operator", "expected"),
    [
        (
            lambda: torch.linalg.lu_factor(SPD),
            "aten.linalg_lu_factor_ex",
            3 * 74,
        ),  # 2·125/3 − 12.5 + 25/6 − 1
        (lambda: torch.linalg.cholesky(SPD), "aten.linalg_cholesky_ex", 3 * 55),  # 5·6·11/6
        (lambda: torch.linalg.inv(SPD), "aten.linalg_inv_ex", 3 * (74 + 5 * 45)),  # LU + 5 columns of 2n² − n
        # + the diagonal's product and its multiply by the permutation's sign
        (lambda: torch.linalg.det(SPD), "aten._linalg_det", 3 * (74 + 4 + 1)),
        # + sgn 5, product 4, sign multiply 1; abs 5, log 5, sum 4
        (lambda: torch.linalg.slogdet(SPD), "aten._linalg_slogdet", 3 * (74 + 10 + 14)),
        (lambda: torch.linalg.solve_triangular(SPD, RHS, upper=True), "aten.linalg_solve_triangular", 6 * 25),
        (
            lambda: torch.linalg.solve_triangular(SPD, RHS, upper=True, unitriangular=True),
            "aten.linalg_solve_triangular",
            6 * 20,
        ),
        (lambda: torch.geqrf(torch.ones(6, 4)), "aten.geqrf", 208),  # (576 − 128 + 72 + 48 + 56) / 3
        (lambda: torch.cholesky_inverse(FACTOR), "aten.cholesky_inverse", 54),  # trtri 24 + lauum 30
    ],
)
def test_factorizations_and_solves_by_hand(workload, operator, expected):
    assert complete(workload) == (expected, {operator: expected})


def test_solves_count_the_factorization_and_every_column():
    _, by_operator = complete(lambda: torch.linalg.solve(SPD, RHS))
    assert by_operator == {"aten._linalg_solve_ex": 3 * 74 + 6 * 45}  # getrf, then 6 columns of getrs
    factors = torch.linalg.lu_factor(SPD)
    assert complete(lambda: torch.linalg.lu_solve(*factors, RHS))[1] == {"aten.linalg_lu_solve": 6 * 45}
    lower = torch.linalg.cholesky(SPD)
    assert complete(lambda: torch.cholesky_solve(RHS, lower))[1] == {"aten.cholesky_solve": 6 * 2 * 25}


def test_a_wide_qr_is_unsupported_never_guessed():
    assert "tall or square" in unsupported(lambda: torch.geqrf(torch.ones(3, 5)), "aten.geqrf")


def test_iterative_methods_stay_uncounted():
    for op in (aten._linalg_svd.default, aten._linalg_eigh.default, aten.linalg_eig.default):
        assert classify_overload(op) == ("uncounted", None)
