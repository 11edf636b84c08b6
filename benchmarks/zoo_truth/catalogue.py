"""The architectures issues #32 and #39 added to the zoo: which issue, which group, which loss.

39 models built from their papers' block definitions in plain PyTorch (the modules of this
package; no timm, diffusers or PyG). Each runs forward under
``torch.no_grad()`` and with gradients, through ``crawl_module``, and as one training step
(``zoo_training``). ``BEFORE_AFTER`` names the six models whose training totals issue #32 quotes
before and after the grouped-convolution fix (EfficientNet-B0 is torchvision's).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from zoo_truth import generative, grouped, hybrid, mixers, mobile, operators, sequence
from zoo_truth.blocks import classification_loss, mean_square_loss

Loss = Callable[[Any], torch.Tensor]


@dataclass(frozen=True)
class TruthSpec:
    """One added architecture: name, the issue that asked for it, its group, builder and loss."""

    name: str
    issue: int
    group: str
    build: Callable[[], Any]
    loss: Loss


_CLASSIFY = classification_loss
_REGRESS = mean_square_loss
_ROWS: list[tuple[str, int, str]] = [
    # (name, issue, group)
    ("convmixer", 32, "depthwise CNN"),
    ("ghostnet", 32, "depthwise CNN"),
    ("xception", 32, "depthwise CNN"),
    ("convnext-v2", 32, "depthwise CNN"),
    ("mobilenet-v1", 32, "depthwise CNN"),
    ("mobilenext", 32, "depthwise CNN"),
    ("mixnet", 32, "depthwise CNN"),
    ("shufflenet-v1", 32, "grouped CNN"),
    ("resnest", 32, "grouped CNN"),
    ("mobileone", 32, "re-parameterisable CNN"),
    ("repvgg", 32, "re-parameterisable CNN"),
    ("x3d", 32, "depthwise 3-D CNN"),
    ("fastvit", 32, "hybrid"),
    ("fno-1d", 32, "Fourier operator"),
    ("fno-2d", 32, "Fourier operator"),
    ("lstm-lm", 32, "recurrent (CPU)"),
    ("gru-classifier", 32, "recurrent (CPU)"),
    ("moe-grouped-mm", 32, "mixture-of-experts"),
    ("efficientformer", 39, "hybrid, attention bias"),
    ("efficientvit", 39, "hybrid, attention bias"),
    ("levit", 39, "hybrid, attention bias"),
    ("mobilevit", 39, "hybrid"),
    ("mobilevit-v2", 39, "hybrid"),
    ("edgenext", 39, "hybrid, rounded division"),
    ("xcit", 39, "hybrid, rounded division"),
    ("coatnet", 39, "hybrid, relative bias"),
    ("poolformer", 39, "pooling mixer"),
    ("conformer", 39, "audio, depthwise 1-D"),
    ("quartznet", 39, "audio, depthwise 1-D"),
    ("tcn", 39, "dilated 1-D, weight norm"),
    ("afno", 39, "Fourier operator"),
    ("gcn", 39, "graph"),
    ("gat", 39, "graph"),
    ("diffusion-unet", 39, "generative"),
    ("vae", 39, "generative"),
    ("dw-deconv-segmenter", 39, "depthwise transposed"),
    ("quant-qat", 39, "quantisation, rounded division"),
    ("stft-frontend", 39, "audio, STFT"),
    ("moe-switch", 39, "mixture-of-experts"),
]
_LOSSES: dict[str, Loss] = {
    **generative.LOSSES,
    **sequence.LOSSES,
    "quartznet": grouped.ctc_loss,
    "fno-1d": _REGRESS,
    "fno-2d": _REGRESS,
    "afno": _REGRESS,
}
_BUILDERS = {
    **mobile.MODELS,
    **grouped.MODELS,
    **hybrid.MODELS,
    **mixers.MODELS,
    **operators.MODELS,
    **generative.MODELS,
    **sequence.MODELS,
}

TRUTH: list[TruthSpec] = [
    TruthSpec(name, issue, group, _BUILDERS[name], _LOSSES.get(name, _CLASSIFY))
    for name, issue, group in _ROWS
]
"""Every added architecture, in run order (issue #32's first, then #39's)."""

BEFORE_AFTER = ("efficientnet_b0", "convmixer", "ghostnet", "fastvit", "xception", "convnext-v2")
"""Issue #32's six models with before/after training totals (EfficientNet-B0 from torchvision)."""


def by_name() -> dict[str, TruthSpec]:
    """The added architectures keyed by name."""
    return {spec.name: spec for spec in TRUTH}
