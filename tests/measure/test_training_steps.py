"""Acceptance of training-and-hardware.md 4: full training steps of the zoo's training subset.

One step = forward with the loss, ``loss.backward()``, ``AdamW.step()`` (its default implementation:
the per-parameter loop on CPU) and ``zero_grad``, measured once after a warm-up step. Operator FLOPs
and every phase must be complete and the phases must sum exactly to the total; the transformer steps
(matmul-dominated) must have backward ÷ forward within 1.9–2.1. Tiny configs keep this fast; the
torchvision and transformers models skip cleanly when those packages are absent.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from torchscan.measure.flops import measure_flops
from torchscan.report.validate import check_phases

Step = tuple[nn.Module, Callable[[], torch.Tensor]]


def small_cnn() -> Step:
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(16, 10),
    )
    images, labels = torch.randn(2, 3, 16, 16), torch.tensor([1, 3])
    return model, lambda: F.cross_entropy(model(images), labels)


def resnet18() -> Step:
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None)
    images, labels = torch.randn(1, 3, 64, 64), torch.tensor([1])
    return model, lambda: F.cross_entropy(model(images), labels)


IDS = torch.tensor([[5, 17, 42, 8, 99, 3, 61, 20], [7, 7, 13, 54, 2, 88, 31, 0]])


def bert_tiny() -> Step:
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=100,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=16,
    )
    model = transformers.BertForSequenceClassification(config)
    labels = torch.tensor([0, 1])
    return model, lambda: model(input_ids=IDS, labels=labels).loss


def gpt2_tiny() -> Step:
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=100,
        n_embd=32,
        n_layer=2,
        n_head=2,
        n_positions=16,
        use_cache=False,
        bos_token_id=0,
        eos_token_id=0,
    )
    model = transformers.GPT2LMHeadModel(config)
    return model, lambda: model(input_ids=IDS, labels=IDS).loss


def llama_tiny() -> Step:
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=100,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        intermediate_size=64,
        max_position_embeddings=16,
        use_cache=False,
    )
    model = transformers.LlamaForCausalLM(config)
    return model, lambda: model(input_ids=IDS, labels=IDS).loss


def vit_tiny() -> Step:
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.ViTConfig(
        image_size=16,
        patch_size=4,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=3,
    )
    model = transformers.ViTForImageClassification(config)
    pixels, labels = torch.randn(2, 3, 16, 16), torch.tensor([0, 2])
    return model, lambda: model(pixel_values=pixels, labels=labels).loss


MODELS: dict[str, tuple[Callable[[], Step], bool]] = {
    # name: (builder, transformer step whose backward ÷ forward must be within 1.9–2.1)
    "small-cnn-bn": (small_cnn, False),
    "resnet18-64": (resnet18, False),
    "bert-tiny": (bert_tiny, True),
    "gpt2-tiny": (gpt2_tiny, True),
    "llama-tiny": (llama_tiny, True),
    "vit-tiny": (vit_tiny, True),
}


def training_step(model: nn.Module, loss: Callable[[], torch.Tensor]) -> Callable[[], None]:
    optimizer = torch.optim.AdamW(model.parameters())
    model.train()

    def step() -> None:
        loss().backward()
        optimizer.step()
        optimizer.zero_grad()

    return step


@pytest.mark.parametrize("name", list(MODELS))
def test_training_step_is_complete_in_every_phase(name: str) -> None:
    build, transformer = MODELS[name]
    step = training_step(*build())
    step()  # warm-up: optimizer state exists, as in every later step
    report = measure_flops(step)
    assert report["total"]["status"] == "complete", report["diagnostics"]
    phases = report["by_phase"]
    assert all(result["status"] == "complete" for result in phases.values())
    check_phases(report, "flops")
    assert sum(result["value"] for result in phases.values()) == report["total"]["value"]
    assert phases["recompute"]["value"] == 0
    # Optimizer.step's record_function bookkeeping is ignored with the profiler reason, not a gap
    profiler = {name for name in report["ignored_operators"] if name.startswith("profiler.")}
    assert profiler and all(
        report["ignored_operators"][name]["reason"] == "Profiler bookkeeping is excluded from FLOPs."
        for name in profiler
    )
    assert min(phases[name]["value"] for name in ("forward", "backward", "optimizer")) > 0
    if transformer:
        assert 1.9 <= phases["backward"]["value"] / phases["forward"]["value"] <= 2.1
