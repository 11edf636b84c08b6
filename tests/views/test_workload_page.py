"""Issue 23 item 5 on benchmark/workload pages: human units, ordered totals, strips labelled with
blocks × calls, contradicting latency/throughput said aloud, phase split and roofline."""

from __future__ import annotations

import copy
import re
from html import unescape

import torch
from view_parse import parse_html
from view_reports import benchmark_comparison, benchmark_report, m

from torchscan import measure_workload
from torchscan.views.benchmark.page import ordered_totals
from torchscan.views.common.workload_svg import phase_section, workload_roofline_section
from torchscan.views.render import render_report

TIMER = "torch.utils.benchmark.Timer"
E_NOTATION = re.compile(r"\d[eE][+-]?\d")


def visible(html: str) -> str:
    """Text a reader sees: without <pre> evidence blocks (raw JSON) and styles."""
    parse_html(html)  # well formed
    html = re.sub(r"<(pre|style|title)[^>]*>.*?</\1>", " ", html, flags=re.S)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_single_page_uses_human_units_in_a_readable_order() -> None:
    report = benchmark_report(0.000149641, 0.0000158882)
    report["totals"]["throughput"] = m("complete", 170_507.4, "images/s", TIMER, "warmed_blocks")
    text = visible(render_report(report))
    assert "149.6 µs" in text and "15.89 µs" in text and "750.0 ms" in text and "170.5 k images/s" in text
    assert "0.000149641" not in text and not E_NOTATION.search(text)
    # Rows: latency, its IQR, first call, throughput, ...; never alphabetical.
    assert text.index("latency complete 149.6") < text.index("latency_iqr") < text.index("first_call_latency")
    assert ordered_totals({"zeta": 1, "hardware_flops_utilization": 1, "latency": 1, "throughput": 1}) == [
        "latency",
        "throughput",
        "hardware_flops_utilization",
        "zeta",
    ]


def _contradicting() -> dict:
    before = benchmark_report(0.5, 0.25, profile=False)
    after = benchmark_report(0.4, 0.25, profile=False)
    # Candidate: 10 blocks of 1 call (baseline: 5 blocks × 4 calls), a lower mean throughput although
    # its median latency improved (one slow block).
    after["measurement"] = {"number_per_run": 1, "raw_times_seconds": [0.4] * 9 + [2.0], "measured_calls": 10}
    after["totals"]["throughput"] = m("complete", 8 * 10 / 5.6, "images/s", TIMER, "warmed_blocks")
    return benchmark_comparison(before, after)


def test_comparison_strips_say_blocks_times_calls_and_the_contradiction() -> None:
    comparison = _contradicting()
    html = render_report(comparison)
    text = visible(html)
    assert "5 blocks × 4 calls" in text and "10 blocks × 1 call" in text
    assert 'data-calls-per-block="4"' in html and 'data-calls-per-block="1"' in html
    assert "Different timing blocks: baseline 5 blocks × 4 calls, candidate 10 blocks × 1 call" in text
    # Latency 0.5 -> 0.4 s (-100 ms, -20 %); throughput 16 -> 14.29 images/s (-1.714, -10.7 %).
    assert "Latency improved (-100.0 ms (-20.0 %)) while throughput fell (-1.714 images/s (-10.7 %))." in text
    assert html.index('class="direction-note"') < html.index('<svg class="strip-plot"')
    assert "-100.0 ms (-20.0 %)" in text and not E_NOTATION.search(text)


def test_agreeing_runs_get_no_extra_notes() -> None:
    before, after = benchmark_report(0.5, 0.25), benchmark_report(0.125, 0.25)
    text = visible(render_report(benchmark_comparison(before, after)))
    assert "Different timing blocks" not in text and "while throughput" not in text
    assert "-375.0 ms (-75.0 %)" in text  # latency 0.5 -> 0.125 s


def _phases(forward: int, backward: int, optimizer: int, recompute: int = 0) -> dict:
    def flops(value: int) -> dict:
        return m("complete", value, "FLOPs", "torch.utils.flop_counter.FlopCounterMode", "workload_phase")

    total = forward + backward + optimizer + recompute
    return {
        "total": m("complete", total, "FLOPs", "torch.utils.flop_counter.FlopCounterMode", "workload"),
        "by_phase": {
            "forward": flops(forward),
            "backward": flops(backward),
            "optimizer": flops(optimizer),
            "recompute": flops(recompute),
        },
    }


def test_phase_split_table_and_bar() -> None:
    html = phase_section(_phases(1_000, 2_000, 1_000))
    text = visible(html)
    assert "forward 1.000 kFLOPs 25.0 %" in text and "backward 2.000 kFLOPs 50.0 %" in text
    assert "optimizer 1.000 kFLOPs 25.0 %" in text and "recompute 0 FLOPs 0.0 %" in text
    widths = dict(re.findall(r'<rect data-phase="(\w+)" x="[\d.]+" y="0" width="([\d.]+)"', html))
    assert widths == {"forward": "150.00", "backward": "300.00", "optimizer": "150.00"}
    partial = _phases(1_000, 2_000, 1_000)
    partial["total"] = m("partial", 4_000, "FLOPs", "torch.utils.flop_counter.FlopCounterMode", "workload")
    assert "25.0 %" not in visible(phase_section(partial)) and "—" in visible(phase_section(partial))
    assert phase_section({"total": partial["total"]}) == ""


def _with_hardware(bandwidth: float | None, operator_bytes: int | None = None) -> dict:
    report = benchmark_report()
    facts = {"name": "stated", "peak_flops_per_second": 1e11}
    if bandwidth:
        facts["memory_bandwidth_bytes_per_second"] = bandwidth
    report["context"]["hardware"] = facts
    unit, scope = "FLOPs/s", "warmed_block_average"
    report["totals"]["achieved_flops_per_second"] = m("complete", 2e9, unit, "x", scope)
    report["operator_flops"] = _phases(1_000_000_000, 0, 0)
    if operator_bytes:
        report["operator_flops"]["operator_bytes"] = m("complete", operator_bytes, "bytes", "x", "workload")
    return report


def test_roofline_draws_a_line_without_operator_bytes_and_a_point_with_them() -> None:
    html = workload_roofline_section(_with_hardware(2e10))
    text = visible(html)
    assert "stated peak 100.0 GFLOP/s and bandwidth 20.00 GB/s" in text
    assert "achieved 2.000 GFLOP/s (2.0 % of the stated peak)" in text
    assert 'class="workload-rate"' in html and "workload-point" not in html
    assert "operator bytes were not counted" in text
    point = workload_roofline_section(_with_hardware(2e10, operator_bytes=100_000_000))
    assert 'class="workload-point"' in point and "intensity of 10 FLOPs/byte" in visible(point)
    flat = workload_roofline_section(_with_hardware(None))
    assert "no bandwidth stated, so no slope" in visible(flat)
    assert workload_roofline_section(benchmark_report()) == ""
    assert not E_NOTATION.search(visible(html + point + flat))


def test_a_real_training_step_page_shows_phases_and_roofline() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(4, 8)

    def step() -> None:
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()

    report = measure_workload(
        step,
        device="cpu",
        metrics=("flops", "latency", "throughput"),
        work_units=4,
        warmup=1,
        min_run_time=0.01,
        min_repeats=2,
        hardware={"name": "stated", "peak_flops_per_second": 1e11},
    )
    html = render_report(copy.deepcopy(report))
    text = visible(html)
    assert 'id="phases"' in html and 'id="workload-roofline"' in html
    # forward: 2·4·8·8 + 2·4·8·2 = 640 FLOPs of matrix products (plus the bias adds and ReLU).
    assert report["operator_flops"]["by_phase"]["backward"]["value"] > 0
    assert "Operator FLOPs by phase" in text and not E_NOTATION.search(text)
