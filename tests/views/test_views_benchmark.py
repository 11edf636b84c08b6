"""Benchmark pages (render.md 6, 7.14) on hand-built reports following workloads.md."""

from __future__ import annotations

import copy

import pytest
from view_parse import parse_html
from view_reports import benchmark_comparison, benchmark_report, m

from torchscan.views.render import render_report


def text_of(html: str) -> str:
    return " ".join(parse_html(html).text().split())


def test_single_report_page() -> None:
    report = benchmark_report()
    pristine = copy.deepcopy(report)
    html = render_report(report)
    root = parse_html(html)
    assert not root.find_all("script")
    csp = next(x.attrs["content"] for x in root.find_all("meta") if x.attrs.get("http-equiv"))
    assert csp == "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
    text = text_of(html)
    # the profile's missing device time reads unknown, never 0 (the ProfileReport page's own table)
    assert "Single workload measurement" in text and "aten::addmm" in text and "unknown" in text
    assert "Raw timing blocks" in text and "Inputs and hardware" in text
    assert html == render_report(report) and report == pristine


def test_partial_latency_and_no_profile() -> None:
    report = benchmark_report(profile=False)
    report["totals"]["latency"] = m(
        "partial", 0.25, "seconds", "torch.utils.benchmark.Timer", "warmed_block_average"
    )
    text = text_of(render_report(report))
    assert "≥ 250.0 ms (lower bound; full value unknown)" in text  # issue 23: ms, not seconds
    assert "No operator profile was supplied" in text


def test_workload_extras_shown() -> None:
    report = benchmark_report()
    report["totals"]["process_peak_rss"] = m(
        "complete", 1024, "bytes", "os.wait4.ru_maxrss", "child_process_lifetime"
    )
    report["memory"] = {"peak_bytes": 10}
    report["diagnostics"] = [
        {
            "code": "measurement_unavailable",
            "severity": "warning",
            "metric": "profile",
            "message": "no profiler",
        }
    ]
    text = text_of(render_report(report))
    assert "process_peak_rss" in text and "Memory record" in text and "no profiler" in text


def test_comparison_pages() -> None:
    before, after = benchmark_report(0.5, 0.25), benchmark_report(0.125, 0.25)
    passed = benchmark_comparison(before, after, "passed")
    assert passed["latency_change"] == "faster"
    text = text_of(render_report(passed))
    assert "Output check passed" in text and "aten::addmm" in text and "Latency change: faster" in text
    failed = benchmark_comparison(before, after, "failed")
    text = text_of(render_report(failed))
    assert "Output check failed" in text and "withheld" in text and "Unavailable" in text
    changed = copy.deepcopy(after)
    changed["context"]["warmup"] = 9
    text = text_of(render_report(benchmark_comparison(before, changed)))
    assert "Changed measurement settings" in text and "warmup" in text
    within = benchmark_comparison(before, benchmark_report(0.75, 0.25))
    assert "within variability" in text_of(render_report(within))


def test_tampered_comparisons_rejected() -> None:
    before, after = benchmark_report(0.5, 0.25), benchmark_report(0.125, 0.25)
    good = benchmark_comparison(before, after)
    tampered = copy.deepcopy(good)
    tampered["totals"]["latency"]["delta"] = -0.4
    with pytest.raises(ValueError, match="deltas"):
        render_report(tampered)
    tampered = copy.deepcopy(good)
    tampered["latency_change"] = "slower"
    with pytest.raises(ValueError, match="Latency change"):
        render_report(tampered)
    tampered = copy.deepcopy(good)
    tampered["context_changes"] = {"warmup": {"before": 1, "after": 2}}
    with pytest.raises(ValueError, match="context_changes"):
        render_report(tampered)
    tampered = copy.deepcopy(good)
    tampered["after"]["context"]["device_name"] = "Other"
    with pytest.raises(ValueError, match="device_name"):
        render_report(tampered)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda r: r.update(schema_version=2),
        lambda r: r.update(schema_version=True),
        lambda r: r["totals"].pop("latency_iqr"),
        lambda r: r["totals"]["throughput"].update(unit="calls/min"),
        lambda r: r["totals"]["latency"].update(value=0, known_value=0),
        lambda r: r["measurement"].update(raw_times_seconds=[float("nan")]),
        lambda r: r["profile"]["context"].update(device="cuda:0"),
        lambda r: r["profile"]["operators"][0].update(device_self_seconds="0"),
    ],
)
def test_invalid_benchmark_reports(mutate) -> None:
    report = benchmark_report()
    mutate(report)
    with pytest.raises(ValueError):
        render_report(report)


def test_zero_iqr_accepted() -> None:
    report = benchmark_report(iqr=0.0)
    assert "Single workload measurement" in render_report(report)
