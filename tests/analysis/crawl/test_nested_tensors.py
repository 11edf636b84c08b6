"""Nested tensors never break a crawl (truth.md 6, issue #39 item 2).

A call whose inputs or outputs are nested (ragged) tensors is described as ``nested_tensor`` (dtype,
device, ``requires_grad``; no made-up shape). Its module estimates are unavailable with a diagnostic
(no module formula describes ragged sizes) and so are the operator counts of its kernels, in
``crawl_module``, ``measure_flops`` and ``measure_memory``, with and without ``torch.no_grad``.
"""

from __future__ import annotations

import contextlib
import io
import json
import warnings
from typing import Any

import pytest
import torch
from torch import nn

import torchscan
from torchscan.report.validate import validate_report
from torchscan.report.validate.memory import validate_memory_report
from torchscan.report.validate.operators import validate_operator_report

NESTED_KEYS = ["device", "dtype", "kind", "requires_grad"]


def _encoder() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    """The issue's model: evaluation, nested-tensor packing, a padding mask that makes it ragged."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0, batch_first=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's note that nested tensors are a prototype
        model = nn.TransformerEncoder(layer, 1, enable_nested_tensor=True).eval()
    x = torch.rand(2, 5, 4)
    mask = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])  # lengths 5 and 3
    return model, x, mask


def _nested_nodes(meta: Any) -> list[dict[str, Any]]:
    """Every nested_tensor node of a metadata tree."""
    if isinstance(meta, dict):
        found = [meta] if meta.get("kind") == "nested_tensor" else []
        return found + [node for value in meta.values() for node in _nested_nodes(value)]
    if isinstance(meta, list):
        return [node for value in meta for node in _nested_nodes(value)]
    return []


def _codes(report: dict[str, Any]) -> set[tuple[str, str | None]]:
    return {(entry["code"], entry.get("operator")) for entry in report["diagnostics"]}


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
def test_the_nested_encoder_crawls_with_a_diagnostic_instead_of_a_crash(grad: bool) -> None:
    model, x, mask = _encoder()
    # crawl_module runs the forward under no_grad whatever the caller's mode, so both reach packing
    with torch.set_grad_enabled(grad):
        report = torchscan.crawl_module(model, args=(x,), kwargs={"src_key_padding_mask": mask})
    report = json.loads(json.dumps(report))
    assert validate_report(report) == "analysis"
    layer = next(row for row in report["layers"] if row["path"] == "layers.0")
    nodes = _nested_nodes(layer["input"]) + _nested_nodes(layer["output"])
    assert nodes  # the packed sequence reaches the layer as a nested tensor, and leaves it as one
    for node in nodes:
        assert sorted(node) == NESTED_KEYS
        assert node["dtype"] == "torch.float32" and node["device"] == "cpu" and node["requires_grad"] is False
    root = report["layers"][0]
    # The native encoder estimate does not describe the ragged (packed) algorithm: unavailable, named.
    assert root["metrics"]["module_flops"]["status"] == "unavailable"
    assert report["totals"]["module_flops"]["status"] == "unavailable"
    errors = [d for d in report["diagnostics"] if d["code"] == "module_metric_error" and d["path"] == ""]
    assert errors and all("nested" in d["message"] for d in errors)
    # The fused layer kernel got a nested operand: its FLOPs are uncounted and named, never 0.
    assert report["totals"]["operator_flops"]["status"] == "partial"
    assert ("unsupported_operator_formula", "aten._transformer_encoder_layer_fwd") in _codes(report)


def test_the_summary_table_shows_nested() -> None:
    model, x, mask = _encoder()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        torchscan.summary(model, args=(x,), kwargs={"src_key_padding_mask": mask})
    row = next(
        line
        for line in out.getvalue().splitlines()
        if "layers.0" in line or "TransformerEncoderLayer" in line
    )
    assert "nested" in row and "nested_tensor" not in row


def test_measure_flops_counts_what_it_can_under_no_grad() -> None:
    model, x, mask = _encoder()

    def forward() -> None:
        with torch.no_grad():
            model(x, src_key_padding_mask=mask)

    flops = torchscan.measure_flops(forward, modules=model, by_step=True, bytes=True)
    validate_operator_report(json.loads(json.dumps(flops)), "flops")
    assert flops["total"]["status"] == "partial"
    assert ("unsupported_operator_formula", "aten._transformer_encoder_layer_fwd") in _codes(flops)
    assert flops["operator_bytes"]["status"] == "partial"  # a nested operand's bytes are not sized
    assert flops["by_step"][0]["flops"]["known_value"] <= flops["total"]["known_value"]


def test_measure_flops_with_gradients_takes_the_dense_path() -> None:
    model, x, mask = _encoder()
    flops = torchscan.measure_flops(lambda: model(x, src_key_padding_mask=mask), modules=model)
    # With autograd recording, PyTorch runs the padded (dense) encoder: no nested tensor at all.
    assert not any(code == "unsupported_operator_formula" for code, _ in _codes(flops))
    assert flops["total"]["known_value"] > 0


def test_measure_memory_names_what_the_ledger_cannot_see() -> None:
    model, x, mask = _encoder()

    def forward() -> None:
        with torch.no_grad():
            model(x, src_key_padding_mask=mask)

    report = torchscan.measure_memory(forward, modules=model)
    validate_memory_report(json.loads(json.dumps(report)))
    # The packed buffer is counted; the nested tensor's size, stride and offset tensors are not.
    assert report["peak"]["status"] == "partial" and report["peak"]["known_value"] > 0
    subclass = [d for d in report["diagnostics"] if d["code"] == "tensor_subclass"]
    assert subclass and "nested tensor metadata" in subclass[0]["message"]


def _row_model() -> nn.Module:
    torch.manual_seed(0)
    layers = [nn.Linear(4, 8), nn.ReLU(), nn.LayerNorm(8), nn.GELU(), nn.Dropout(0.1), nn.Linear(8, 2)]
    return nn.Sequential(*layers, nn.Softmax(dim=-1)).eval()


_ROWS = [torch.rand(2, 4), torch.rand(3, 4)]  # two sequences of lengths 2 and 3: 5 rows of 4


def _ragged(layout: torch.layout) -> torch.Tensor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.nested.nested_tensor(_ROWS, layout=layout)


@pytest.mark.parametrize("layout", [torch.strided, torch.jagged], ids=["strided", "jagged"])
@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
def test_row_wise_leaves_count_their_rows_and_the_others_stay_unavailable(
    layout: torch.layout, grad: bool
) -> None:
    model = _row_model()
    with torch.set_grad_enabled(grad):
        report = torchscan.crawl_module(model, args=(_ragged(layout),))
    validate_report(json.loads(json.dumps(report)))
    assert _nested_nodes(report["inputs"])
    rows = {row["path"]: row for row in report["layers"][1:]}
    for row in rows.values():
        assert [node["kind"] for node in row["input"]["args"]] == ["nested_tensor"]
        assert row["output"]["kind"] == "nested_tensor"
    # Linear(4, 8) on 5 rows: 5 x 8 x (2 x 4 - 1 + 1) = 320 FLOPs, 4 x 40 = 160 MACs, 20 + 40 + 40 DMAs.
    first = rows["0"]["metrics"]
    assert [first[name]["value"] for name in ("module_flops", "macs", "dmas")] == [320, 160, 100]
    # Every row-wise leaf counts what the same rows laid out densely count (an independent run).
    dense = torchscan.crawl_module(model, args=(torch.cat(_ROWS).unsqueeze(0),))
    for row in dense["layers"][1:-1]:
        for name in ("module_flops", "macs", "dmas"):
            assert rows[row["path"]]["metrics"][name] == row["metrics"][name], (row["path"], name)
    # Softmax over a dimension: no dense equivalent is assumed; unavailable and named, never 0.
    softmax = rows["6"]["metrics"]
    assert [softmax[name]["status"] for name in ("module_flops", "macs", "dmas")] == ["unavailable"] * 3
    diagnosed = {
        (d["path"], d["metric"]) for d in report["diagnostics"] if d["code"] == "module_metric_error"
    }
    assert diagnosed == {("6", "module_flops"), ("6", "macs"), ("6", "dmas"), ("6", "receptive_field")}
    total = report["totals"]["module_flops"]  # a lower bound: the counted rows, the Softmax missing
    assert total["status"] == "partial"
    assert total["known_value"] == sum(
        row["metrics"]["module_flops"]["value"] for row in dense["layers"][1:-1]
    )
    assert report["totals"]["operator_flops"]["status"] == "partial"  # nested kernels are uncounted


@pytest.mark.parametrize("layout", [torch.strided, torch.jagged], ids=["strided", "jagged"])
@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
def test_nested_workloads_in_measure_flops_and_measure_memory(layout: torch.layout, grad: bool) -> None:
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    ragged = _ragged(layout)

    def step() -> None:
        with torch.set_grad_enabled(grad):
            out = model(ragged)
            if grad:
                (out.values() if layout == torch.jagged else torch.cat(out.unbind())).sum().backward()

    flops = torchscan.measure_flops(step)
    assert flops["total"]["status"] == "partial"
    assert ("unsupported_operator_formula", "aten.linear") in _codes(flops)
    memory = torchscan.measure_memory(step, modules=model)
    validate_memory_report(json.loads(json.dumps(memory)))
    assert memory["peak"]["status"] == "partial"
    assert any(d["code"] == "tensor_subclass" for d in memory["diagnostics"])


def _analysis_with_output(output: dict[str, Any]) -> dict[str, Any]:
    report = torchscan.crawl_module(nn.Identity(), args=(torch.ones(1, 2),))
    report = json.loads(json.dumps(report))
    report["layers"][0]["output"] = output
    return report


@pytest.mark.parametrize(
    ("output", "message"),
    [
        (
            {
                "kind": "nested_tensor",
                "shape": [2, 3],
                "dtype": "torch.float32",
                "device": "cpu",
                "requires_grad": False,
            },
            "layers[0].output: unexpected shape",
        ),
        ({"kind": "nested_tensor", "device": "cpu", "requires_grad": False}, "missing dtype"),
        ({"kind": "nested_tensor", "dtype": 3, "device": "cpu", "requires_grad": False}, "output.dtype"),
        (
            {
                "kind": "tensor",
                "shape": [-1],
                "dtype": "torch.float32",
                "device": "cpu",
                "requires_grad": False,
            },
            "shape",
        ),
        ({"kind": "ragged"}, "output.kind"),
        ({"kind": "tuple", "items": [{"kind": "nested_tensor"}]}, "output.items[0]"),
    ],
)
def test_the_validator_keeps_nested_entries_shapeless(output: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=None) as caught:
        validate_report(_analysis_with_output(output))
    assert message in str(caught.value)


def test_a_valid_nested_entry_passes_the_validator_and_renders() -> None:
    entry = {"kind": "nested_tensor", "dtype": "torch.float32", "device": "cpu", "requires_grad": True}
    report = _analysis_with_output(entry)
    assert validate_report(report) == "analysis"
    html = torchscan.render_report(report)
    assert "nested" in html
