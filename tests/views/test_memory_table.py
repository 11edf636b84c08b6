"""The ``Saved act.`` column of ``summary``/``format_table`` from a MemoryReport (memory.md 4 "Views")."""

from __future__ import annotations

import pytest
import torch
from memory_reports import memory_report, module_call
from torch import nn

from torchscan import crawl_module, summary
from torchscan.views.analysis.table import format_table


def _blocks() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(*[nn.Sequential(nn.Linear(4, 4), nn.ReLU()) for _ in range(3)])


def _memory(missing: tuple[str, ...] = ()) -> dict:
    """Saved bytes: root 3,000, each block 100, each Linear 60, each ReLU 40 (hand-written)."""
    report = memory_report()
    calls = [module_call("", 0, "torch.nn.modules.container.Sequential", 3000)]
    for block in range(3):
        calls.append(module_call(f"{block}", 0, "torch.nn.modules.container.Sequential", 100))
        calls.append(module_call(f"{block}.0", 0, "torch.nn.modules.linear.Linear", 60))
        calls.append(module_call(f"{block}.1", 0, "torch.nn.modules.activation.ReLU", 40))
    report["by_module"] = [call for call in calls if call["path"] not in missing]
    return report


def _column(table: str) -> dict[str, str]:
    """Row name (tree glyphs stripped) -> the last cell of the row."""
    rows = {}
    lines = table.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("=")) + 1
    for line in lines[start:]:
        if line.startswith("="):
            break
        name = line[:15].strip(" ├└─│")
        rows[name] = line.split("  ")[-1].strip()
    return rows


def test_column_joins_each_call_and_missing_calls_read_dash() -> None:
    report = crawl_module(_blocks(), (4,))
    table = format_table(report, memory=_memory(missing=("2.1",)), fold=False, col_names=["params"])
    assert table.splitlines()[1].split() == ["Layer", "Type", "Params", "Saved", "act."]
    assert table.splitlines()[2].split() == ["incl."]
    cells = [line.split("  ")[-1].strip() for line in table.splitlines()[4:14]]
    # root, then per block: the block, its Linear, its ReLU; 2.1 is not in the MemoryReport
    assert cells == ["2.93 KiB", "100 B", "60 B", "40 B", "100 B", "60 B", "40 B", "100 B", "60 B", "-"]
    assert "'-' is a call that report does not have: unknown, not 0" in table


def test_folded_rows_show_one_block_and_a_missing_block_makes_a_lower_bound() -> None:
    # Issue 23: a (×N) row shows one of its identical blocks (as the analysis columns do), so the
    # Saved act. cell is the blocks' common figure, not their sum.
    report = crawl_module(_blocks(), (4,))
    cells = _column(format_table(report, memory=_memory(missing=("2.1",))))
    assert cells["Sequential"] == "2.93 KiB"
    assert cells["(×3) 0 … 2"] == "100 B"  # each block saved 100
    assert cells["0"] == "60 B"  # each Linear 60
    assert cells["1"] == "≥ 40 B"  # 40 in two blocks; the third block's call is missing
    memory = _memory()
    memory["by_module"][3] = module_call("0.1", 0, "torch.nn.modules.activation.ReLU", 44)
    assert _column(format_table(report, memory=memory))["1"] == "varies"  # 44, 40, 40


def test_partial_and_unavailable_figures_keep_their_status() -> None:
    report = crawl_module(_blocks(), (4,))
    memory = _memory()
    memory["by_module"][1] = module_call("0", 0, "torch.nn.modules.container.Sequential", 64, "partial")
    memory["by_module"][2] = module_call("0.0", 0, "torch.nn.modules.linear.Linear", None, "unavailable")
    table = format_table(report, memory=memory, fold=False, col_names=["saved_activations"])
    cells = [line.split("  ")[-1].strip() for line in table.splitlines()[3:6]]
    assert cells == ["2.93 KiB", "≥ 64 B", "unavailable"]


def test_without_memory_the_table_is_unchanged_and_the_column_needs_a_report() -> None:
    report = crawl_module(_blocks(), (4,))
    assert format_table(report) == format_table(report, memory=None)
    assert "Saved act." not in format_table(report)
    with pytest.raises(ValueError, match="saved_activations column reads a MemoryReport"):
        format_table(report, col_names=["params", "saved_activations"])


class _Exploding(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("the model ran")


def test_summary_checks_the_memory_report_before_the_model_runs(capsys: pytest.CaptureFixture[str]) -> None:
    broken = _memory()
    broken["peak"]["status"] = "bogus"
    with pytest.raises(ValueError, match=r"memory\.peak\.status"):
        summary(_Exploding(), (4,), memory=broken)
    with pytest.raises(ValueError, match="saved_activations"):
        summary(_Exploding(), (4,), col_names=["saved_activations"])
    with pytest.raises(ValueError, match="memory: a memory report must be an object"):
        summary(_Exploding(), (4,), memory=[1])  # type: ignore[arg-type]
    report = summary(_blocks(), (4,), memory=_memory(), col_names=["saved_activations"], fold=False)
    printed = capsys.readouterr().out
    assert "Saved act." in printed and "2.93 KiB" in printed
    assert "memory" not in report  # the AnalysisReport itself is unchanged by the view


def test_benchmark_page_shows_the_ledger_pass_of_measure_workload() -> None:
    from view_parse import parse_html

    from torchscan import measure_workload, render_report

    model = _blocks()
    inputs = torch.rand(2, 4)
    report = measure_workload(
        lambda: model(inputs).sum().backward(), device="cpu", metrics=["memory_ledger"], progress=False
    )
    root = parse_html(render_report(report, title="step"))
    section = root.by_id("memory-ledger")
    assert section is not None
    assert section.find_all("svg")[0].attrs.get("role") == "img"
    rows = {row.find_all("th")[0].text(): row.find_all("td")[0].text() for row in section.find_all("tr")[1:]}
    # 3 Linear(4, 4): 3 * (16 + 4) * 4 = 240 bytes of parameters
    assert rows["parameters"] == "complete · 240 bytes (240 B)"
    assert len(rows) == 7
