"""Where each operator formula's trust comes from, and the formulas found wrong (truth.md 1).

A formula is trusted because the reference suite (``tests/formulas/reference/``) checked it, never
because a peer uses it. This table records, per operator packet name, why TorchScan's formula differs
from the one it replaced — an inherited ``FlopCounterMode`` formula it overrides, or an earlier
TorchScan formula found wrong — with the upstream issue where one exists. The operator coverage table
(``benchmarks/operator_coverage.py`` -> docs/operator-coverage.md) prints it. Plain data: nothing here
imports torch or runs a formula.
"""

from __future__ import annotations

CORRECTIONS: dict[str, str] = {}
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
