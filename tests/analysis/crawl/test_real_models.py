"""Real models built from configs with random weights (never downloaded)."""

from __future__ import annotations

import json

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from torchscan import crawl_module, measure_flops

transformers = pytest.importorskip("transformers")


def _tiny_models():
    from transformers import (
        BertConfig,
        BertModel,
        GPT2Config,
        GPT2Model,
        LlamaConfig,
        LlamaModel,
        T5Config,
        T5Model,
    )

    torch.manual_seed(0)
    bert = BertModel(
        BertConfig(
            hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, vocab_size=99
        )
    )
    gpt2 = GPT2Model(GPT2Config(n_embd=32, n_layer=2, n_head=2, vocab_size=99, n_positions=64))
    t5 = T5Model(T5Config(d_model=32, d_ff=64, num_layers=2, num_heads=2, d_kv=16, vocab_size=99))
    llama = LlamaModel(
        LlamaConfig(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=1,
            vocab_size=99,
            max_position_embeddings=64,
        )
    )
    ids = torch.ones(1, 8, dtype=torch.long)
    return {
        "llama": (llama, {"input_ids": ids}),
        "bert": (bert, {"input_ids": ids}),
        "gpt2": (gpt2, {"input_ids": ids}),
        "t5": (t5, {"input_ids": ids, "decoder_input_ids": ids}),
    }


MODELS = _tiny_models()


def _unique_parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


def _assert_totals_are_row_sums(report):
    for name in ("module_flops", "macs", "dmas"):
        rows = [l["metrics"][name] for l in report["layers"] if name in l["metrics"]]
        known = sum(r["known_value"] or 0 for r in rows)
        total = report["totals"][name]
        if total["status"] != "unavailable":
            assert total["known_value"] == known
        if all(r["status"] == "complete" for r in rows) and rows:
            assert total["status"] == "complete"
        else:
            assert total["status"] != "complete"
    # Rows of modules that never ran as a module call (views-3.md 1) have no operator frame.
    called = [l for l in report["layers"] if l.get("called", True)]
    assert all(
        "operator_flops_self" not in l["metrics"] for l in report["layers"] if not l.get("called", True)
    )
    self_sum = sum(l["metrics"]["operator_flops_self"]["known_value"] for l in called)
    assert self_sum == report["totals"]["operator_flops"]["known_value"]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_transformers_model_report(name):
    model, kwargs = MODELS[name]
    report = crawl_module(model, kwargs=kwargs)
    assert json.loads(json.dumps(report)) == report
    assert report["totals"]["parameters"]["value"] == _unique_parameter_count(model)
    _assert_totals_are_row_sums(report)
    # Operator FLOPs of the analysis equal a standalone measurement of the same forward.
    model.eval()
    with torch.no_grad():
        standalone = measure_flops(lambda: model(**kwargs))
    assert standalone["total"] == report["operator_flops"]["total"]
    assert standalone["by_operator"] == report["operator_flops"]["by_operator"]
    # real-models.md 1: composite frames (attention, residual adds) and leaves without a module
    # formula (Conv1D, GELUActivation, T5LayerNorm, LlamaRMSNorm, rotary embeddings) are estimated
    # from their operators, so every module total is complete.
    for metric in ("module_flops", "macs", "dmas"):
        assert report["totals"][metric]["status"] == "complete", (metric, report["diagnostics"])
    assert not [d for d in report["diagnostics"] if d["code"] == "unestimated_functional_work"]


def test_bert_passes_strict_mode():
    model, kwargs = MODELS["bert"]
    report = crawl_module(model, kwargs=kwargs, strict=True)
    assert report["totals"]["macs"]["value"] > 0


def test_structure_mode_on_transformers_model():
    model, kwargs = MODELS["bert"]
    report = crawl_module(model, kwargs=kwargs, mode="structure")
    assert report["totals"]["parameters"]["value"] == _unique_parameter_count(model)
    assert report["operator_flops"]["by_operator"] == {}


def test_torchvision_models_when_installed():
    models = pytest.importorskip("torchvision.models")
    for builder in (models.resnet18, models.mobilenet_v3_small):
        model = builder()
        report = crawl_module(model, (3, 64, 64))
        assert report["totals"]["parameters"]["value"] == _unique_parameter_count(model)
        _assert_totals_are_row_sums(report)
        # Residual adds and the squeeze-excitation scaling are functional work with formulas.
        for metric in ("module_flops", "macs", "dmas"):
            assert report["totals"][metric]["status"] == "complete", (metric, report["diagnostics"])


LEAVES = [
    lambda w: nn.Linear(w, w),
    lambda w: nn.ReLU(),
    lambda w: nn.Tanh(),
    lambda w: nn.Sigmoid(),
    lambda w: nn.LayerNorm(w),
    lambda w: nn.Dropout(0.3),
    lambda w: nn.Identity(),
    lambda w: nn.GELU(),
    lambda w: nn.SiLU(),
    lambda w: nn.Softmax(dim=-1),
]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, len(LEAVES) - 1), min_size=1, max_size=8), st.integers(1, 6))
def test_random_sequential_stacks_are_complete(choices, width):
    model = nn.Sequential(*(LEAVES[i](width) for i in choices))
    report = crawl_module(model, (3, width))
    for name in ("module_flops", "macs", "dmas", "operator_flops"):
        assert report["totals"][name]["status"] == "complete", (name, report["diagnostics"])
    _assert_totals_are_row_sums(report)
    rows = [l["metrics"]["module_flops"]["value"] for l in report["layers"] if "module_flops" in l["metrics"]]
    assert report["totals"]["module_flops"]["value"] == sum(rows)


class Mixed(nn.Module):
    """Supported modules plus functional work in the composite's own frame."""

    def __init__(self, width: int, ops: list[int]) -> None:
        super().__init__()
        self.lin = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)
        self.ops = ops

    def forward(self, x):
        for op in self.ops:
            if op == 0:
                x = self.lin(x)
            elif op == 1:
                x = x + self.norm(x)
            elif op == 2:
                x = torch.softmax(x, dim=-1) * 2
            else:
                x = torch.relu(x).sum(dim=-1, keepdim=True) + x
        return x


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=6), st.integers(1, 5))
def test_per_layer_self_operator_flops_sum_to_standalone_total(ops, width):
    model = Mixed(width, ops).eval()
    x = torch.rand(2, width)
    report = crawl_module(model, args=(x,))
    with torch.no_grad():
        standalone = measure_flops(lambda: model(x))
    self_sum = sum(
        l["metrics"]["operator_flops_self"]["known_value"] for l in report["layers"] if l.get("called", True)
    )
    assert self_sum == standalone["total"]["known_value"] == report["totals"]["operator_flops"]["known_value"]
    root = report["layers"][0]["metrics"]["operator_flops"]
    assert root["known_value"] == standalone["total"]["known_value"]
    assert root["status"] == standalone["total"]["status"]
