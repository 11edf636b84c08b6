"""The same data in CSV (views-3.md 3): parsed back with the csv module, the sums match the report."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from torchscan import (
    crawl_module,
    measure_flops,
    measure_latency,
    measure_memory,
    profile_workload,
    render_report,
)
from torchscan.cli import main
from torchscan.demo import build_cnn, build_transformer
from torchscan.views.csv_report import ANALYSIS_COLUMNS, FLOP_COLUMNS, MEMORY_COLUMNS


def _rows(text: str) -> list[dict[str, str]]:
    assert text.endswith("\n") and not text.endswith("\n\n")
    return list(csv.DictReader(io.StringIO(text)))


def _int(cell: str) -> int:
    return int(cell)  # plain integers: no separators, no SI prefix, no e-notation


def _roundtrip(report: Any) -> Any:
    return json.loads(json.dumps(report))


@pytest.fixture(scope="module")
def transformer() -> dict[str, Any]:
    model, shape = build_transformer()
    return _roundtrip(crawl_module(model, shape))


def test_analysis_rows_sum_to_the_totals(transformer: dict[str, Any]) -> None:
    text = render_report(transformer, format="csv")
    assert text.splitlines()[0] == ",".join(ANALYSIS_COLUMNS)
    rows = _rows(text)
    layers = transformer["layers"]
    assert [(r["path"], _int(r["call_index"])) for r in rows] == [
        (l["path"], l["call_index"]) for l in layers
    ]
    totals = transformer["totals"]
    assert sum(_int(r["params_own"]) for r in rows) == totals["parameters"]["value"] == 17088
    assert sum(_int(r["trainable"]) for r in rows) == totals["trainable_parameters"]["value"]
    for metric in ("module_flops", "macs", "dmas", "operator_flops"):
        own = [r[f"{metric}_own"] for r in rows if r[f"{metric}_own"]]
        assert sum(map(_int, own)) == totals[metric]["value"], metric
        assert _int(rows[0][f"{metric}_incl"]) == totals[metric]["value"], metric  # the root holds all
        assert rows[0][f"{metric}_incl_status"] == "complete"
    # Each encoder layer: 309,184 module FLOPs and 8,544 parameters
    # (tests/analysis/crawl/test_not_called_rows.py).
    layer = next(r for r in rows if r["path"] == "layers.1")
    assert (_int(layer["module_flops_incl"]), _int(layer["params_incl"])) == (309184, 8544)


def test_not_called_rows_are_marked(transformer: dict[str, Any]) -> None:
    rows = _rows(render_report(transformer, format="csv"))
    out_proj = next(r for r in rows if r["path"] == "layers.0.self_attn.out_proj")
    assert out_proj["called"] == "false"
    assert out_proj["operator_flops_own"] == "" and out_proj["operator_flops_status"] == "not_called"
    # its share of the fused layer's estimate: the Linear formula on 16 rows, 16·32·64 = 32,768
    assert (out_proj["module_flops_own"], out_proj["module_flops_status"]) == ("32768", "complete")
    assert {r["called"] for r in rows} == {"true", "false"}


def test_unknown_values_are_empty_with_their_status_word() -> None:
    class Opaque(nn.Module):  # no module formula, and its operator has no functional formula
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.logcumsumexp(x, 1)

    report = _roundtrip(crawl_module(nn.Sequential(nn.Linear(4, 4), Opaque()), (4,)))
    rows = _rows(render_report(report, format="csv"))
    odd = next(r for r in rows if r["path"] == "1")
    assert (odd["module_flops_own"], odd["module_flops_status"]) == ("", "unavailable")
    root = rows[0]
    # the root's inclusive value is the known part only: 4·(2·4 − 1) + 4 = 32 for the Linear
    assert (root["module_flops_incl"], root["module_flops_incl_status"]) == ("32", "partial")
    assert root["module_flops_own"] == "" and root["module_flops_status"] == ""  # a container: no own value


def test_text_a_spreadsheet_would_run_is_quoted() -> None:
    model = nn.Sequential()
    model.add_module("=HYPERLINK(1)", nn.Linear(2, 2))
    rows = _rows(render_report(_roundtrip(crawl_module(model, (2,))), format="csv"))
    assert rows[1]["path"] == "'=HYPERLINK(1)"


def test_flop_report_rows() -> None:
    model, shape = build_cnn()
    x = torch.rand(1, *shape)
    with torch.no_grad():
        report = _roundtrip(measure_flops(lambda: model(x)))
    text = render_report(report, format="csv")
    assert text.splitlines()[0] == ",".join(FLOP_COLUMNS)
    rows = _rows(text)
    total = report["total"]["known_value"]
    groups: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        groups.setdefault(row["group"], []).append(row)
    assert _int(groups["total"][0]["flops"]) == total
    assert sum(_int(r["flops"]) for r in groups["operator"]) == total  # operators sum to the total
    assert sum(_int(r["flops"]) for r in groups["phase"]) == total  # so do the phases
    assert {r["status"] for r in groups["module"]} == {"inclusive"}  # labels nest: never summed
    assert all(_int(r["calls"]) > 0 and r["reason"] for r in groups["ignored"])
    assert len(groups["operator"]) == len(report["by_operator"])


def test_uncounted_operators_are_listed_without_a_number() -> None:
    x = torch.rand(2, 3)
    report = measure_flops(lambda: torch.logcumsumexp(x, 1))
    rows = _rows(render_report(report, format="csv"))
    (uncounted,) = [r for r in rows if r["group"] == "uncounted"]
    assert (uncounted["name"], uncounted["flops"], uncounted["status"]) == (
        "aten.logcumsumexp",
        "",
        "uncounted",
    )
    assert rows[0]["status"] == "partial"


def test_memory_report_rows() -> None:
    model, shape = build_cnn()
    x = torch.rand(1, *shape)

    def step() -> None:
        with torch.no_grad():
            model(x)

    report = _roundtrip(measure_memory(step, modules=model))
    text = render_report(report, format="csv")
    assert text.splitlines()[0] == ",".join(MEMORY_COLUMNS)
    rows = _rows(text)
    timeline = [r for r in rows if r["group"] == "timeline"]
    calls = [r for r in rows if r["group"] == "module"]
    assert len(timeline) == len(report["timeline"]) and len(calls) == len(report["by_module"])
    for row, point in zip(timeline, report["timeline"], strict=True):
        assert _int(row["live_total"]) == sum(point["by_category"].values())
    # the timeline always keeps the peak point (memory.md 2)
    assert max(_int(r["live_total"]) for r in timeline) == report["peak"]["known_value"]
    for row, call in zip(calls, report["by_module"], strict=True):
        assert (row["path"], _int(row["call_index"])) == (call["path"], call["call_index"])
        assert _int(row["allocated"]) == call["allocated"]["known_value"]


def test_benchmark_report_rows() -> None:
    report = _roundtrip(
        measure_latency(lambda: None, device="cpu", warmup=1, min_run_time=0.001, min_repeats=2)
    )
    rows = _rows(render_report(report, format="csv"))
    totals = {r["name"]: r for r in rows if r["group"] == "total"}
    assert set(totals) == set(report["totals"])
    assert float(totals["latency"]["value"]) == report["totals"]["latency"]["value"]
    blocks = [r for r in rows if r["group"] == "block"]
    assert [float(r["value"]) for r in blocks] == report["measurement"]["raw_times_seconds"]
    assert {r["name"] for r in rows if r["group"] == "context"} >= {"device", "torch_version", "work_unit"}


def test_format_and_option_errors(transformer: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="format must be one of 'html', 'svg', 'csv'"):
        render_report(transformer, format="xlsx")
    flops = measure_flops(lambda: torch.ones(2) + 1)
    assert "<html" in render_report(flops)  # a FlopReport has a page and a table (views-3.md 3-4)
    assert render_report(flops, format="csv").startswith("group,name,flops")
    profile = profile_workload(lambda: torch.ones(2) + 1, device="cpu")
    with pytest.raises(ValueError, match="format 'csv' is not available for a profile report"):
        render_report(profile, format="csv")
    with pytest.raises(ValueError, match="before= is not available for CSV"):
        render_report(transformer, format="csv", before=transformer)
    with pytest.raises(ValueError, match="metric= selects a view"):
        render_report(transformer, format="csv", metric="macs")
    broken = {**transformer, "layers": {}}
    with pytest.raises(ValueError, match="layers"):
        render_report(broken, format="csv")


def test_csv_is_deterministic_and_leaves_the_report_alone(transformer: dict[str, Any]) -> None:
    copy = json.loads(json.dumps(transformer))
    assert render_report(transformer, format="csv") == render_report(transformer, format="csv")
    assert transformer == copy


def test_cli_csv_outputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", "demo:cnn", "--csv", "-"]) == 0
    captured = capsys.readouterr()
    rows = _rows(captured.out)  # stdout holds the CSV alone; the table went to stderr
    assert rows[0]["type"] == "DemoCNN" and "Trainable params" in captured.err
    assert main(["flops", "demo:cnn", "--csv", str(tmp_path / "f.csv")]) == 0
    assert _rows((tmp_path / "f.csv").read_text())[0]["group"] == "total"
    assert main(["memory", "demo:cnn", "--csv", str(tmp_path / "m.csv")]) == 0
    assert {r["group"] for r in _rows((tmp_path / "m.csv").read_text())} == {"timeline", "module"}
    assert main(["scan", "demo:cnn", "--json", str(tmp_path / "r.json")]) == 0
    assert main(["render", str(tmp_path / "r.json"), "--csv", str(tmp_path / "r.csv")]) == 0
    assert len(_rows((tmp_path / "r.csv").read_text())) == len(rows)
    capsys.readouterr()
    status = main(
        [
            "render",
            str(tmp_path / "r.json"),
            "--csv",
            str(tmp_path / "x.csv"),
            "--before",
            str(tmp_path / "r.json"),
        ]
    )
    assert status == 2 and "before= is not available for CSV" in capsys.readouterr().err
