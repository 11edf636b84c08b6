"""measure_flops(bytes=True): operand bytes per operator call, hand-computed (generation.md 1)."""

from __future__ import annotations

import json
import warnings

import pytest
import torch
from torch import nn

from torchscan import measure_flops
from torchscan.report.validate.operators import validate_flop_report

BYTES_METHOD = "torchscan_operator_bytes"
F32 = 4


def byte_result(status, value):
    return {
        "status": status,
        "value": value if status == "complete" else None,
        "known_value": value,
        "unit": "bytes",
        "scope": "workload",
        "method": BYTES_METHOD,
    }


@pytest.mark.parametrize("mode", [torch.no_grad, torch.inference_mode, torch.enable_grad])
def test_linear_reads_input_weight_bias_and_writes_output(mode):
    linear, x = nn.Linear(16, 32), torch.ones(4, 16)
    with mode():
        report = measure_flops(lambda: linear(x), bytes=True)
    # addmm reads the bias, the input and the transposed weight view, and writes the output;
    # the transpose itself is a view and moves nothing
    expected = 32 * F32 + 4 * 16 * F32 + 32 * 16 * F32 + 4 * 32 * F32
    assert expected == 2944
    assert report["operator_bytes"] == byte_result("complete", 2944)
    assert report["by_operator_bytes"] == {"aten.addmm": 2944, "aten.t": 0}
    assert report["total"]["value"] == 2 * 4 * 16 * 32  # FLOPs unchanged by bytes=True
    validate_flop_report(json.loads(json.dumps(report)))


def test_views_move_nothing_and_copies_and_indexing_count():
    big, index = torch.ones(100, 16), torch.tensor([0, 2])

    def workload():
        big.view(1600)
        big.t()
        big.unsqueeze(0).expand(2, 100, 16)
        big.split(50)
        big[:4].clone()  # the view's 4 rows, not the storage's 100: read 256, write 256
        big[index]  # the whole source (6400), the index (16) and the 2 gathered rows (128)

    report = measure_flops(workload, bytes=True)
    assert report["by_operator_bytes"] == {
        "aten.clone": 2 * 4 * 16 * F32,
        "aten.expand": 0,
        "aten.index": 100 * 16 * F32 + 2 * 8 + 2 * 16 * F32,
        "aten.slice": 0,
        "aten.split": 0,
        "aten.t": 0,
        "aten.unsqueeze": 0,
        "aten.view": 0,
    }
    assert report["operator_bytes"] == byte_result("complete", 512 + 6544)
    # indexing and copies are ignored for FLOPs, not for bytes
    assert report["total"] == {**report["total"], "status": "complete", "value": 0}
    assert set(report["ignored_operators"]) >= {"aten.clone", "aten.index"}


def test_out_argument_is_written_once_and_in_place_destination_read_and_written():
    a, b, c = torch.ones(4), torch.ones(4), torch.empty(4)
    out_report = measure_flops(lambda: torch.add(a, b, out=c), bytes=True)
    assert out_report["by_operator_bytes"] == {"aten.add": 3 * 4 * F32}
    in_place = measure_flops(lambda: a.add_(b), bytes=True)
    assert in_place["by_operator_bytes"] == {"aten.add_": 3 * 4 * F32}


def test_sparse_operand_is_partial_with_diagnostic_and_flops_stay_complete():
    sparse = torch.eye(3).to_sparse()
    report = measure_flops(lambda: sparse.to_dense(), bytes=True)
    assert report["operator_bytes"] == byte_result("partial", 3 * 3 * F32)  # the dense output only
    assert report["total"]["status"] == "complete"
    assert [(d["code"], d["metric"], d.get("operator")) for d in report["diagnostics"]] == [
        ("unsupported_operator_bytes", "operator_bytes", "aten._to_dense")
    ]
    validate_flop_report(report)


def test_nested_operand_is_partial():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the prototype nested-tensor API warns
        nested = torch.nested.nested_tensor([torch.ones(2, 3), torch.ones(4, 3)])
    report = measure_flops(lambda: nested * 2, bytes=True)
    assert report["operator_bytes"]["status"] == "partial"
    assert ("unsupported_operator_bytes", "aten.mul") in {
        (d["code"], d.get("operator")) for d in report["diagnostics"]
    }


def test_meta_tensors_are_sized_without_values():
    with torch.device("meta"):
        linear, x = nn.Linear(16, 32), torch.ones(4, 16)
    report = measure_flops(lambda: linear(x), bytes=True)
    assert report["operator_bytes"] == byte_result("complete", 2944)


def test_default_report_has_no_byte_keys_and_by_step_alone_has_no_per_operator_bytes():
    linear, x = nn.Linear(16, 32), torch.ones(4, 16)
    plain = measure_flops(lambda: linear(x))
    assert not {"operator_bytes", "by_operator_bytes", "by_step", "outside_steps"} & set(plain)
    stepped = measure_flops(lambda: linear(x), modules=linear, by_step=True)
    assert stepped["operator_bytes"] == byte_result("complete", 2944)
    assert "by_operator_bytes" not in stepped
    assert stepped["total"] == plain["total"] and stepped["by_operator"] == plain["by_operator"]


@pytest.mark.parametrize(
    ("key", "value"), [("bytes", "yes"), ("bytes", 1), ("by_step", None), ("by_step", 1)]
)
def test_flags_must_be_bools_before_the_workload_runs(key, value):
    calls = []
    with pytest.raises(TypeError, match=f"{key} must be a bool"):
        measure_flops(lambda: calls.append(1), **{key: value})
    assert calls == []


def test_wrapper_subclass_operand_is_partial():
    two_tensor = pytest.importorskip("torch.testing._internal.two_tensor")
    wrapped = two_tensor.TwoTensor(torch.ones(3), torch.ones(3))  # stores two tensors behind one view
    report = measure_flops(lambda: wrapped * 2, bytes=True)
    assert report["operator_bytes"] == byte_result("partial", 0)
    assert report["total"]["status"] == "complete"  # bytes never change the FLOP status
    assert [d["code"] for d in report["diagnostics"]] == ["unsupported_operator_bytes"]
