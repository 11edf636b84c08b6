"""Reference checks of the fused attention formulas (truth.md 1, attention-and-scaling.md 1 and 3).

Reference (a) for the matrix products: attention computed row by row over only the keys the mask
keeps (``q_i @ K_keptᵀ``, softmax, ``@ V_kept``), run forward and through autograd under
:class:`TrivialCounter` — its products are what a kernel that skips masked pairs must multiply.
Reference (b) for the rest, the element-wise convention of formulas.md B.8 applied to the kept
pairs (derivations in ``attention_kernels``' docstring): scaling 1 per pair, softmax ``5`` per pair
``− 2`` per non-empty row, a mask tensor 1 per pair; backward ``6`` per pair and ``2·Dv − 1`` per
query row for ``Δ = rowsum(dO∘O)``, plus the scores the kernel recomputes (``2·D`` per pair).
Which pairs a causal kernel keeps is brute-forced here from the mask PyTorch documents (``tril``),
and the CPU kernel's numbers are checked against that mask, so the alignment is the executed one.
"""

from __future__ import annotations

import random

import pytest
import torch
from torch.nn import functional as F

from tests.formulas.reference.harness import cases, library_count, trivial_count
from torchscan.formulas import attention_kernels


def _brute_pairs(lq: int, lk: int, lower: int | None, upper: int | None) -> tuple[int, int]:
    pairs = rows = 0
    for i in range(lq):
        kept = sum(
            1 for j in range(lk) if (lower is None or j >= i + lower) and (upper is None or j <= i + upper)
        )
        pairs += kept
        rows += kept > 0
    return pairs, rows


@pytest.mark.parametrize(("seed", "rng"), cases("attention_kept_pairs"))
def test_kept_pairs_closed_form_equals_brute_force(seed: int, rng: random.Random) -> None:
    lq, lk = rng.randint(0, 40), rng.randint(0, 40)
    lower = rng.choice((None, rng.randint(-50, 50)))
    upper = rng.choice((None, rng.randint(-50, 50)))
    assert attention_kernels.kept_pairs(lq, lk, lower, upper) == _brute_pairs(lq, lk, lower, upper)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 255, 256, 1000])
def test_causal_square_keeps_n_n_plus_one_over_two(n: int) -> None:
    assert attention_kernels.kept_pairs(n, n, None, 0) == (n * (n + 1) // 2, n)


def _row_reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Attention computed only over kept keys, one query row at a time (KV heads shared by GQA)."""
    batch, heads, lq, _ = q.shape
    group = heads // k.shape[1]
    rows = []
    for b in range(batch):
        for h in range(heads):
            for i in range(lq):
                keep = mask[i].nonzero().flatten()
                if keep.numel() == 0:
                    rows.append(torch.zeros(v.shape[-1], dtype=q.dtype))
                    continue
                keys, values = k[b, h // group, keep], v[b, h // group, keep]
                scores = torch.mm(q[b, h, i : i + 1], keys.t()) * q.shape[-1] ** -0.5
                rows.append(torch.mm(torch.softmax(scores, -1), values)[0])
    return torch.stack(rows).reshape(batch, heads, lq, v.shape[-1])


def _draw(rng: random.Random) -> dict:
    kv_heads = rng.randint(1, 2)
    width = rng.randint(1, 5)
    return {
        "batch": rng.randint(1, 2),
        "heads": kv_heads * rng.randint(1, 2),
        "kv_heads": kv_heads,
        "lq": rng.randint(1, 7),
        "lk": rng.randint(1, 7),
        "width": width,
        "value_width": width,  # the CPU kernel requires one head size for Q, K and V
        "causal": rng.random() < 0.5,
        "mask": rng.choice((None, None, "bool", "float")),
    }


def _tensors(case: dict, seed: int, grad: bool = False) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(seed)
    b, h, hk = case["batch"], case["heads"], case["kv_heads"]
    q = torch.randn(b, h, case["lq"], case["width"], generator=generator, dtype=torch.float64)
    k = torch.randn(b, hk, case["lk"], case["width"], generator=generator, dtype=torch.float64)
    v = torch.randn(b, hk, case["lk"], case["value_width"], generator=generator, dtype=torch.float64)
    return tuple(t.requires_grad_(grad) for t in (q, k, v))


def _kernel_call(case: dict, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None):
    """The CPU flash kernel itself (what ``F.scaled_dot_product_attention`` dispatches on CPU, grouped
    KV heads included)."""
    return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        q, k, v, 0.0, case["causal"], attn_mask=mask
    )


def _masks(case: dict, seed: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The kept-pair mask (causal top-left, as PyTorch's ``is_causal`` documents) and the mask tensor."""
    lq, lk = case["lq"], case["lk"]
    kept = torch.ones(lq, lk, dtype=torch.bool)
    if case["causal"]:
        kept = kept.tril(0)
    if case["mask"] is None:
        return kept, None
    generator = torch.Generator().manual_seed(seed + 1)
    if case["mask"] == "bool":
        tensor = torch.rand(lq, lk, generator=generator) < 0.8
        return kept, torch.where(tensor, 0.0, float("-inf")).to(torch.float64)
    return kept, torch.randn(lq, lk, generator=generator, dtype=torch.float64)


@pytest.mark.parametrize(("seed", "rng"), cases("fused_attention"))
def test_cpu_fused_attention_forward_and_backward_match_the_reference(seed: int, rng: random.Random) -> None:
    case = _draw(rng)
    q, k, v = _tensors(case, seed)
    kept, mask = _masks(case, seed)
    # every pair is computed when a mask tensor is added (the kernel executes them all)
    computed = torch.ones_like(kept) if mask is not None and not case["causal"] else kept
    pairs, rows = _brute_pairs(case["lq"], case["lk"], None, 0 if case["causal"] else None)
    heads = case["batch"] * case["heads"]
    pairs, rows = pairs * heads, rows * heads
    bias = mask is not None
    width, value_width = case["width"], case["value_width"]

    if mask is None:  # the executed alignment: the kernel's numbers are those of the brute-forced mask
        out = _kernel_call(case, q, k, v, None)[0]
        torch.testing.assert_close(out, _row_reference(q, k, v, kept), rtol=1e-7, atol=1e-7)
    products = trivial_count(lambda: _row_reference(q, k, v, computed)).products
    assert products == 2 * pairs * (width + value_width)
    library = library_count(lambda: _kernel_call(case, q, k, v, mask))
    # scaling 1, softmax 5 per pair − 2 per non-empty row, the mask 1 per pair
    expected = products + pairs + 5 * pairs - 2 * rows + pairs * bias if pairs else 0
    assert library.operator("aten._scaled_dot_product_flash_attention_for_cpu") == expected

    # backward: the kernel recomputes the scores, then multiplies what autograd of the reference does
    qg, kg, vg = (t.detach().clone().requires_grad_() for t in (q, k, v))
    ref_out = _row_reference(qg, kg, vg, computed)
    autograd = trivial_count(lambda: ref_out.backward(torch.ones_like(ref_out))).products
    assert autograd == 2 * pairs * (2 * width + 2 * value_width)
    out, lse = _kernel_call(case, q, k, v, mask)
    grads = torch.ones_like(out)

    def backward() -> object:
        return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
            grads, q, k, v, out, lse, 0.0, case["causal"], attn_mask=mask
        )

    library = library_count(backward)
    all_rows = case["batch"] * case["heads"] * case["lq"]
    recompute = 2 * pairs * width
    elementwise = pairs * (6 + bias) + 2 * all_rows * value_width - all_rows
    expected = autograd + recompute + elementwise if pairs else 0
    assert library.operator("aten._scaled_dot_product_flash_attention_for_cpu_backward") == expected


def test_issue_33_causal_cpu_attention_counts_the_lower_triangle() -> None:
    """``q`` 1×4×256×32, non-causal: rows ``4·256 = 1,024``, pairs ``1,024·256 = 262,144``:
    ``2·262,144·64 + 262,144 + 5·262,144 − 2·1,024 = 35,125,248``. Causal keeps ``4 · 256·257/2 =
    131,584`` pairs: ``2·131,584·64 + 131,584 + 5·131,584 − 2·1,024 = 17,630,208`` (was 35,387,392:
    dense plus one mask operation per pair)."""
    q = torch.randn(1, 4, 256, 32)
    dense = library_count(lambda: F.scaled_dot_product_attention(q, q, q))
    causal = library_count(lambda: F.scaled_dot_product_attention(q, q, q, is_causal=True))
    assert (dense.total, dense.status) == (35_125_248, "complete")
    assert (causal.total, causal.status) == (17_630_208, "complete")


@pytest.mark.parametrize(("lq", "lk"), [(3, 5), (5, 3), (1, 8), (8, 1), (6, 6)])
def test_causal_with_unequal_lengths_counts_the_kept_pairs_forward_and_backward(lq: int, lk: int) -> None:
    """``is_causal`` with ``Lq ≠ Lk``: query ``i`` keeps keys ``j ≤ i`` (PyTorch's documented top-left
    ``is_causal``, which the CPU kernel's numbers follow: checked in the randomised test above)."""
    q = torch.randn(1, 2, lq, 4, requires_grad=True)
    k = torch.randn(1, 2, lk, 4, requires_grad=True)
    v = torch.randn(1, 2, lk, 4, requires_grad=True)
    pairs, rows = _brute_pairs(lq, lk, None, 0)
    pairs, rows = 2 * pairs, 2 * rows
    forward = library_count(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
    assert (
        forward.operator("aten._scaled_dot_product_flash_attention_for_cpu")
        == 2 * pairs * 8 + 6 * pairs - 2 * rows
    )
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    backward = library_count(lambda: out.sum().backward())
    all_rows = 2 * lq
    assert backward.operator("aten._scaled_dot_product_flash_attention_for_cpu_backward") == (
        2 * pairs * (3 * 4 + 2 * 4) + 6 * pairs + 2 * all_rows * 4 - all_rows
    )


def _meta(*shape: int) -> torch.Tensor:
    return torch.empty(*shape, device="meta")


@pytest.mark.parametrize(("seed", "rng"), cases("fused_attention_kernels"))
def test_accelerator_kernels_count_the_pairs_of_their_documented_mask(seed: int, rng: random.Random) -> None:
    """The CUDA kernels cannot run here; their formulas are called on meta tensors with each kernel's
    schema and compared with the same cost over brute-forced pairs. What this checks is the formulas'
    arithmetic and argument positions for each documented alignment — scaled-dot-product operators
    top-left (``is_causal``), ``_flash_attention_*`` bottom-right (FlashAttention-2) with its window,
    ``_efficient_attention_*`` by ``custom_mask_type`` — not a GPU's behaviour (no GPU evidence)."""
    b, hk = rng.randint(1, 2), rng.randint(1, 2)
    h, lq, lk, d, dv = (
        hk * rng.randint(1, 2),
        rng.randint(1, 9),
        rng.randint(1, 9),
        rng.randint(1, 8),
        rng.randint(1, 8),
    )
    causal = rng.random() < 0.5
    rows_all = b * h * lq

    def forward(lower, upper, bias=False):  # type: ignore[no-untyped-def]
        pairs, rows = _brute_pairs(lq, lk, lower, upper)
        pairs, rows = pairs * b * h, rows * b * h
        return 2 * pairs * (d + dv) + 6 * pairs - 2 * rows + pairs * bias if pairs else 0

    def backward(lower, upper, bias=False):  # type: ignore[no-untyped-def]
        pairs = _brute_pairs(lq, lk, lower, upper)[0] * b * h
        return (
            2 * pairs * (3 * d + 2 * dv) + pairs * (6 + bias) + 2 * rows_all * dv - rows_all if pairs else 0
        )

    top_left = (None, 0) if causal else (None, None)
    q, k, v = _meta(b, h, lq, d), _meta(b, hk, lk, d), _meta(b, hk, lk, dv)
    go, o, lse = _meta(b, h, lq, dv), _meta(b, h, lq, dv), _meta(b, h, lq)
    bias = _meta(b, h, lq, lk) if rng.random() < 0.5 else None
    kernels = attention_kernels
    assert kernels.flash_forward((q, k, v, 0.0, causal), {}, None) == forward(*top_left)
    assert kernels.flash_backward(
        (go, q, k, v, o, lse, None, None, lq, lk, 0.0, causal), {}, None
    ) == backward(*top_left)
    assert kernels.efficient_forward((q, k, v, bias, True, 0.0, causal), {}, None) == forward(
        *top_left, bias is not None
    )
    assert kernels.efficient_backward(
        (go, q, k, v, bias, o, lse, None, None, 0.0, [True] * 4, causal), {}, None
    ) == backward(*top_left, bias is not None)
    assert kernels.cudnn_backward(
        (go, q, k, v, o, lse, None, None, bias, None, None, lq, lk, 0.0, causal), {}, None
    ) == backward(*top_left, bias is not None)
    # low-level kernels: (B, L, H, D)
    ql, kl, vl = _meta(b, lq, h, d), _meta(b, lk, hk, d), _meta(b, lk, hk, dv)
    gl, ol = _meta(b, lq, h, dv), _meta(b, lq, h, dv)
    left = rng.choice((None, -1, rng.randint(0, 6)))
    right = rng.choice((None, -1, rng.randint(0, 6)))
    shift = lk - lq
    upper = shift if causal else (shift + right if right is not None and right >= 0 else None)
    lower = shift - left if left is not None and left >= 0 else None
    window = {"window_size_left": left, "window_size_right": right}
    assert kernels.low_flash_forward(
        (ql, kl, vl, None, None, lq, lk, 0.0, causal, False), window, None
    ) == forward(lower, upper)
    assert kernels.low_flash_backward(
        (gl, ql, kl, vl, ol, lse, None, None, lq, lk, 0.0, causal, None, None), window, None
    ) == backward(lower, upper)
    mask_type = rng.choice((0, 1, 2))
    size = rng.choice((None, rng.randint(1, 5))) if mask_type else None
    shift = {0: None, 1: 0, 2: lk - lq}[mask_type]
    bounds = (None, None) if shift is None else ((shift - (size - 1)) if size else None, shift)
    efficient_kwargs = {"window_size": size}
    assert kernels.low_efficient_forward(
        (ql, kl, vl, None, None, None, lq, lk, 0.0, mask_type), efficient_kwargs, None
    ) == forward(*bounds)
    assert kernels.low_efficient_backward(
        (gl, ql, kl, vl, None, ol, None, None, lq, lk, lse, 0.0, None, None, mask_type, False),
        efficient_kwargs,
        None,
    ) == backward(*bounds)


def test_variable_length_kernels_sum_their_sequences() -> None:
    """Packed ``(T, H, D)`` sequences with offsets ``[0, 3, 8]`` (lengths 3 and 5), causal bottom-right
    on equal lengths: ``3·4/2 + 5·6/2 = 21`` pairs per head, 2 heads: 42 pairs, 16 non-empty rows."""
    q, k, v = torch.empty(8, 2, 4), torch.empty(8, 2, 4), torch.empty(8, 2, 4)
    offsets = torch.tensor([0, 3, 8])
    got = attention_kernels.low_flash_forward((q, k, v, offsets, offsets, 5, 5, 0.0, True, False), {}, None)
    assert got == 2 * 42 * 8 + 6 * 42 - 2 * 16
    meta = offsets.to("meta")
    with pytest.raises(attention_kernels.UnsupportedOperatorFormula, match="offsets"):
        attention_kernels.low_flash_forward((q, k, v, meta, meta, 5, 5, 0.0, True, False), {}, None)


def test_dropout_is_reported_never_a_silent_count() -> None:
    """Dropout inside a fused kernel is not covered: the formula refuses the call (the observer makes
    it partial, named). The CPU kernel rejects dropout itself; ``F.scaled_dot_product_attention`` with
    dropout on CPU takes the math path, whose parts are counted one by one."""
    q = torch.randn(1, 1, 4, 4)
    assert library_count(lambda: F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)).status == "complete"
    m = _meta(1, 1, 4, 4)
    for formula, args in (
        (attention_kernels.flash_forward, (m, m, m, 0.5, False)),
        (attention_kernels.efficient_forward, (m, m, m, None, True, 0.5, False)),
        (attention_kernels.low_flash_forward, (m, m, m, None, None, 4, 4, 0.5, False, False)),
    ):
        with pytest.raises(attention_kernels.UnsupportedOperatorFormula, match="dropout"):
            formula(args, {}, None)
