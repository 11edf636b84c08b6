"""Issue 23 item 1: diagnostics about unrequested metrics are informational, never warnings.

The rule (docs/analysis.md "Which diagnostics are warnings"): every diagnostic concerns a requested
metric except receptive-field geometry (``receptive_field``/``effective_stride``/``effective_padding``)
when the receptive field was not requested. The report keeps every entry; views split them.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser

import torch
from torch import nn

from torchscan import crawl_module
from torchscan.analysis.crawl.build import incomplete_metrics
from torchscan.report.diagnostics import OPTIONAL_METRICS, concerns_requested_metric
from torchscan.views.analysis.evidence import combined_diagnostics
from torchscan.views.common.diagnostic_groups import (
    format_groups,
    group_diagnostics,
    informational_line,
    metric_label,
    summarize_diagnostics,
)
from torchscan.views.common.diagnostic_html import diagnostic_groups_section


def _entry(code: str, metric: str, path: str, message: str = "Module type not supported: Conv1D") -> dict:
    return {"code": code, "severity": "warning", "metric": metric, "message": message, "path": path}


def _report() -> dict:
    layers = [{"path": "", "type": "Net"}] + [{"path": f"h.{i}", "type": "Conv1D"} for i in range(4)]
    layers.append({"path": "emb", "type": "PosEmbedding"})
    layers.append({"path": "act", "type": "Mystery"})
    diagnostics = [_entry("unsupported_module_metric", "receptive_field", f"h.{i}") for i in range(4)]
    diagnostics.append(
        _entry(
            "module_metric_error",
            "receptive_field",
            "emb",
            "NotImplementedError: Layout estimates require unchanged native forwards.",
        )
    )
    diagnostics.append(_entry("unestimated_functional_work", "module_flops", "act", "Mystery ran aten.foo"))
    return {"layers": layers, "diagnostics": diagnostics, "operator_flops": {"diagnostics": []}}


def test_the_rule_names_receptive_field_geometry_only() -> None:
    assert {"receptive_field", "effective_stride", "effective_padding"} == OPTIONAL_METRICS
    for metric in ("receptive_field", "effective_stride", "effective_padding"):
        entry = _entry("unsupported_module_metric", metric, "a")
        assert not concerns_requested_metric(entry)
        assert concerns_requested_metric(entry, receptive_field=True)
    for metric in ("module_flops", "macs", "dmas", "flops", "operator_flops", "calls", "latency"):
        assert concerns_requested_metric(_entry("x", metric, "a"))


def test_summary_splits_without_dropping_anything() -> None:
    report = _report()
    before = json.dumps(report, sort_keys=True)
    summary = summarize_diagnostics(report)
    assert json.dumps(report, sort_keys=True) == before
    assert summary["count"] == 1 and summary["informational_count"] == 5
    assert [(g["code"], g["subject"], g["count"]) for g in summary["groups"]] == [
        ("unestimated_functional_work", "Mystery", 1)
    ]
    assert [(g["code"], g["subject"], g["count"]) for g in summary["informational"]] == [
        ("unsupported_module_metric", "Conv1D", 4),
        ("module_metric_error", "PosEmbedding", 1),
    ]
    # Requested: every diagnostic is a warning again, and a requested metric's gap always shows.
    asked = summarize_diagnostics(report, receptive_field=True)
    assert asked["count"] == 6 and asked["informational_count"] == 0
    assert len(group_diagnostics(report)) == len(
        group_diagnostics(report, requested=True, receptive_field=True)
    )
    assert metric_label(summary["groups"][0]) == "module_flops"


def test_informational_line_is_one_collapsed_line() -> None:
    summary = summarize_diagnostics(_report())
    assert informational_line(summary, "--receptive-field shows them") == (
        "Not requested: 5 receptive-field diagnostic(s) (Conv1D 4, PosEmbedding 1); informational, "
        "not warnings: no total depends on them; --receptive-field shows them."
    )
    assert informational_line(summary, subjects=1).endswith(
        "(Conv1D 4, +1 more type(s)); informational, not warnings: no total depends on them."
    )
    assert informational_line(summarize_diagnostics(_report(), receptive_field=True)) is None
    # Text lines name their metric.
    (line,) = format_groups(summary["groups"])
    assert "[module_flops]" in line


class _Cells(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.headers: list[str] = []
        self.open_details = 0
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "th":
            self._in = "th"
            self.headers.append("")
        if tag == "details" and ("open", None) in attrs:
            self.open_details += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "th":
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "th":
            self.headers[-1] += data


def test_html_table_has_a_metric_column_and_folds_the_informational_rows() -> None:
    html = diagnostic_groups_section(_report(), {"act": "7"})
    parser = _Cells()
    parser.feed(html)
    assert parser.headers[:2] == ["Code", "Metric"]
    assert "<h2>Diagnostics: 1 in 1 group</h2>" in html
    assert "<td><code>module_flops</code></td>" in html
    assert '<a href="#module-7">act</a>' in html
    # One collapsed line (a closed <details>) holds the receptive-field rows.
    assert html.count('<details class="informational"') == 1 and parser.open_details == 0
    assert "Not requested: 5 receptive-field diagnostic(s)" in html
    assert "<td><code>receptive_field</code></td>" in html
    assert diagnostic_groups_section({"layers": [], "diagnostics": []}, {}) == ""
    only_info = {**_report(), "diagnostics": _report()["diagnostics"][:5]}
    assert "<h2>Diagnostics: 0 about requested metrics</h2>" in diagnostic_groups_section(only_info, {})


def test_html_escapes_hostile_metric_and_subject() -> None:
    report = {"layers": [], "diagnostics": [_entry("c", "<b>m", "<script>")]}
    html = diagnostic_groups_section(report, {})
    assert "<script>" not in html and "<b>m" not in html and "&lt;b&gt;m" in html


def test_explorer_data_marks_informational_entries() -> None:
    entries = combined_diagnostics(_report())
    assert [entry.get("informational", False) for entry in entries] == [True] * 5 + [False]
    assert [entry["index"] for entry in entries] == list(range(6))


class Opaque(nn.Module):
    """A leaf no formula recognises; its operators are estimated, its geometry is not."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


def test_a_real_report_with_complete_totals_has_no_warning() -> None:
    model = nn.Sequential(nn.Linear(4, 4), Opaque(), nn.ReLU())
    report = json.loads(json.dumps(crawl_module(model, input_shape=(4,), strict=True)))
    assert all(report["totals"][name]["status"] == "complete" for name in ("module_flops", "macs", "dmas"))
    # The report still says why the geometry is unknown (truthful), but no view counts it as a warning.
    assert [(d["code"], d["metric"], d["path"]) for d in report["diagnostics"]] == [
        ("unsupported_module_metric", "receptive_field", "1")
    ]
    assert report["layers"][2]["metrics"]["receptive_field"]["status"] == "unavailable"
    summary = summarize_diagnostics(report)
    assert (summary["count"], summary["informational_count"]) == (0, 1)
    assert incomplete_metrics(report) == []


def test_a_requested_entry_borrows_the_class_path_of_an_informational_one() -> None:
    report = {
        "layers": [{"path": "o", "type": "Opaque"}],
        "diagnostics": [
            {**_entry("unsupported_module_metric", "receptive_field", "o"), "class_path": "pkg.mod.Opaque"},
            _entry("unestimated_functional_work", "module_flops", "o", "Opaque ran aten.foo"),
        ],
    }
    (group,) = summarize_diagnostics(report)["groups"]
    assert group["class_path"] == "pkg.mod.Opaque"
    assert group["action"] == "custom_modules={pkg.mod.Opaque: ModuleHandler(...)}"


def test_memory_page_diagnostics_name_their_metric() -> None:
    from memory_reports import memory_report

    from torchscan.views.render import render_report

    report = memory_report()
    report["diagnostics"] = [
        {"code": "storage_unknown", "metric": "saved_activations", "message": "why", "severity": "warning"}
    ]
    assert "<code>storage_unknown</code> saved_activations: why" in render_report(report)


class PositionalEmbedding(nn.Embedding):
    """Whisper's pattern: a layout module whose forward is replaced (its own frame, own indexing)."""

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.weight[: ids.shape[-1]]


def test_layout_estimates_of_a_replaced_forward_are_informational() -> None:
    model = nn.Sequential(PositionalEmbedding(16, 4), nn.Linear(4, 4))
    report = json.loads(
        json.dumps(crawl_module(model, args=(torch.zeros(1, 8, dtype=torch.long),), strict=True))
    )
    assert all(report["totals"][name]["status"] == "complete" for name in ("module_flops", "macs", "dmas"))
    (entry,) = report["diagnostics"]
    assert (entry["code"], entry["metric"]) == ("module_metric_error", "receptive_field")
    assert entry["message"] == "NotImplementedError: Layout estimates require unchanged native forwards."
    summary = summarize_diagnostics(report)
    assert (summary["count"], summary["informational_count"]) == (0, 1)
    assert summary["informational"][0]["subject"] == "PositionalEmbedding"
