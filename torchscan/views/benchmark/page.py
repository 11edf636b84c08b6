"""HTML pages for a ``BenchmarkReport`` and a saved ``BenchmarkComparison`` (render.md 6).

Plain HTML with no script. Timings are warmed block averages, not request percentiles; first-call
time is not model loading; a profile is a separate instrumented pass (not clean latency, net bytes
are not peaks); a passing output check is the caller's declared equivalence, not task accuracy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscan.views.common.number_style import change, quantity
from torchscan.views.common.page_parts import badge, context_table
from torchscan.views.common.page_shell import STATIC_CSP, page
from torchscan.views.common.strip_svg import comparison_section, latency_section
from torchscan.views.common.text import esc, pretty_json
from torchscan.views.common.workload_svg import phase_section, workload_roofline_section

CSP = STATIC_CSP
TIMING_NOTE = (
    "Latency is the median of warmed block averages (each block covers many calls): it says nothing about "
    "single-request percentiles. First-call time covers one synchronised call, not model loading. Throughput "
    "is this process running calls back to back. Timing says nothing about FLOPs, memory or output quality."
)


# Rows people read first, then memory, then the figures divided by the stated peak (issue 23 item 5:
# utilization no longer sorts between latency rows); any other total follows by name.
TOTALS_ORDER = (
    "latency",
    "latency_iqr",
    "first_call_latency",
    "throughput",
    "operator_flops",
    "peak_memory",
    "process_peak_rss",
    "achieved_flops_per_second",
    "model_flops_utilization",
    "hardware_flops_utilization",
)


def ordered_totals(totals: Mapping[str, Any]) -> list[str]:
    """Total names in ``TOTALS_ORDER``, then the rest sorted."""
    known = [name for name in TOTALS_ORDER if name in totals]
    return known + sorted(name for name in totals if name not in TOTALS_ORDER)


def human_measure(result: Mapping[str, Any] | None) -> str:
    """The status badge and the value in page units: ``complete 201.8 µs``, ``partial ≥ 3.000 GFLOPs …``."""
    return badge(result)


def _totals_table(report: Mapping[str, Any], caption: str) -> str:
    totals = report["totals"]
    rows = "".join(
        f'<tr><th scope="row">{esc(name)}</th><td>{human_measure(totals[name])}</td>'
        f"<td>{esc(totals[name]['method'])}</td><td>{esc(totals[name]['scope'])}</td>"
        f"<td>{esc(totals[name]['unit'])}</td></tr>"
        for name in ordered_totals(totals)
    )
    return (
        f"<table><caption>{esc(caption)}</caption><thead><tr><th>Metric</th><th>Value</th><th>Method</th>"
        f"<th>Scope</th><th>Recorded unit</th></tr></thead><tbody>{rows}</tbody></table>"
        "<p class=note>Each row keeps its own method, scope and unit; rows are never combined. Values are "
        "shown in readable units (ms, µs, %, GFLOP/s); the report keeps the recorded unit.</p>"
    )


def _profile(report: Mapping[str, Any]) -> str:
    profile = report.get("profile")
    if profile is None:
        return (
            '<section id="profile"><h2>Operator profile</h2>'
            "<p>No operator profile was supplied.</p></section>"
        )
    from torchscan.views.flops.profile_page import rows_table

    diagnostics = "".join(f"<li>{esc(d['code'])}: {esc(d['message'])}</li>" for d in profile["diagnostics"])
    return (
        '<section id="profile"><h2>Operator profile (separate instrumented pass)</h2>'
        "<p class=note>Collected in one separate, instrumented call: self times overlap and are not clean "
        "latency; "
        "net bytes are allocations minus frees, not peaks. A hot operator promises no gain from changing "
        "it.</p>"
        f"{rows_table(profile)}"
        f"<ul>{diagnostics}</ul><details><summary>Profile context</summary>"
        f"{context_table(profile['context'], caption='Profile context')}</details></section>"
    )


HARDWARE_ROWS = {
    "achieved_flops_per_second": "Achieved FLOP/s (operator FLOPs ÷ block-average latency)",
    "model_flops_utilization": "Model FLOPs utilization (without recompute) ÷ stated peak",
    "hardware_flops_utilization": "Hardware FLOPs utilization (all operator FLOPs) ÷ stated peak",
}
HARDWARE_NOTE = (
    "The peak is the caller's stated fact, not a measurement; TorchScan has no device table and never "
    "guesses one. Utilization divides one call's counted operator FLOPs by its warmed block-average "
    "latency and that peak: a value above 1 means the stated peak or the count is wrong, and a partial "
    "count gives a lower bound. It says nothing about which kernels were slow."
)


def _hardware(report: Mapping[str, Any]) -> str:
    """The stated facts and the three utilization rows with their status (training-and-hardware.md 3)."""
    facts = report["context"].get("hardware")
    if facts is None:
        return ""
    stated = facts.get("memory_bandwidth_bytes_per_second")
    bandwidth = f" · stated memory bandwidth {esc(quantity(stated, 'bytes/s'))}" if stated else ""
    rows = "".join(
        f'<tr><th scope="row">{esc(label)}</th><td>{human_measure(report["totals"].get(name))}</td></tr>'
        for name, label in HARDWARE_ROWS.items()
    )
    return (
        f'<section id="hardware"><h2>Utilization of the stated hardware: {esc(facts["name"])}</h2>'
        f"<p>Stated peak: {esc(quantity(facts['peak_flops_per_second'], 'FLOPs/s'))}{bandwidth}</p>"
        "<table><thead><tr><th>Figure</th><th>Value (with its status)</th></tr></thead>"
        f"<tbody>{rows}</tbody></table><p class=note>{esc(HARDWARE_NOTE)}</p>"
        f"{workload_roofline_section(report)}</section>"
    )


def _memory_ledger(ledger: Mapping[str, Any]) -> str:
    """The ledger's pass (a validated MemoryReport): its timeline figure and categories at the peak."""
    from torchscan.report.memory_schema import CATEGORIES
    from torchscan.views.memory.text import CATEGORY_LABELS, status_bytes_text
    from torchscan.views.memory.timeline_svg import timeline_svg

    rows = "".join(
        f'<tr><th scope="row">{esc(CATEGORY_LABELS[name])}</th>'
        f"<td>{esc(status_bytes_text(ledger['at_peak']['by_category'][name]))}</td></tr>"
        for name in CATEGORIES
    )
    return (
        '<section id="memory-ledger"><h2>Storage ledger</h2><p class=note>A separate pass of '
        "measure_memory: live-storage bytes by category, never substituted for the allocator's peak "
        "above (see render_report of the MemoryReport for its full page).</p>"
        f"<figure>{timeline_svg(ledger, title='Storage ledger', standalone=False)}</figure>"
        f"<table><thead><tr><th>Category</th><th>At the peak</th></tr></thead><tbody>{rows}</tbody></table>"
        "</section>"
    )


def _extras(report: Mapping[str, Any]) -> str:
    parts = [_hardware(report)]
    if "operator_flops" in report:
        parts.append(
            '<section id="operator-flops"><h2>Operator '
            f"FLOPs</h2><p>{human_measure(report['operator_flops']['total'])}"
            "</p><p class=note>A separate pass; not scaled by latency and never summed with memory.</p>"
            f"{phase_section(report['operator_flops'])}"
            "<details><summary>Operator FLOP "
            f"report</summary><pre>{esc(pretty_json(report['operator_flops']))}</pre>"
            "</details></section>"
        )
    if "memory" in report:
        parts.append(
            '<section id="memory"><h2>Memory record</h2><p class=note>PyTorch peak memory of one call in '
            "its backend "
            "scope; not process RSS and never added to it.</p>"
            f"<pre>{esc(pretty_json(report['memory']))}</pre></section>"
        )
    if "memory_ledger" in report:
        parts.append(_memory_ledger(report["memory_ledger"]))
    if "diagnostics" in report:
        items = "".join(
            f"<li><code>{esc(d['code'])}</code> · {esc(d['metric'])}: {esc(d['message'])}</li>"
            for d in report["diagnostics"]
        )
        parts.append(
            f'<section id="diagnostics"><h2>Diagnostics</h2><ul>{items or "<li>None.</li>"}</ul></section>'
        )
    return "".join(parts)


def _evidence(report: Mapping[str, Any], label: str) -> str:
    return (
        f"<details><summary>Inputs and hardware{label}</summary>"
        f"<pre>{esc(pretty_json({'inputs': report['inputs']}))}</pre>"
        f"{context_table(report['context'], caption='Measurement context' + label)}</details>"
        "<details><summary>Raw timing "
        f"blocks{label}</summary><pre>{esc(pretty_json(report['measurement']))}</pre>"
        "</details>"
    )


def render_benchmark(report: Mapping[str, Any], *, title: str) -> str:
    """Page for one validated ``BenchmarkReport``."""
    body = (
        "<h2>Single workload measurement</h2>"
        f"<p>Device: {esc(report['context'].get('device', '?'))} · threads "
        f"{esc(report['context'].get('num_threads', '?'))} · work unit "
        f"{esc(report['context'].get('work_unit', '?'))}"
        f"</p>{_totals_table(report, 'Timing and memory')}<p class=note>{esc(TIMING_NOTE)}</p>"
        f"{latency_section(report)}{_profile(report)}{_extras(report)}{_evidence(report, '')}"
    )
    return page(title, body)


def _change(entry: Mapping[str, Any]) -> str:
    """Candidate minus baseline in human units with the relative change: ``-3.96 µs (-2.65 %)``."""
    if entry["delta"] is None:
        return "Unavailable"
    unit = (entry.get("after") or {}).get("unit", "")
    before = (entry.get("before") or {}).get("value")
    return change(entry["delta"], unit, before)


def render_benchmark_comparison(comparison: Mapping[str, Any], *, title: str) -> str:
    """Page for one validated, re-checked ``BenchmarkComparison``."""
    passed = comparison["output_check"] == "passed"
    check = (
        "<p><strong>Output check passed</strong>: the caller's check accepted the candidate's outputs. "
        "This is the "
        "caller's declared equivalence, not task accuracy.</p>"
        if passed
        else "<p><strong>Output check failed</strong>: all gains are withheld; "
        "no change below is a speed-up.</p>"
    )
    rows = "".join(
        f'<tr><th scope="row">{esc(name)}</th><td>{human_measure(entry.get("before"))}</td>'
        f"<td>{human_measure(entry.get('after'))}</td><td>{esc(_change(entry))}</td></tr>"
        for name, entry in ((key, comparison["totals"][key]) for key in ordered_totals(comparison["totals"]))
    )
    changes = "".join(
        f'<tr><th scope="row">{esc(key)}</th><td>{esc(pretty_json(setting["before"]))}</td>'
        f"<td>{esc(pretty_json(setting['after']))}</td></tr>"
        for key, setting in comparison["context_changes"].items()
    )
    label = comparison["latency_change"].replace("_", " ")
    body = (
        f"{check}<h2>Latency change: {esc(label)}</h2><p class=note>The label compares the latency delta "
        "with the "
        "larger interquartile range of the two runs. It is descriptive, not a significance test, and task "
        "accuracy "
        "is unmeasured; repeat with the run order swapped before reporting a small gain.</p>"
        f"{comparison_section(comparison)}"
        "<h2>Candidate minus "
        "baseline</h2><table><thead><tr><th>Metric</th><th>Baseline</th><th>Candidate</th>"
        f"<th>Change</th></tr></thead><tbody>{rows}</tbody></table>"
        f"<h2>Baseline</h2>{_totals_table(comparison['before'], 'Baseline run')}"
        f"<h2>Candidate</h2>{_totals_table(comparison['after'], 'Candidate run')}"
        "<h2>Changed measurement settings</h2>"
        + (
            f"<table><thead><tr><th>Setting</th><th>Baseline</th><th>Candidate</th></tr></thead><tbody>{changes}"
            "</tbody></table>"
            if changes
            else "<p>None: both runs used the same recorded settings.</p>"
        )
        + f"<p class=note>{esc(TIMING_NOTE)}</p><h2>Candidate profile</h2>{_profile(comparison['after'])}"
        f"{_evidence(comparison['before'], ' (baseline)')}{_evidence(comparison['after'], ' (candidate)')}"
    )
    return page(title, body)
