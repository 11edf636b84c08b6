"""``torchscan merge`` and ``render_report`` of a merged report (distributed.md 4), torch-free."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import pytest
from test_merge_reports import benchmark_report, flop_report

from torchscan.cli import main
from torchscan.report.merge import merge_reports
from torchscan.views.render import render_report


def _save(tmp_path, name, report):
    path = tmp_path / name
    path.write_text(json.dumps(report))
    return str(path)


def test_cli_merge_writes_the_merged_report(tmp_path, capsys):
    paths = [_save(tmp_path, f"rank{r}.json", flop_report(r)) for r in (1, 0)]
    merged_path = tmp_path / "merged.json"
    page = tmp_path / "merged.html"
    status = main(["merge", *paths, "--json", str(merged_path), "--html", str(page)])
    out = capsys.readouterr().out
    assert status == 0
    merged = json.loads(merged_path.read_text())
    assert merged == merge_reports([flop_report(1), flop_report(0)])
    assert "operator_flops" in out and "65,536 FLOPs" in out and "rank 1:" in out
    assert page.read_text().startswith("<!doctype html>")


def test_cli_merge_refuses_duplicate_ranks_in_one_line(tmp_path, capsys):
    paths = [_save(tmp_path, f"copy{i}.json", flop_report(0)) for i in range(2)]
    assert main(["merge", *paths, "--json", str(tmp_path / "m.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("torchscan: error: cannot merge the reports: duplicate ranks [0]")
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "m.json").exists()


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rects: list[dict[str, str | None]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "rect":
            self.rects.append(dict(attrs))

    def handle_data(self, data):
        self.text.append(data)


def test_render_merged_report_draws_one_bar_per_rank():
    reports = [benchmark_report(0, 0.002, 1000), benchmark_report(1, 0.004, 800)]
    for report in reports:
        report["totals"]["operator_flops"] = flop_report(report["context"]["distributed"]["rank"])["total"]
    merged = json.loads(json.dumps(merge_reports(reports)))
    page = render_report(merged, title="job <42>")
    parser = _Collector()
    parser.feed(page)
    # two ranks × (executed FLOPs, latency); the slower rank's latency bar is the full width
    assert len(parser.rects) == 4
    latency_bars = [float(rect["width"] or 0) for rect in parser.rects[2:]]
    assert latency_bars == [180.0, 360.0]
    assert "job &lt;42&gt;" in page and "<script" not in page
    assert "not network traffic" in "".join(parser.text)


def test_render_merged_partial_and_unavailable_values():
    merged = merge_reports(
        [flop_report(r, world_size=4, status="partial" if r else "complete") for r in (0, 1)]
    )
    page = render_report(merged)
    assert "≥ 32.77 kFLOPs" in page and 'stroke-dasharray="4 3"' in page
    assert "missing_ranks" in page
    with pytest.raises(ValueError, match="format 'svg' is not available for a merged"):
        render_report(merged, format="svg")
