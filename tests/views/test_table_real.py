"""Issue 15 and 23 targets for the summary table on real architectures (random weights, no download).

Skipped cleanly where torchvision or transformers is not installed (the torch-only CI env). Short
sequences keep them fast; widths and parameter counts do not depend on the sequence length.
"""

from __future__ import annotations

import contextlib
import io
import re

import pytest
import torch

from torchscan import summary


def _printed(model: torch.nn.Module, **options: object) -> list[str]:
    with contextlib.redirect_stdout(io.StringIO()) as out:
        summary(model.eval(), **options)  # type: ignore[arg-type]
    return out.getvalue().splitlines()


def _row(lines: list[str], marker: str) -> list[str]:
    line = next(line for line in lines if marker in line)
    cut = lines[1].index("Type")  # the Layer cell keeps its tree glyphs
    return [line[:cut].strip()] + [cell.strip() for cell in line[cut:].split("  ") if cell.strip()]


def _fits(lines: list[str]) -> None:
    assert max(len(line) for line in lines) <= 120  # issue 23: the default table fits 120 columns
    assert not re.search(r"\d[eE][+-]?\d", "\n".join(lines))  # no e-notation anywhere
    start = next(i for i, line in enumerate(lines) if line.startswith("Diagnostics: "))
    groups = [line for line in lines[start + 1 : -1] if line.startswith("  ") and not line.startswith("   ")]
    # every diagnostic group names its metric(s) in brackets (wrapped lines continue it)
    assert all(re.search(r"\[[a-z_, ]+\]", " ".join(lines[start:-1])) for _ in groups)


def test_resnet50_fits_60_lines_and_120_columns() -> None:
    models = pytest.importorskip("torchvision.models", reason="needs torchvision")
    lines = _printed(models.resnet50(), input_shape=(3, 64, 64))
    assert len(lines) <= 60
    _fits(lines)
    assert lines[4].startswith("ResNet ")  # the root by its class name, as written
    assert "25,557,032" in _row(lines, "ResNet ")  # torchinfo's total
    assert "7,098,368" in _row(lines, "├─ layer3 ")  # torchinfo's layer3 (Sequential) figure
    assert "1,117,184" in _row(lines, "(×5) 1 … 5")  # one of layer3's five identical Bottlenecks
    assert "max_depth=4 shows every depth" in " ".join(" ".join(lines).split())


def test_bert_base_container_rows_are_inclusive() -> None:
    transformers = pytest.importorskip("transformers", reason="needs transformers")
    model = transformers.BertModel(transformers.BertConfig())
    lines = _printed(model, args=(torch.zeros(1, 16, dtype=torch.long),))
    assert len(lines) <= 60
    _fits(lines)
    layer = _row(lines, "(×12) layer.0 … layer.11")
    assert layer[1:3] == ["BertLayer", "[1, 16, 768]"] and layer[3] == "7,087,872"  # torchinfo's BertLayer
    assert _row(lines, "BertModel ")[3] == "109,482,240"
    assert _row(lines, "├─ encoder ")[3] == "85,054,464"  # 12 x 7,087,872


def test_gpt2_blocks_are_inclusive_and_the_footer_fits() -> None:
    transformers = pytest.importorskip("transformers", reason="needs transformers")
    model = transformers.GPT2Model(transformers.GPT2Config())
    lines = _printed(model, args=(torch.zeros(1, 8, dtype=torch.long),))
    _fits(lines)
    assert _row(lines, "(×12) h.0 … h.11")[3] == "7,087,872"  # torchinfo's GPT2Block
    root = _row(lines, "GPT2Model ")
    assert root[2] == "{[1, 8, 768], DynamicCache}" or root[2].startswith("{[1, 8, 768], …")
    assert "object" not in "\n".join(lines)


def test_llama_tiny_fits_and_names_the_cache_class() -> None:
    transformers = pytest.importorskip("transformers", reason="needs transformers")
    config = transformers.LlamaConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=1000,
    )
    lines = _printed(transformers.LlamaForCausalLM(config), args=(torch.zeros(1, 8, dtype=torch.long),))
    _fits(lines)
    # a decoder layer: 2 RMSNorms (64 each) + q, o (64 x 64) + k, v (64 x 32) + 3 MLP mats (64 x 128)
    assert _row(lines, "(×2) layers.0 … layers.1")[3] == f"{2 * 64 + 2 * 4096 + 2 * 2048 + 3 * 8192:,}"
    assert lines[4].startswith("LlamaForCausalLM ")
