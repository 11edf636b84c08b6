"""Every parameter in a row (views-3.md 1): rows of modules that never ran, and shares of native estimates."""

from __future__ import annotations

import json
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

from torchscan import crawl_module
from torchscan.demo import build_transformer
from torchscan.modules import module_dmas, module_flops, module_macs
from torchscan.report.validate import validate_analysis_report

COMPUTE = ("module_flops", "macs", "dmas")


def _row(report: dict[str, Any], path: str, call_index: int = 0) -> dict[str, Any]:
    return next(l for l in report["layers"] if l["path"] == path and l["call_index"] == call_index)


def _own_params(layer: dict[str, Any]) -> int:
    return layer["parameters"]["trainable"] + layer["parameters"]["frozen"]


def _rows_sum(report: dict[str, Any]) -> int:
    return sum(_own_params(layer) for layer in report["layers"])


def _inclusive_share(report: dict[str, Any], path: str, field: str) -> int:
    """The row's attribution plus every row below it (by path) that has one."""
    return sum(
        layer["attribution"][field]["value"]
        for layer in report["layers"]
        if (path == "" or layer["path"] == path or layer["path"].startswith(path + "."))
        and "attribution" in layer
    )


# --- the README demo's fused encoder --------------------------------------------------------------


def test_demo_transformer_rows_hold_every_layer_parameter_and_its_flops() -> None:
    model, shape = build_transformer()
    report = json.loads(json.dumps(crawl_module(model, shape)))
    validate_analysis_report(report)
    # Per layer (E 32, F 64): in_proj 3·32·32 + 96 = 3,168; out_proj 32·32 + 32 = 1,056;
    # linear1 32·64 + 64 = 2,112; linear2 64·32 + 32 = 2,080; two LayerNorms 64 each: 8,544.
    for layer in ("layers.0", "layers.1"):
        assert _own_params(_row(report, f"{layer}.self_attn")) == 3168
        assert _own_params(_row(report, f"{layer}.self_attn.out_proj")) == 1056
        assert _own_params(_row(report, f"{layer}.linear1")) == 2112
        assert _own_params(_row(report, f"{layer}.linear2")) == 2080
        assert (
            _own_params(_row(report, f"{layer}.norm1")) == _own_params(_row(report, f"{layer}.norm2")) == 64
        )
    assert _rows_sum(report) == report["totals"]["parameters"]["value"] == 2 * 8544 == 17088
    # Module FLOPs of one layer, 16 tokens (extensions §15.5): attention 3·16·32·64 projections +
    # 512 scaling + 1,024·15 scores + (5·1,024 − 2·64) softmax + 512·31 values + 16·32·64 output
    # = 167,808; feed-forward 65,536 + 1,024 (ReLU) + 65,536; norms 2·(6·512 + 2·16 + 512 + 512);
    # residuals 2·512. Layer: 309,184; encoder 618,368 (the root's inclusive value).
    root = _row(report, "")
    assert root["metrics"]["module_flops"]["value"] == 618368
    assert root["attribution"]["module_flops"]["value"] == 0  # a stack's own frame adds nothing
    for layer in ("layers.0", "layers.1"):
        assert _inclusive_share(report, layer, "module_flops") == 309184
        assert _row(report, layer)["attribution"]["module_flops"]["value"] == 1024 + 1024  # residuals, ReLU
        assert _inclusive_share(report, f"{layer}.self_attn", "module_flops") == 167808
        assert _row(report, f"{layer}.self_attn.out_proj")["attribution"]["module_flops"]["value"] == 32768
        assert _row(report, f"{layer}.dropout")["attribution"]["module_flops"]["value"] == 0
    for field in COMPUTE:
        assert _inclusive_share(report, "", field) == report["totals"][field]["value"]


def test_not_called_rows_are_marked_and_covered_by_the_native_owner() -> None:
    model, shape = build_transformer()
    report = crawl_module(model, shape)
    rebuilt = [layer for layer in report["layers"] if not layer.get("called", True)]
    # The fused fast path runs each layer in one kernel: its 9 children, plus out_proj, never run.
    assert len(rebuilt) == 2 * 9
    for layer in rebuilt:
        assert layer["called"] is False
        assert layer["output"] == {"kind": "not_called"}
        assert layer["input"] == {"args": [], "kwargs": {}}
        assert layer["metrics"] == {
            "calls": {
                "status": "complete",
                "value": 0,
                "known_value": 0,
                "unit": "calls",
                "scope": "module_call",
                "method": "pytorch_hook",
            }
        }
        assert {ref["path"] for ref in layer["metric_owners"].values()} == {""}
    # Rows in call order: each not-called subtree follows its layer's call, in module order.
    paths = [layer["path"] for layer in report["layers"]]
    assert paths[:5] == [
        "",
        "layers.0",
        "layers.0.self_attn",
        "layers.0.self_attn.out_proj",
        "layers.0.linear1",
    ]


def test_fast_and_slow_paths_attribute_the_same_shares() -> None:
    model, shape = build_transformer()
    fast = crawl_module(model, shape)
    previous = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        slow = crawl_module(model, shape)
    finally:
        torch.backends.mha.set_fastpath_enabled(previous)
    assert len([l for l in slow["layers"] if l.get("called", True)]) > 3  # children really ran

    def shares(report: dict[str, Any]) -> dict[str, Any]:
        return {l["path"]: l["attribution"] for l in report["layers"] if "attribution" in l}

    assert shares(fast) == shares(slow)
    # the same rows (in call order on the slow path, in module order where they were rebuilt)
    assert sorted(l["path"] for l in fast["layers"]) == sorted(l["path"] for l in slow["layers"])
    assert _rows_sum(slow) == _rows_sum(fast) == 17088


# --- nn.MultiheadAttention called by a model ------------------------------------------------------


class AttentionModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(32, 4, batch_first=True)
        self.head = nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.attn(x, x, x, need_weights=False)[0])


def test_multihead_attention_parameters_are_all_in_rows() -> None:
    report = crawl_module(AttentionModel(), (5, 32))
    # MHA(32): 3·32·32 + 96 + 32·32 + 32 = 4,224; head 32·8 + 8 = 264: 4,488
    # (3,432 before out_proj had a row).
    assert report["totals"]["parameters"]["value"] == 4488
    assert _rows_sum(report) == 4488
    out_proj = _row(report, "attn.out_proj")
    assert out_proj["called"] is False and _own_params(out_proj) == 1056
    assert out_proj["metric_owners"]["module_flops"] == {"path": "attn", "call_index": 0}
    # The output projection's share is the Linear formula on 5 rows: 5·32·(2·32 − 1 + 1) = 10,240.
    assert out_proj["attribution"]["module_flops"]["value"] == 10240
    attn = _row(report, "attn")
    for field in COMPUTE:
        inclusive = attn["metrics"][field]["value"]
        assert attn["attribution"][field]["value"] + out_proj["attribution"][field]["value"] == inclusive
    # The totals still sum the rows' metrics (shares are inside the owner's value, never added again).
    assert report["totals"]["module_flops"]["value"] == attn["metrics"]["module_flops"]["value"] + 5 * 8 * 64


def test_a_shared_attention_called_twice_gets_an_out_proj_row_per_call() -> None:
    attn = nn.MultiheadAttention(8, 2, batch_first=True)

    class Twice(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attn = attn

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.attn(x, x, x, need_weights=False)[0]
            return self.attn(y, y, y, need_weights=False)[0]

    report = crawl_module(Twice(), (3, 8))
    first, second = _row(report, "attn.out_proj", 0), _row(report, "attn.out_proj", 1)
    assert _own_params(first) == 8 * 8 + 8 and _own_params(second) == 0
    assert second["parameters"]["shared"] is True
    assert first["metric_owners"]["macs"] == {"path": "attn", "call_index": 0}
    assert second["metric_owners"]["macs"] == {"path": "attn", "call_index": 1}
    assert first["attribution"]["macs"]["value"] == second["attribution"]["macs"]["value"] == 3 * 8 * 8
    assert _rows_sum(report) == report["totals"]["parameters"]["value"]


# --- the shares are the module formulas (a reference, not the analysis' own output) --------------


def _standalone(module: nn.Module, inputs: tuple[Any, ...]) -> tuple[int, int, int]:
    with torch.no_grad():
        output = module(*inputs)
    return (
        module_flops(module, inputs, output),
        module_macs(module, inputs, output),
        module_dmas(module, inputs, output),
    )


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    heads=st.sampled_from([1, 2]),
    width=st.sampled_from([2, 4]),
    hidden=st.sampled_from([3, 8]),
    tokens=st.integers(1, 4),
    batch=st.integers(1, 2),
    layers=st.integers(1, 2),
    batch_first=st.booleans(),
    norm_first=st.booleans(),
    bias=st.booleans(),
    activation=st.sampled_from(["relu", "gelu"]),
)
def test_every_share_equals_the_module_formula_of_its_part(
    heads: int,
    width: int,
    hidden: int,
    tokens: int,
    batch: int,
    layers: int,
    batch_first: bool,
    norm_first: bool,
    bias: bool,
    activation: str,
) -> None:
    """Each submodule's inclusive share equals its own module formula on a call of the same shapes."""
    embed = width * heads
    layer = nn.TransformerEncoderLayer(
        embed, heads, hidden, dropout=0.0, activation=activation, batch_first=batch_first,
        norm_first=norm_first, bias=bias,
    )  # fmt: skip
    model = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False).eval()
    shape = (batch, tokens, embed) if batch_first else (tokens, batch, embed)
    x = torch.rand(shape)
    report = crawl_module(model, args=(x,))
    validate_analysis_report(json.loads(json.dumps(report)))
    assert _rows_sum(report) == report["totals"]["parameters"]["value"]
    for index, encoder_layer in enumerate(model.layers):
        prefix = f"layers.{index}"
        parts: dict[str, tuple[nn.Module, tuple[Any, ...]]] = {
            prefix: (encoder_layer, (x,)),
            f"{prefix}.self_attn": (encoder_layer.self_attn, (x, x, x, None, False)),
            f"{prefix}.self_attn.out_proj": (encoder_layer.self_attn.out_proj, (x,)),
            f"{prefix}.linear1": (encoder_layer.linear1, (x,)),
            f"{prefix}.linear2": (encoder_layer.linear2, (torch.rand(*shape[:2], hidden),)),
            f"{prefix}.norm1": (encoder_layer.norm1, (x,)),
            f"{prefix}.norm2": (encoder_layer.norm2, (x,)),
            f"{prefix}.dropout": (encoder_layer.dropout, (x,)),
        }
        for path, (module, inputs) in parts.items():
            expected = _standalone(module, inputs)
            shares = tuple(_inclusive_share(report, path, f) for f in COMPUTE)
            if path.endswith(".dropout"):
                # Evaluation dropout: 0 FLOPs and MACs in both; the native DMA convention (§15.2)
                # counts no copy for it, where the standalone formula reads and writes the tensor.
                assert shares == (*expected[:2], 0), path
            else:
                assert shares == expected, path
    for field in COMPUTE:
        assert _inclusive_share(report, "", field) == report["totals"][field]["value"]


def test_transformer_shares_sum_to_the_inclusive_estimate() -> None:
    model = nn.Transformer(4, 2, 1, 1, 8, dropout=0.0, batch_first=True)
    report = crawl_module(model, args=(torch.ones(1, 3, 4), torch.ones(1, 2, 4)))
    # extensions §15.4–15.5: 2,694 FLOPs, 1,088 MACs, 2,144 DMAs, split over encoder and decoder.
    assert [_inclusive_share(report, "", f) for f in COMPUTE] == [2694, 1088, 2144]
    # The encoder layer of §15.5: 1,224 FLOPs (its stack adds the final LayerNorm: 6·12 + 2·3 + 24).
    assert _inclusive_share(report, "encoder.layers.0", "module_flops") == 1224
    assert _inclusive_share(report, "encoder", "module_flops") == 1224 + 102
    assert _rows_sum(report) == report["totals"]["parameters"]["value"]


def test_a_refused_native_estimate_is_not_split() -> None:
    class MyAttention(nn.MultiheadAttention):
        pass

    x = torch.ones(1, 3, 4)
    report = crawl_module(MyAttention(4, 2, batch_first=True), args=(x, x, x))
    assert not any("attribution" in layer for layer in report["layers"])
    out_proj = _row(report, "out_proj")
    assert out_proj["called"] is False and _own_params(out_proj) == 20


# --- modules outside native calls -----------------------------------------------------------------


class Functional(nn.Module):
    """Uses its child's weight directly (the child never runs) and holds a scale of its own."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.spare = nn.Sequential(nn.Linear(4, 2), nn.ReLU())
        self.scale = nn.Parameter(torch.ones(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.proj.weight, self.proj.bias) * self.scale


def test_unused_and_functionally_used_modules_get_rows_without_costs() -> None:
    report = crawl_module(nn.Sequential(Functional(), nn.ReLU()), (4,))
    validate_analysis_report(json.loads(json.dumps(report)))
    paths = [(l["path"], l.get("called", True)) for l in report["layers"]]
    # The not-called subtree follows its nearest called ancestor's call, in module order.
    assert paths == [
        ("", True),
        ("0", True),
        ("0.proj", False),
        ("0.spare", False),
        ("0.spare.0", False),
        ("0.spare.1", False),
        ("1", True),
    ]
    # proj 20, spare.0 10, the scale 4: 34 in all
    assert [_own_params(l) for l in report["layers"]] == [0, 4, 20, 0, 10, 0, 0]
    assert report["totals"]["parameters"]["value"] == 34
    for layer in report["layers"][2:6]:
        assert set(layer["metrics"]) == {"calls"} and "metric_owners" not in layer
    # The functional matmul is estimated in the frame that ran it (real-models.md 1), once:
    # 4·(2·4 − 1) + 4 bias adds + 4 multiplies by the scale = 36 module FLOPs.
    assert report["layers"][1]["metrics"]["module_flops"]["value"] == 36


def test_a_container_that_never_ran_but_holds_a_parameter_gets_a_row() -> None:
    class Holder(nn.Module):  # never called itself: its parent calls its child and reads its scale
        def __init__(self) -> None:
            super().__init__()
            self.inner = nn.Linear(4, 4)
            self.scale = nn.Parameter(torch.ones(4))

    class Parent(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.holder = Holder()
            self.blocks = nn.ModuleList([nn.ReLU()])  # never called, holds nothing: stays structural

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.blocks[0](self.holder.inner(x)) * self.holder.scale

    report = crawl_module(Parent(), (4,))
    assert [(l["path"], l.get("called", True)) for l in report["layers"]] == [
        ("", True),
        ("holder.inner", True),
        ("blocks.0", True),
        ("holder", False),
    ]
    assert _own_params(_row(report, "holder")) == 4
    assert _rows_sum(report) == 24


def test_structure_mode_also_rows_every_parameter() -> None:
    model, shape = build_transformer()
    report = crawl_module(model, shape, mode="structure")
    assert _rows_sum(report) == 17088
    assert not any("attribution" in layer or "metric_owners" in layer for layer in report["layers"])


# --- the invariant over random models -------------------------------------------------------------


class Tree(nn.Module):
    """A random module tree: each child is called, used functionally (its weights only) or unused."""

    def __init__(self, plan: list[Any], own: bool) -> None:
        super().__init__()
        self.modes = []
        for index, (kind, mode) in enumerate(plan):
            self.add_module(f"c{index}", _leaf(kind))
            self.modes.append(mode)
        if own:
            self.scale = nn.Parameter(torch.ones(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for child, mode in zip(self._modules.values(), self.modes, strict=True):
            if mode == "call":
                x = child(x)
            elif mode == "weights" and isinstance(child, nn.Linear):
                x = F.linear(x, child.weight, child.bias)
        return x * self.scale if hasattr(self, "scale") else x


class SelfAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(4, 2, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.attn(x, x, x, need_weights=False)[0]


def _leaf(kind: Any) -> nn.Module:
    if isinstance(kind, list):
        return Tree(kind, own=len(kind) % 2 == 1)
    return {
        "linear": lambda: nn.Linear(4, 4),
        "norm": lambda: nn.LayerNorm(4),
        "relu": nn.ReLU,
        "attention": SelfAttention,
        "encoder": lambda: nn.TransformerEncoder(
            nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True), 1, enable_nested_tensor=False
        ),
    }[kind]()


_KINDS = st.sampled_from(["linear", "norm", "relu", "attention", "encoder"])
_PLANS = st.recursive(
    st.lists(st.tuples(_KINDS, st.sampled_from(["call", "weights", "unused"])), min_size=1, max_size=3),
    lambda inner: st.lists(
        st.tuples(st.one_of(_KINDS, inner), st.sampled_from(["call", "weights", "unused"])),
        min_size=1,
        max_size=3,
    ),
    max_leaves=8,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=_PLANS, own=st.booleans(), mode=st.sampled_from(["full", "structure"]), tie=st.booleans())
def test_own_parameters_over_all_rows_sum_to_the_total(
    plan: list[Any], own: bool, mode: str, tie: bool
) -> None:
    torch.manual_seed(0)
    model = Tree(plan, own)
    if tie:  # the same module reachable twice: its tensors are counted once, in one row
        model.add_module("again", next(model.children()))
        model.modes.append("unused")
    report = crawl_module(model, args=(torch.rand(1, 3, 4),), mode=mode)
    validate_analysis_report(json.loads(json.dumps(report)))
    assert _rows_sum(report) == report["totals"]["parameters"]["value"]
    assert (
        sum(l["buffers"]["elements"] for l in report["layers"])
        == report["totals"]["buffer_elements"]["value"]
    )
    identities = [(l["path"], l["call_index"]) for l in report["layers"]]
    assert len(identities) == len(set(identities))
    for layer in report["layers"]:
        if not layer.get("called", True):
            assert layer["metrics"]["calls"]["value"] == 0 and "operator_flops_self" not in layer["metrics"]


@pytest.mark.parametrize("bad", [True, 0, "no"])
def test_the_validator_refuses_a_called_flag_other_than_false(bad: Any) -> None:
    report = json.loads(json.dumps(crawl_module(AttentionModel(), (5, 32))))
    report["layers"][0]["called"] = bad
    with pytest.raises(ValueError, match=r"layers\[0\]\.called"):
        validate_analysis_report(report)


def test_the_validator_checks_attributed_shares() -> None:
    report = json.loads(json.dumps(crawl_module(AttentionModel(), (5, 32))))
    index = next(i for i, l in enumerate(report["layers"]) if l["path"] == "attn.out_proj")
    share = report["layers"][index]["attribution"]["macs"]
    share["value"] = share["known_value"] = share["value"] + 1
    with pytest.raises(ValueError, match="must sum to the owner's complete inclusive value"):
        validate_analysis_report(report)
    report = json.loads(json.dumps(crawl_module(AttentionModel(), (5, 32))))
    head = next(l for l in report["layers"] if l["path"] == "head")
    head["attribution"] = {"macs": head["metrics"]["macs"]}
    with pytest.raises(ValueError, match="needs an inclusive owner"):
        validate_analysis_report(report)
    head["attribution"] = {"calls": head["metrics"]["calls"]}
    with pytest.raises(ValueError, match="attribution keys"):
        validate_analysis_report(report)
