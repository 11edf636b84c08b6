"""HTML page and terminal table of a GenerationReport (generation.md 2-3); never imports torch.

The page embeds the SVG of :mod:`torchscan.views.generation_svg`, the step table, the phase totals,
the decode fit, the timings (with the latency chapter's ``noisy`` label) and the diagnostics. Plain
HTML, no script, every report string escaped, byte-identical for the same report.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscan.views.benchmark_html import CSP
from torchscan.views.generation_svg import generation_svg
from torchscan.views.html import asset
from torchscan.views.html_appendix import badge_measure
from torchscan.views.strip_svg import NOISY_RATIO, quantile
from torchscan.views.text import compact, duration, esc, number

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
    """``1.23M``, ``≥ 7`` (a lower bound), ``n/a`` (not applicable) or ``unknown``, for tables."""
    if result is not None and result["method"] == "not_applicable":
        return "n/a"  # e.g. attention K/V bytes of a model without attention: nothing was owed
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
    head = ROW_HEADER + (["intensity (FLOPs/byte)", "roofline"] if hardware else [])
    body = []
    for step, row in zip(report["steps"], step_rows(report), strict=True):
        cells = row + (
            [short(step["arithmetic_intensity"]), _seconds(step["roofline_seconds"])] if hardware else []
        )
        body.append("<tr>" + "".join(f"<td>{esc(cell)}</td>" for cell in cells) + "</tr>")
    return (
        "<table><caption>Steps (one per top-level model call)</caption><thead><tr>"
        + "".join(f"<th>{esc(name)}</th>" for name in head)
        + f"</tr></thead><tbody>{''.join(body)}</tbody></table>"
        "<p class=note>≥ marks a lower bound (partial); unknown marks an unavailable value, never zero.</p>"
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
                f'<tr><th scope="row">{esc(part)}</th><td>{esc(name)}</td><td>{badge_measure(result)}</td>'
                f"<td>{esc(result['method'])}</td></tr>"
            )
    return (
        "<table><caption>Totals by phase (decode_per_token: mean of one decode step)</caption><thead><tr>"
        f"<th>Part</th><th>Metric</th><th>Value</th><th>Method</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _fit(report: Mapping[str, Any]) -> str:
    items = []
    for name, fit in report["decode_fit"].items():
        if fit is None:
            items.append(f"<li>{esc(name)}: unavailable (see diagnostics)</li>")
        else:
            items.append(
                f"<li>{esc(name)} ≈ {esc(number(fit['intercept']))} + {esc(number(fit['slope']))} × "
                "context tokens "
                f"(largest residual {esc(number(fit['max_residual']))})</li>"
            )
    return f"<h2>Decode fit (least squares over decode steps)</h2><ul>{''.join(items)}</ul>"


def noisy_words(seconds: list[float]) -> str:
    """The latency chapter's ``noisy`` label for decode step times (IQR ÷ median above 10 %), or ''."""
    if not seconds:
        return ""
    middle = quantile(seconds, 0.5)
    spread = quantile(seconds, 0.75) - quantile(seconds, 0.25)
    if middle <= 0 or spread / middle <= NOISY_RATIO:
        return ""
    return (
        f"noisy: the IQR of the decode step times is {spread / middle:.0%} of their median (above "
        f"{NOISY_RATIO:.0%}); this describes the spread of one run, not a significance test"
    )


def _timing(report: Mapping[str, Any]) -> str:
    if "timing" not in report:
        return ""
    timing = report["timing"]
    rows = "".join(
        f'<tr><th scope="row">{esc(name)}</th><td>{badge_measure(timing[name])}</td>'
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


def _context(report: Mapping[str, Any]) -> str:
    context = report["context"]
    keys = [key for key in context if key != "hardware"]
    rows = "".join(f'<tr><th scope="row">{esc(key)}</th><td>{esc(context[key])}</td></tr>' for key in keys)
    if "hardware" in context:
        rows += f'<tr><th scope="row">hardware (stated)</th><td>{esc(context["hardware"])}</td></tr>'
    return f"<table><caption>Context</caption><tbody>{rows}</tbody></table>"


def render_generation(report: Mapping[str, Any], *, title: str) -> str:
    """The HTML page of a validated GenerationReport."""
    body = (
        f"<figure>{generation_svg(report)}<figcaption>Per-step operator FLOPs and bytes against context "
        "length; the square is the prefill.</figcaption></figure>"
        f"{_step_table(report)}{_totals(report)}{_fit(report)}{_timing(report)}{_diagnostics(report)}"
        f"{_context(report)}<p class=note>{esc(NOTE)}</p>"
    )
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        f"<title>{esc(title)}</title><style>{asset('explorer.css')}</style></head><body>"
        f'<main id="main"><h1>{esc(title)}</h1>{body}</main></body></html>\n'
    )


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
