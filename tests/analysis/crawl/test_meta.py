"""Meta-device models: every formula is shape-only, so analysis works without any data."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from torchscan import crawl_module


def test_cnn_on_meta_matches_cpu_counts():
    def build():
        return nn.Sequential(
            nn.Conv2d(3, 8, 3),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(8 * 15 * 15, 10),
        )

    cpu = crawl_module(build(), (3, 32, 32))
    with torch.device("meta"):
        meta_model = build()
    meta = crawl_module(meta_model, (3, 32, 32))
    assert meta["context"]["devices"] == ["meta"]
    for name in ("parameters", "module_flops", "macs", "dmas", "operator_flops"):
        assert meta["totals"][name] == cpu["totals"][name], name
    assert meta["totals"]["module_flops"]["status"] == "complete"


def test_small_llama_on_meta():
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=256,
    )
    with torch.device("meta"):
        model = transformers.LlamaModel(config)
    ids = torch.zeros(1, 16, dtype=torch.long, device="meta")
    report = crawl_module(model, kwargs={"input_ids": ids})
    expected = sum(p.numel() for p in model.parameters())
    assert report["totals"]["parameters"]["value"] == expected
    operator = report["totals"]["operator_flops"]
    assert operator["status"] in ("complete", "partial")
    assert operator["known_value"] > 0
    # Anything uncounted is named, never hidden.
    if operator["status"] == "partial":
        assert report["operator_flops"]["diagnostics"]
