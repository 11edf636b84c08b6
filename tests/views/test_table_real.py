"""Issue 15 targets for the summary table on real architectures (random weights, no download).

Skipped cleanly where torchvision or transformers is not installed (the torch-only CI env).
"""

from __future__ import annotations

import contextlib
import io

import pytest
import torch

from torchscan import summary


def _printed(model: torch.nn.Module, **options: object) -> list[str]:
    with contextlib.redirect_stdout(io.StringIO()) as out:
        summary(model.eval(), **options)  # type: ignore[arg-type]
    return out.getvalue().splitlines()


def test_resnet50_fits_60_lines() -> None:
    models = pytest.importorskip("torchvision.models", reason="needs torchvision")
    lines = _printed(models.resnet50(), input_shape=(3, 64, 64))
    assert len(lines) <= 60
    assert any("(×5) 1 … 5" in line and "Bottleneck" in line for line in lines)  # layer3's repeats
    assert any("max_depth=4 shows every depth" in line for line in lines)


def test_bert_base_fits_60_lines() -> None:
    transformers = pytest.importorskip("transformers", reason="needs transformers")
    model = transformers.BertModel(transformers.BertConfig())
    lines = _printed(model, args=(torch.zeros(1, 16, dtype=torch.long),))
    assert len(lines) <= 60
    assert any("(×12) layer.0 … layer.11" in line and "BertLayer" in line for line in lines)


def test_gpt2_footer_names_conv1d_with_its_class_path_and_the_fix() -> None:
    transformers = pytest.importorskip("transformers", reason="needs transformers")
    model = transformers.GPT2Model(transformers.GPT2Config())
    lines = _printed(model, args=(torch.zeros(1, 8, dtype=torch.long),))
    start = next(i for i, line in enumerate(lines) if line.startswith("Diagnostics: "))
    group_lines = lines[start + 1 : -1]
    assert 1 <= len(group_lines) <= 6
    conv = [line for line in group_lines if "Conv1D (transformers.pytorch_utils.Conv1D)" in line]
    assert conv and "custom_modules={transformers.pytorch_utils.Conv1D: ModuleHandler(...)}" in conv[0]
