"""Where each operator formula's trust comes from, and the formulas found wrong (truth.md 1).

A formula is trusted because the reference suite (``tests/formulas/reference/``) checked it, never
because a peer uses it. This table records, per operator packet name, why TorchScan's formula differs
from the one it replaced — an inherited ``FlopCounterMode`` formula it overrides, or an earlier
TorchScan formula found wrong — with the upstream issue where one exists. The operator coverage table
(``benchmarks/operator_coverage.py`` -> docs/operator-coverage.md) prints it. Plain data: nothing here
imports torch or runs a formula.
"""

from __future__ import annotations

_POOL_FORWARD = (
    "Counted every window at the full kernel volume K, taps on padding and past the input (ceil_mode) "
    "included: AvgPool2d(640, ceil_mode=True) on 1x8x2x2 read 3,276,800 (max pooling 3,276,792). The "
    "brute-force clamped-window reference showed the kernel executes only the in-bound taps (32, as "
    "AvgPool2d(2)). Now counts each window's in-bound taps T: T - 1 comparisons (max) or T (average; "
    "count_include_pad changes the divisor only), truth.md 6 / issue 39."
)
_POOL_BACKWARD = (
    "Counted G·(K + 1) (average: a divide and K adds per gradient) or G·K (recomputed max) at the full "
    "kernel volume, taps on padding and past the input included. The clamped-window reference showed "
    "the gradient reaches only in-bound taps. Now counts G + taps (average) or taps (recomputed max), "
    "truth.md 6 / issue 39."
)
_MAX_POOL_BACKWARD = (
    "Counted one add per output gradient (G). The reference showed that a dilated window lying wholly "
    "on padding has no argmax and PyTorch drops its gradient (MaxPool1d(2, padding=1, dilation=3) on "
    "length 2: 0 adds, was 1). Now counts one add per window with an in-bound tap, truth.md 6."
)
_EMPTY_NORM_BACKWARD = (
    "Counted the parameter-gradient reductions as N - P adds, negative on an empty input (LayerNorm(4) "
    "on a (0, 4) batch: -8, and measure_flops raised ValueError). The element-wise reference showed an "
    "empty reduction zero-fills its P sums and adds nothing. Now counts max(N - P, 0) per reduction."
)

_LU_RECIPROCAL = (
    "Counted LAWN 41's getrf polynomial, which takes one pivot reciprocal per column, the last "
    "included (a 1×1 LU: 1 FLOP; 5×5: 75). The step-by-step re-implementation of dgetf2 showed a column "
    "is scaled only when rows lie below its pivot (IF( J.LT.M )): 0 and 74. Now counts one reciprocal "
    "per step with rows below; every kernel built on the LU (solve, inv, det, slogdet) one less per matrix."
)

CORRECTIONS: dict[str, str] = {
    **dict.fromkeys(
        ("aten.linalg_lu_factor_ex", "aten.linalg_lu", "aten._linalg_solve_ex", "aten.linalg_inv_ex"),
        _LU_RECIPROCAL,
    ),
    "aten._linalg_det": (
        "Counted the LU and the diagonal's product only (5×5: 79 with LAWN 41's LU). The re-implementation "
        "of the kernel (its nested operators: prod, then mul by the permutation's sign) showed one more "
        "multiply per matrix, and the LU one reciprocal less: now 74 + 4 + 1 = 79 per 5×5 matrix."
    ),
    "aten._linalg_slogdet": (
        "Counted the LU, abs, log and the sum (5×5: 75 + 14 = 89), not the sign. The re-implementation of "
        "the kernel (sgn, prod and the permutation's sign multiply for the sign) showed 2n more per matrix "
        "and the LU one less: now 74 + 10 + 14 = 98."
    ),
    "aten.gelu_backward": (
        "Counted 24 per element with the tanh approximation, x² computed twice (once in the cube, "
        "once in u' = c·(1 + 3a·x²)). The re-implementation of the kernel's derivative, which computes "
        "x_sq once, showed 23. Now 23N (exact GELU unchanged at 11N)."
    ),
    "aten.elu_backward": (
        "Counted 5 per element from the input and 4 from the result whatever the input scale. The "
        "re-implementation of the derivative, with the forward's convention that a multiply by an input "
        "scale of 1 is no operation (B.8), showed 4 and 3 for ELU and SELU (CELU's input scale 1/α adds "
        "one): F.elu on 6 elements read 30, now 24."
    ),
    "aten.count_nonzero": (
        "Counted in + (in − out): the comparisons and the count's additions. The re-implementation (and "
        "the kernel's nested ne, then an integer sum) showed the additions are integer work, 0 by B.7.1, "
        "as (x != 0).sum() counts: a (4, 6) input over dim 0 read 42, now 24."
    ),
    "aten.logsumexp": (
        "Counted 4·in. The kernel's nested operators (amax, abs, eq, masked_fill_, sub, exp_, sum, log_, "
        "add_) include the guard of infinite maxima, 3 per output: X.logsumexp(1) on (4, 6) read 96, "
        "now 108."
    ),
    "aten.renorm": (
        "Counted 2 per slice for the scaling factor. The kernel computes norm > maxnorm ? maxnorm / (norm "
        "+ 1e-7) : 1, 4 per slice: renorm(X, 2, 0, 1.0) on 4 slices of 6 read 80, now 88."
    ),
    "aten._euclidean_dist": (
        "Counted cdist's direct 3M per pair, claiming the expansion did the same work. The "
        "re-implementation of PyTorch's kernel (squared norms, −2x, one product of the padded operands, "
        "clamp and root) showed 2PR(M + 2) + 2PR + P(3M − 1) + R(2M − 1): (4, 6) against (2, 6) read "
        "144, now 234 (and 2M + 6 per pair, not 3M, for large batches)."
    ),
    "aten._cdist_forward": (
        "Counted 3M per pair always. Called with p = 2 and more than 25 rows a side (or compute_mode 1), "
        "the kernel takes _euclidean_dist's matrix-product path inside; now counted as that expansion."
    ),
    "aten.histc": (
        "Counted one increment per value. Without a range (min == max) the kernel first finds the data's "
        "bounds (a nested aminmax, 2·(in − 1) comparisons): histc of 20 values read 20, now 58."
    ),
    "aten.histogram": (
        "Counted the increments and 2 per bin for density, no bounds. The kernel's nested operators show "
        "aminmax without a range (2·(in − 1)) and, for density, sum, divide, the bin widths and another "
        "divide: 4·bins − 1."
    ),
    "aten._histogramdd_from_bin_tensors": (
        "Counted 2 per bin for density; the kernel's normalisation is 2B − 1 + Σ_d (b_d + B) (sum, a "
        "divide per bin, then per dimension the bin widths and a divide per bin)."
    ),
    "aten._histogramdd_from_bin_cts": (
        "Counted one increment per sample and 2 per bin for density. The kernel recomputes the data's "
        "bounds without a range (2·(N − 1)·D) and normalises as histogram does: 2B − 1 + Σ_d (b_d + B)."
    ),
    "aten.linalg__powsum": (
        "Counted one operation per element for every order. For orders other than 1 and 2 (0 and ±inf "
        "are powers here too) the power is abs then pow: 2 per element (Σ|x|^3 over 12 values read 23, "
        "now 35)."
    ),
    "aten._foreach_powsum": (
        "As linalg__powsum: orders other than 1 and 2 take abs and pow per element."
    ),
    "aten._embedding_bag": (
        "Counted n·D comparisons for mode max. The re-implementation (and the CPU kernel, which takes "
        "each bag's first row as it is) showed (n − bags)·D: 6 indices in 2 bags of width 4 read 24, "
        "now 16."
    ),
    "aten._embedding_bag_forward_only": "As aten._embedding_bag (mode max: (n − bags)·D comparisons).",
    "aten.geqrf": (
        "Counted LAWN 41's geqrf polynomial, which prices every column's reflector at 3L + 5 even at "
        "length 1 (a 1×1 QR: 8 FLOPs). The re-implementation of dgeqr2 showed dlarfg returns tau = 0 "
        "without arithmetic for a length-1 reflector: a square matrix's last column costs 0. Now 8 less "
        "per square matrix (1×1: 0)."
    ),
    **dict.fromkeys(
        (
            "aten.avg_pool1d", "aten.avg_pool2d", "aten.avg_pool3d", "aten.max_pool2d_with_indices",
            "aten.max_pool3d_with_indices", "aten.mkldnn_max_pool2d", "aten.mkldnn_max_pool3d",
            "aten.quantized_max_pool1d", "aten.quantized_max_pool2d", "aten.quantized_max_pool3d",
        ),
        _POOL_FORWARD,
    ),
    **dict.fromkeys(
        ("aten.avg_pool2d_backward", "aten.avg_pool3d_backward", "aten.max_pool2d_backward"), _POOL_BACKWARD
    ),
    **dict.fromkeys(
        (
            "aten.max_pool2d_with_indices_backward", "aten.max_pool3d_with_indices_backward",
            "aten.mkldnn_max_pool2d_backward", "aten.mkldnn_max_pool3d_backward",
        ),
        _MAX_POOL_BACKWARD,
    ),
    **dict.fromkeys(
        (
            "aten.native_layer_norm_backward", "aten.native_group_norm_backward",
            "aten.native_batch_norm_backward", "aten.batch_norm_backward", "aten.cudnn_batch_norm_backward",
            "aten.miopen_batch_norm_backward", "aten._fused_rms_norm_backward",
            "aten.batch_norm_backward_reduce",
        ),
        _EMPTY_NORM_BACKWARD,
    ),
    "aten.binary_cross_entropy_with_logits": (
        "Counted pos_weight's ell = (p - 1)·t + 1 and its product as 4N. The element-wise reference (and "
        "the kernel's own operators) showed p - 1 runs on pos_weight's elements P before broadcasting "
        "(a per-class (C,) weight on an (N, C) batch: C, not N·C). Now counts 3N + P."
    ),
    "aten._ctc_loss": (
        "Ignored as indexing and selection (its data_dependent_output tag), a complete 0. The reference "
        "re-implementation of the alpha recursion (Graves et al. 2006, eq. 6) showed 14 FLOPs per lattice "
        "cell and 10 for the likelihood: 2 samples of 64 frames and 6 labels read 0, now 22,952. Now "
        "counts 14·(T_b − 1)·(2·L_b + 1) + 10 (1 without labels) per sample (ctc_ops)."
    ),
    "aten.multi_margin_loss": (
        "Counted (C - 1)·(4 + extras) per sample, 0 for a single class. The reference showed a "
        "single-class sample still divides its empty sum by C (1 per sample). Now counts "
        "(C - 1)·(3 + extras) + max(C - 2, 0) + 1, unchanged for C >= 2."
    ),
}  # fmt: skip
"""Operator packet name (``"aten.convolution_backward"``) -> one or two sentences: what the replaced
formula counted, what the reference showed, what TorchScan counts now (and the upstream issue)."""

_CONV_BACKWARD = (
    "FlopCounterMode counts a grouped convolution's weight gradient once per group (its formula "
    "correlates the whole input with the whole gradient, groups times too much: 16.5× on a "
    "depthwise 3×3 backward) and its bias gradient not at all; the reference (the gradient of an "
    "unfold + matmul convolution, per group, through autograd) shows grad_input and grad_weight each "
    "cost the forward's MACs and the bias gradient one addition per gradient element, which TorchScan counts."
)
_FUSED_ATTENTION = (
    "FlopCounterMode counts the two matrix products only, over every (query, key) pair even under a "
    "causal mask; TorchScan counts what the kernel executes: the products, scaling and softmax of the "
    "pairs its mask keeps (attention-and-scaling.md 1), checked against an unfused reference."
)

CORRECTIONS.update(
    {
        "aten.convolution_backward": _CONV_BACKWARD,
        "aten.convolution_backward_overrideable": _CONV_BACKWARD,
        "aten._slow_conv2d_backward": _CONV_BACKWARD,
        "aten.mps_convolution_backward": _CONV_BACKWARD,
        "aten.mps_convolution_transpose_backward": _CONV_BACKWARD,
        "aten._scaled_dot_product_flash_attention_for_cpu": (
            "torch 2.15's FlopCounterMode registers a matrix-products-only formula for it "
            "(pytorch#195460); TorchScan keeps its own, which also counts scaling and softmax and "
            "only the pairs a causal mask keeps, on every torch."
        ),
        "aten._scaled_dot_product_flash_attention_for_cpu_backward": (
            "torch 2.15's FlopCounterMode registers a matrix-products-only formula for it "
            "(pytorch#195460); TorchScan keeps its own (products, softmax gradient, kept pairs only)."
        ),
        **{
            f"aten.{name}": _FUSED_ATTENTION
            for name in (
                "_scaled_dot_product_flash_attention",
                "_scaled_dot_product_flash_attention_backward",
                "_scaled_dot_product_efficient_attention",
                "_scaled_dot_product_efficient_attention_backward",
                "_scaled_dot_product_cudnn_attention",
                "_scaled_dot_product_cudnn_attention_backward",
                "_flash_attention_forward",
                "_flash_attention_backward",
                "_efficient_attention_forward",
                "_efficient_attention_backward",
            )
        },
    }
)

CHECKED_INHERITED: dict[str, frozenset[str]] = {}
"""Operator packet name -> the tested torch releases (``"2.15.0"``) on which the reference suite checked
PyTorch's own ``FlopCounterMode`` formula for an operator TorchScan has no formula of its own for.

Only such a checked inherited formula makes a complete count (torch-versions.md 1). It is empty: on
every tested torch, TorchScan has its own formula for every operator FlopCounterMode registers (a test
asserts it on each), so nothing is inherited there. An operator a newer FlopCounterMode starts counting
is counted by nobody until someone writes TorchScan's formula, or checks PyTorch's and lists it here
with a reference test."""
