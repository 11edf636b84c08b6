"""Native Transformer rows in ``crawl_module``: ownership, tokens, failures (spec §11.5, §12–§16)."""

from __future__ import annotations

import json
import math

import pytest
import torch
from torch import nn

from torchscan import IncompleteAnalysisError, ModuleHandler, crawl_module

ALL = ("module_flops", "macs", "dmas", "receptive_field", "effective_stride", "effective_padding")
SPATIAL = ALL[3:]


def _layer(report, path, call_index=0):
    return next(l for l in report["layers"] if l["path"] == path and l["call_index"] == call_index)


def _total(report, name):
    result = report["totals"][name]
    return result["status"], result["known_value"]


def _codes(report):
    return {(d["code"], d["metric"], d.get("path")) for d in report["diagnostics"]}


def _encoder(layers=1, **kwargs):
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True, **kwargs)
    return nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)


# --- §11.5 custom head on a native encoder --------------------------------------------------------


class SineHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.projection = nn.Linear(4, 2, bias=False)

    def forward(self, x, *, scale, tag):
        return {"logits": (torch.sin(self.projection(x)) * scale,), "tag": tag}


class EncoderWithHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = _encoder()
        self.head = SineHead()

    def forward(self, x, mask=None, *, scale, tag):
        return self.head(self.encoder(x, mask=mask), scale=scale, tag=tag)


HEAD_CALLS: list = []


def estimate_sine_head(call):
    """Per output element: 4 multiplies + 3 adds, 1 sine, 1 scale multiply; inclusive of the projection."""
    HEAD_CALLS.append(call)
    x = call.args[0]
    out = call.output["logits"][0].numel()
    weight = call.module.projection.weight.numel()
    dmas = x.numel() + weight + out + 2 * out + 2 * out
    return {
        "module_flops": 9 * out,
        "macs": 4 * out,
        "dmas": dmas,
        "receptive_field": 1,
        "effective_stride": 1,
        "effective_padding": 0,
    }


HEAD = {SineHead: ModuleHandler(estimate_sine_head, frozenset(ALL))}
KWARGS = {"scale": 0.5, "tag": "demo"}


def test_11_5_custom_head_on_native_encoder():
    HEAD_CALLS.clear()
    report = crawl_module(EncoderWithHead(), args=(torch.ones(1, 3, 4),), kwargs=KWARGS, custom_modules=HEAD)
    assert len(HEAD_CALLS) == 1
    encoder = _layer(report, "encoder")
    values = {k: (v["status"], v["value"], v["scope"]) for k, v in encoder["metrics"].items() if k in ALL}
    assert values == {
        "module_flops": ("complete", 1224, "subtree"),
        "macs": ("complete", 504, "subtree"),
        "dmas": ("complete", 912, "subtree"),
        **{name: ("unavailable", None, "subtree") for name in SPATIAL},
    }
    assert all(encoder["metrics"][name]["method"] == "not_applicable" for name in SPATIAL)
    assert encoder["metric_ownership"] == dict.fromkeys(ALL, "subtree")
    tokens = encoder["token_dependencies"]
    assert tokens["status"] == "complete"
    assert tokens["sources"] == [
        {"arguments": ["src"], "sequence_axis": 1, "length": 3, "relation": {"kind": "all"}}
    ]
    assert encoder["parameters"]["trainable"] == 0  # own tensors only; the layers hold the 172
    head = _layer(report, "head")
    assert {k: v["value"] for k, v in head["metrics"].items() if k in ALL[:3]} == {
        "module_flops": 54,
        "macs": 24,
        "dmas": 50,
    }
    projection = _layer(report, "head.projection")
    assert projection["parameters"]["trainable"] == 8
    assert not set(projection["metrics"]) & set(ALL)
    assert projection["metric_owners"] == {key: {"path": "head", "call_index": 0} for key in ALL}
    assert [_total(report, n) for n in ("module_flops", "macs", "dmas", "parameters")] == [
        ("complete", 1278),
        ("complete", 528),
        ("complete", 962),
        ("complete", 180),
    ]
    assert report["diagnostics"] == []
    assert "demo" not in json.dumps(report)


def test_11_5_causal_mask():
    causal = torch.ones(3, 3, dtype=torch.bool).triu(1)
    report = crawl_module(
        EncoderWithHead(), args=(torch.ones(1, 3, 4), causal), kwargs=KWARGS, custom_modules=HEAD
    )
    # Module estimates carry no diagnostic (operator coverage of PyTorch's mask checks is separate).
    assert not [d for d in report["diagnostics"] if "path" in d]
    relation = _layer(report, "encoder")["token_dependencies"]["sources"][0]["relation"]
    assert relation == {"kind": "prefix"}
    assert _total(report, "dmas") == ("complete", 962 + 45)  # 9 + 2·18
    assert _total(report, "macs") == ("complete", 528)


def test_11_5_structure_mode():
    HEAD_CALLS.clear()
    report = crawl_module(
        EncoderWithHead(), args=(torch.ones(1, 3, 4),), kwargs=KWARGS, custom_modules=HEAD, mode="structure"
    )
    assert HEAD_CALLS == []
    assert report["totals"]["parameters"]["value"] == 180
    assert all("token_dependencies" not in l for l in report["layers"])


# --- ownership of native subtrees ----------------------------------------------------------------


def test_only_outermost_native_call_is_estimated():
    # Sequence-first layout takes the slow path, so every child forward is observed.
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0)
    model = nn.Sequential(nn.TransformerEncoder(layer, 2, enable_nested_tensor=False))
    report = crawl_module(model, args=(torch.ones(3, 1, 4),), strict=True)
    stack = _layer(report, "0")
    assert stack["metrics"]["macs"]["value"] == 1008
    assert stack["token_dependencies"]["output"] == {"sequence_axis": 0, "length": 3}
    rows = [l for l in report["layers"] if l["path"].startswith("0.")]
    assert {l["path"] for l in rows} >= {"0.layers.0", "0.layers.0.self_attn", "0.layers.1.linear1"}
    for row in rows:
        assert row["metric_owners"] == {key: {"path": "0", "call_index": 0} for key in ALL}
        assert not set(row["metrics"]) & set(ALL)
        assert "token_dependencies" not in row and "metric_ownership" not in row
    assert _total(report, "macs") == ("complete", 1008)
    assert report["diagnostics"] == []  # the MHA frame's functional work belongs to the owner


def test_transformer_root_rows_and_parameters():
    model = nn.Transformer(4, 2, 1, 1, 8, dropout=0.0, batch_first=True)
    report = crawl_module(model, args=(torch.ones(1, 3, 4), torch.ones(1, 2, 4)), strict=True)
    root = _layer(report, "")
    assert [root["metrics"][n]["value"] for n in ALL[:3]] == [2694, 1088, 2144]
    assert len(report["layers"]) > 1  # observed child calls are recorded, not one atomic row
    assert report["totals"]["parameters"]["value"] == sum(p.numel() for p in model.parameters())
    assert [s["arguments"] for s in root["token_dependencies"]["sources"]] == [["tgt"], ["src"]]


def test_standalone_attention_with_returned_weights():
    mha = nn.MultiheadAttention(4, 2, batch_first=True)
    x = torch.ones(1, 3, 4)
    report = crawl_module(mha, args=(x, x, x), strict=True)
    assert [_total(report, n)[1] for n in ALL[:3]] == [606, 264, 479]


def test_gelu_layer_complete_with_flops_decision():
    report = crawl_module(_encoder(activation="gelu"), args=(torch.ones(1, 3, 4),), strict=True)
    assert _total(report, "module_flops") == ("complete", 1224 + 4 * 24)


def test_subclass_of_native_type_is_unavailable_but_owned():
    class MyAttention(nn.MultiheadAttention):
        pass

    x = torch.ones(1, 3, 4)
    report = crawl_module(MyAttention(4, 2, batch_first=True), args=(x, x, x))
    root = _layer(report, "")
    assert all(root["metrics"][n]["status"] == "unavailable" for n in ALL)
    assert root["token_dependencies"]["status"] == "unavailable"
    codes = _codes(report)
    assert ("module_metric_error", "macs", "") in codes
    assert ("unsupported_token_dependencies", "token_dependencies", "") in codes
    assert report["totals"]["macs"]["status"] == "unavailable"  # children never fill the gap
    with pytest.raises(IncompleteAnalysisError):
        crawl_module(MyAttention(4, 2, batch_first=True), args=(x, x, x), strict=True)


def test_unsupported_token_analysis_keeps_costs():
    mask = torch.tensor([[False, True, False], [True, False, False], [False, False, False]])
    report = crawl_module(_encoder(), args=(torch.ones(1, 3, 4),), kwargs={"mask": mask})
    stack = _layer(report, "")
    assert stack["metrics"]["macs"]["value"] == 504
    assert stack["token_dependencies"] == {
        "status": "unavailable",
        "scope": "module_call",
        "method": "torchscan_token_dependency_v1",
        "assumptions": [],
    }
    (entry,) = [d for d in report["diagnostics"] if d["code"] == "unsupported_token_dependencies"]
    assert "canonical causal" in entry["message"]
    assert _total(report, "macs") == ("complete", 504)


def test_meta_device_model():
    with torch.device("meta"):
        model = nn.Transformer(4, 2, 1, 1, 8, dropout=0.0, batch_first=True)
        src, tgt = torch.empty(1, 3, 4), torch.empty(1, 2, 4)
        attention = nn.MultiheadAttention(4, 2, batch_first=True)
        mask = torch.zeros(3, 3)
    report = crawl_module(model, args=(src, tgt))
    assert [_total(report, n)[1] for n in ALL[:3]] == [2694, 1088, 2144]
    assert _layer(report, "")["token_dependencies"]["status"] == "complete"
    # PyTorch's own stacks read mask values (causal detection), so the masked meta case is shown on
    # a standalone attention: costs stay complete, the value-dependent token analysis does not.
    report = crawl_module(attention, args=(src, src, src), kwargs={"attn_mask": mask, "need_weights": False})
    assert [_total(report, n)[1] for n in ALL[:3]] == [606, 264, 497]
    assert _layer(report, "")["token_dependencies"]["status"] == "unavailable"
    assert any("observable mask" in d["message"] for d in report["diagnostics"])


# --- caller handlers on native types (late ownership, §5.4) ---------------------------------------


def estimate_layer_flops(call):
    return {"module_flops": 1000}


def test_caller_handler_on_native_type_falls_back_with_late_ownership():
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0)  # sequence-first: slow path
    handlers = {nn.TransformerEncoderLayer: ModuleHandler(estimate_layer_flops)}
    report = crawl_module(layer, args=(torch.ones(3, 1, 4),), custom_modules=handlers)
    root = _layer(report, "")
    assert root["metrics"]["module_flops"]["value"] == 1000
    assert root["metrics"]["module_flops"]["scope"] == "module_call"
    assert root["metrics"]["macs"]["value"] == 504
    assert root["metrics"]["macs"]["scope"] == "subtree"
    assert root["metric_ownership"] == {"module_flops": "module_call", **dict.fromkeys(ALL[1:], "subtree")}
    assert root["token_dependencies"]["status"] == "complete"
    linear1 = _layer(report, "linear1")
    # The caller's module_call field still adds to the children's values; the rest is owned late.
    assert linear1["metrics"]["module_flops"]["status"] == "complete"
    assert linear1["metric_owners"] == {key: {"path": "", "call_index": 0} for key in ALL[1:]}
    assert "metric_ownership" not in linear1
    assert _total(report, "macs") == ("complete", 504)
    flops = report["totals"]["module_flops"]
    assert flops["method"].startswith("sum_module_estimates[custom_module_handler:")
    attention = _layer(report, "self_attn")
    assert "macs" not in attention["metrics"]


def test_caller_receptive_field_skips_token_analysis():
    def estimate(call):
        return {"receptive_field": 3, "effective_stride": 1, "effective_padding": 0}

    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0)
    report = crawl_module(
        layer,
        args=(torch.ones(3, 1, 4),),
        custom_modules={nn.TransformerEncoderLayer: ModuleHandler(estimate)},
    )
    root = _layer(report, "")
    assert "token_dependencies" not in root
    assert root["metrics"]["receptive_field"]["value"] == 3
    assert root["metrics"]["macs"]["value"] == 504


# --- failed native forwards (§8) -----------------------------------------------------------------


def test_failed_native_forward_inside_catching_parent():
    class Catching(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = nn.MultiheadAttention(4, 2, batch_first=True)
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            try:
                self.attn(x, torch.ones(1, 3, 5), x)  # wrong key width: PyTorch raises
            except (RuntimeError, AssertionError):
                pass
            return self.lin(x)

    report = crawl_module(Catching(), args=(torch.ones(1, 3, 4),))
    attn = _layer(report, "attn")
    assert attn["output"] == {"kind": "failed"}
    assert all(attn["metrics"][n]["method"] == "forward_failed" for n in ALL)
    assert all(attn["metrics"][n]["scope"] == "subtree" for n in ALL)
    assert attn["token_dependencies"]["status"] == "unavailable"
    assert ("module_forward_error", "calls", "attn") in _codes(report)
    assert "metric_owners" not in _layer(report, "lin")
    assert _total(report, "macs") == ("partial", 48)  # the successful Linear only


def test_missing_activation_tensor():
    # A native call that returns no tensor cannot occur with native forwards; the handler still
    # refuses to guess. Exercised directly on the built-in handler.
    from torchscan.analysis.crawl.handlers import estimate_native
    from torchscan.extensions import ModuleCall

    mha = nn.MultiheadAttention(4, 2, batch_first=True).eval()
    outcome = estimate_native(ModuleCall(mha, (), {}, None), frozenset(ALL), "p")
    assert all(outcome.metrics[n]["status"] == "unavailable" for n in ALL)
    assert {d["code"] for d in outcome.diagnostics} == {
        "missing_metric_tensor",
        "unsupported_token_dependencies",
    }
    assert outcome.token_dependencies is not None and outcome.token_dependencies["status"] == "unavailable"


def test_float_causal_mask_from_pytorch_helper():
    mask = nn.Transformer.generate_square_subsequent_mask(3)
    assert math.isinf(mask[0, 1].item())
    report = crawl_module(_encoder(), args=(torch.ones(1, 3, 4),), kwargs={"mask": mask, "is_causal": True})
    assert _layer(report, "")["token_dependencies"]["sources"][0]["relation"] == {"kind": "prefix"}
