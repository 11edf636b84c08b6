"""HTML page and terminal table of a GenerationReport (generation.md 2-3); never imports torch.

The page embeds the SVG of :mod:`torchscan.views.generation.figure`, the step table, the phase totals,
the decode fit, the timings (with the latency chapter's ``noisy`` label) and the diagnostics. Plain
HTML, no script, every report string escaped, byte-identical for the same report.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscan.views.common.number_style import measure, not_applicable, quantity, share
from torchscan.views.common.page_parts import badge, context_table
from torchscan.views.common.page_shell import page
from torchscan.views.common.strip_svg import NOISY_RATIO, quantile
from torchscan.views.common.text import compact, duration, esc, number
from torchscan.views.generation.figure import generation_svg

NOTE = (
    "Counts are operator FLOPs and bytes of one observed generate() call: every step's FLOPs plus the work "
    "outside the steps (sampling, stopping checks) sum exactly to the total. Operator bytes are the sizes "
    "of every operand read and result written, per operator: not DRAM traffic, which caches and fusion "
    "change. Attention K/V bytes are the key and value operands of fused attention kernels: with a static "
    "cache that is the whole preallocated cache, read whatever the context. A roofline time is a lower "
    "bound under the stated peak and bandwidth, not a prediction, and batch-1 greedy decoding is not a "
    "serving load."
)


def short(result: Mapping[str, Any] | None) -> str:
    """``1.23M``, ``≥ 7`` (a lower bound), ``n/a`` (does not apply) or ``unknown``, for terminal tables."""
    if not_applicable(result):
        return "n/a"
    if result is None or result["known_value"] is None:
        return "unknown"
    shown = compact(result["known_value"])
    return shown if result["status"] == "complete" else f"≥ {shown}"


def _count(value: int | None) -> str:
    return "unknown" if value is None else number(value)


def _bound(step: Mapping[str, Any]) -> str:
    if "bound" not in step:
        return "-"
    return step["bound"] or "unknown"


def step_rows(report: Mapping[str, Any]) -> list[list[str]]:
    """One row per step: phase, context, FLOPs, bytes, KV bytes, bound (the CLI prints these)."""
    return [
        [
            str(step["index"]),
            step["phase"],
            _count(step["context_tokens"]),
            short(step["flops"]),
            short(step["operator_bytes"]),
            short(step["attention_kv_bytes"]),
            _bound(step),
        ]
        for step in report["steps"]
    ]


ROW_HEADER = ["step", "phase", "context", "FLOPs", "bytes", "KV bytes", "bound"]


def step_table_text(report: Mapping[str, Any]) -> str:
    """The step rows as aligned text for a terminal."""
    rows = [ROW_HEADER, *step_rows(report)]
    widths = [max(len(row[k]) for row in rows) for k in range(len(ROW_HEADER))]
    return "\n".join("  ".join(cell.rjust(widths[k]) for k, cell in enumerate(row)).rstrip() for row in rows)


def _step_table(report: Mapping[str, Any]) -> str:
    hardware = "hardware" in report["context"]
    head = ROW_HEADER + (["intensity", "roofline"] if hardware else [])
    body = []
    for step in report["steps"]:
        cells = [
            str(step["index"]),
            step["phase"],
            _count(step["context_tokens"]),
            measure(step["flops"]),
            measure(step["operator_bytes"]),
            measure(step["attention_kv_bytes"]),
            _bound(step),
        ]
        if hardware:
            cells += [measure(step["arithmetic_intensity"]), measure(step["roofline_seconds"])]
        body.append("<tr>" + "".join(f"<td>{esc(cell)}</td>" for cell in cells) + "</tr>")
    return (
        '<table id="steps"><caption>Steps (one per top-level model call)</caption><thead><tr>'
        + "".join(f"<th>{esc(name)}</th>" for name in head)
        + f"</tr></thead><tbody>{''.join(body)}</tbody></table>"
        "<p class=note>≥ marks a lower bound (partial); unknown marks an unavailable value, never zero; "
        "not applicable marks a metric the step has no part in (K/V bytes of a model that ran no "
        "attention).</p>"
    )


def _seconds(result: Mapping[str, Any]) -> str:
    if result["known_value"] is None:
        return "unknown"
    shown = duration(result["known_value"])  # ms/µs, never e-notation (issue 23 item 5)
    return shown if result["status"] == "complete" else f"≥ {shown}"


def _totals(report: Mapping[str, Any]) -> str:
    rows = []
    for part in ("prefill", "decode", "decode_per_token", "outside_steps"):
        for name in ("flops", "operator_bytes", "attention_kv_bytes"):
            result = report[part][name]
            rows.append(
                f'<tr><th scope="row">{esc(part)}</th><td>{esc(name)}</td><td>{badge(result)}</td>'
                f"<td>{esc(result['method'])}</td></tr>"
            )
    return (
        "<table><caption>Totals by phase (decode_per_token: mean of one decode step)</caption><thead><tr>"
        f"<th>Part</th><th>Metric</th><th>Value</th><th>Method</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _fit(report: Mapping[str, Any]) -> str:
    items = []
    for name, fit in report["decode_fit"].items():
        unit = "FLOPs" if name == "flops" else "bytes"
        decode = [step[name] for step in report["steps"] if step["phase"] == "decode"]
        if fit is None and decode and all(not_applicable(result) for result in decode):
            items.append(f"<li>{esc(name)}: not applicable (the decode steps ran no attention)</li>")
        elif fit is None:
            items.append(f"<li>{esc(name)}: unavailable (see diagnostics)</li>")
        else:
            items.append(
                f"<li>{esc(name)} ≈ {esc(quantity(fit['intercept'], unit))} + "
                f"{esc(quantity(fit['slope'], unit))} × context tokens (largest residual "
                f"{esc(quantity(fit['max_residual'], unit))})</li>"
            )
    return (
        "<h2>Decode fit (least squares over decode steps)</h2>"
        f"<ul>{''.join(items)}</ul><p class=note>Drawn as a dashed line through the decode steps above, "
        "with each step's residual (step minus line) in the strip below it.</p>"
    )


def noisy_words(seconds: list[float]) -> str:
    """The latency chapter's ``noisy`` label for decode step times (IQR ÷ median above 10 %), or ''."""
    if not seconds:
        return ""
    middle = quantile(seconds, 0.5)
    spread = quantile(seconds, 0.75) - quantile(seconds, 0.25)
    if middle <= 0 or spread / middle <= NOISY_RATIO:
        return ""
    return (
        f"noisy: the IQR of the decode step times is {share(spread / middle)} of their median (above "
        f"{share(NOISY_RATIO)}); this describes the spread of one run, not a significance test"
    )


def _timing(report: Mapping[str, Any]) -> str:
    if "timing" not in report:
        return ""
    timing = report["timing"]
    rows = "".join(
        f'<tr><th scope="row">{esc(name)}</th><td>{badge(timing[name])}</td>'
        f"<td>{esc(timing[name]['scope'])}</td></tr>"
        for name in ("time_to_first_token", "decode_step_mean", "decode_step_iqr")
    )
    words = noisy_words(timing["decode_step_seconds"])
    label = f'<p class="noisy"><span class="badge warning">noisy</span> {esc(words)}</p>' if words else ""
    return (
        "<h2>Timing (a second, separate generate() call)</h2>"
        f"<table><thead><tr><th>Metric</th><th>Value</th><th>Scope</th></tr></thead><tbody>{rows}</tbody></table>"
        f"{label}<p class=note>Wall-clock times of this process for one call, synchronised with the "
        "device: not a serving latency, not a percentile.</p>"
    )


def _diagnostics(report: Mapping[str, Any]) -> str:
    entries = [*report["diagnostics"], *report["operator_flops"]["diagnostics"]]
    items = "".join(
        f"<li><code>{esc(e['code'])}</code> {esc(e['metric'])}: {esc(e['message'])}</li>" for e in entries
    )
    return f"<h2>Diagnostics</h2><ul>{items}</ul>" if items else ""


def render_generation(report: Mapping[str, Any], *, title: str) -> str:
    """The HTML page of a validated GenerationReport (``title`` is its title and heading)."""
    body = (
        f"<figure>{generation_svg(report)}<figcaption>Per-step operator FLOPs and bytes "
        "against context length, each on its own axis; the decode fits with their residuals; the "
        "timed steps when measured. The square is the prefill.</figcaption></figure>"
        f"{_step_table(report)}{_totals(report)}{_fit(report)}{_timing(report)}{_diagnostics(report)}"
        f"{context_table(report['context'])}<p class=note>{esc(NOTE)}</p>"
    )
    return page(title, body, css="figure svg { max-width: 100%; height: auto; }")


def _fit_words(fit: Mapping[str, Any] | None) -> str:
    if fit is None:
        return "unavailable"
    residual = number(fit["max_residual"])
    return f"{number(fit['intercept'])} + {number(fit['slope'])} × context (max residual {residual})"


def summary_text(report: Mapping[str, Any], label: str) -> str:
    """Lines for a terminal: settings, one row per step, phase totals, the decode fit, diagnostics."""
    context = report["context"]
    mode = {True: "sampled", False: "greedy"}.get(context["do_sample"], "decoding mode unknown")
    prefill = report["prefill"]
    lines = [
        f"generation of {label}: {context['model_type']}, prompt {_count(context['prompt_tokens'])} tokens, "
        f"max_new_tokens {_count(context['max_new_tokens'])}, {mode}, "
        f"cache {context['cache_class'] or 'none'}, "
        f"attention {context['attention_implementation'] or 'unknown'}",
        step_table_text(report),
        f"prefill: FLOPs {short(prefill['flops'])}, bytes {short(prefill['operator_bytes'])}"
        f"; decode ({report['decode']['steps']} steps): FLOPs {short(report['decode']['flops'])}, "
        f"bytes {short(report['decode']['operator_bytes'])}; outside steps: FLOPs "
        f"{short(report['outside_steps']['flops'])}",
        f"decode fit: FLOPs ≈ {_fit_words(report['decode_fit']['flops'])}; KV bytes ≈ "
        f"{_fit_words(report['decode_fit']['attention_kv_bytes'])}",
    ]
    if "hardware" in context:
        lines.append(
            f"bound: roofline under the stated facts of {context['hardware']['name']!r}, a lower bound on "
            "time, not a prediction"
        )
    if "timing" in report:
        timing = report["timing"]
        lines.append(
            f"timing (a separate run): first token {_seconds(timing['time_to_first_token'])}, decode step "
            f"mean {_seconds(timing['decode_step_mean'])} (IQR {_seconds(timing['decode_step_iqr'])})"
        )
        words = noisy_words(timing["decode_step_seconds"])
        if words:
            lines.append(f"  {words}")
    for entry in [*report["diagnostics"], *report["operator_flops"]["diagnostics"]]:
        lines.append(f"  {entry['code']} ({entry['metric']}): {entry['message']}")
    return "\n".join(lines)
