"""Plain-text views of reports for the ``torchscan`` command line.

Pure functions from report dicts to strings; ``cli.py`` does the printing. Incomplete numbers are
never shown as plain numbers: a partial value is ``≥ known``, an unavailable one ``unavailable``,
and a delta that is not complete on both sides is ``unknown``. These views are for people; nothing
should parse them (use ``--json``).
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from torchscan.views.common.method_note import method_note
from torchscan.views.common.text import duration, fixed, human, relative

MIB = 1024 * 1024
PHASES = ("forward", "backward", "optimizer", "recompute")
_SI = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def count(value: float) -> str:
    """A number with thousands separators (integers stay exact; never e-notation)."""
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):,}"
    return fixed(value)


def si(value: float, unit: str) -> str:
    """``12.35 MFLOPs``-style value with an SI prefix."""
    for scale, prefix in _SI:
        if abs(value) >= scale:
            return f"{value / scale:.2f} {prefix}{unit}"
    return f"{count(value)} {unit}"


def seconds(value: float) -> str:
    """A duration in the most readable of s, ms, µs, ns (``149.6 µs``)."""
    return duration(value)


def metric(result: Mapping[str, Any] | None) -> str:
    """One MetricResult: its value, ``≥ known`` for a lower bound, ``unavailable`` or ``missing``."""
    if result is None:
        return "missing"
    status = result.get("status")
    if status == "complete":
        return count(result["value"])
    if status == "partial":
        return f"≥ {count(result['known_value'])}"
    return "unavailable"


def figure(result: Mapping[str, Any] | None, shown: Callable[[float], str]) -> str:
    """A MetricResult through ``shown``; a partial one as a lower bound, an unavailable one by name."""
    if result is None or result["status"] == "unavailable":
        return "unavailable"
    text = shown(result["known_value"])
    return text if result["status"] == "complete" else f"≥ {text} (partial: lower bound)"


def delta(diff: Mapping[str, Any]) -> str:
    """A MetricDiff's delta with its sign, or ``unknown (<why>)``: never a number when incomplete."""
    if diff.get("status") == "complete" and diff.get("delta") is not None:
        value = diff["delta"]
        return f"+{count(value)}" if value > 0 else count(value)
    before, after = diff.get("before"), diff.get("after")
    if before is None or after is None:
        return "unknown (missing on one side)"
    sides = {before.get("status"), after.get("status")}
    if any(entry.get("code") == "delta_out_of_range" for entry in diff.get("diagnostics", ())):
        return "unknown (difference beyond the float range)"
    if sides == {"complete"}:
        return "unknown (different unit, scope or method)"
    return f"unknown ({'partial' if 'partial' in sides else 'unavailable'})"


def change(diff: Mapping[str, Any]) -> str:
    """A complete MetricDiff's delta relative to ``before`` (``-50 %``); ``-`` when there is none."""
    before = diff.get("before") or {}
    if diff.get("status") != "complete" or diff.get("delta") is None or before.get("status") != "complete":
        return "-"
    return relative(diff["delta"], before.get("value")) or "-"


def table(header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[int] = ()) -> str:
    """Left-aligned columns (the indices in ``right`` right-aligned), two spaces apart."""
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]

    def line(row: Sequence[str]) -> str:
        cells = [
            str(c).rjust(w) if i in right else str(c).ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(r) for r in rows)])


def diagnostics_lines(diagnostics: Sequence[Mapping[str, Any]], limit: int = 20) -> list[str]:
    """One line per diagnostic (code, its metric, where, message), capped at ``limit``."""
    lines = []
    for entry in diagnostics[:limit]:
        where = " ".join(str(entry[k]) for k in ("path", "operator") if entry.get(k) not in (None, ""))
        where = f" [{where}]" if where else ""
        metric = f" ({entry['metric']})" if entry.get("metric") else ""  # every row names its metric
        lines.append(f"  {entry['code']}{metric}{where}: {entry['message']}")
    if len(diagnostics) > limit:
        lines.append(f"  ... {len(diagnostics) - limit} more (see --json)")
    return lines


def status_line(total: Mapping[str, Any], diagnostics: Sequence[Any]) -> str:
    """The status line of an operator FLOP total."""
    unit = total.get("unit", "FLOPs")
    if total["status"] == "complete":
        return f"status: complete, total {count(total['value'])} {unit} ({si(total['value'], unit)})"
    if total["status"] == "partial":
        known = total["known_value"]
        return (
            f"status: partial, known ≥ {count(known)} {unit} ({si(known, unit)}); a lower bound, "
            f"not an estimate: {len(diagnostics)} diagnostic(s) above"
        )
    return f"status: unavailable ({len(diagnostics)} diagnostic(s))"


def flop_report(report: Mapping[str, Any], title: str) -> str:
    """Per-operator counts, ignored operators, diagnostics and the status line of a FlopReport."""
    context = report.get("context", {})
    lines = [
        f"{title}",
        f"method {context.get('method')}, convention {context.get('counting_convention')}",
        "",
    ]
    by_operator = report.get("by_operator", {})
    rows = [[op, count(n)] for op, n in sorted(by_operator.items(), key=lambda kv: (-kv[1], kv[0]))]
    lines.append(table(["operator", "FLOPs"], rows or [["(none)", "0"]], right=[1]))
    ignored = report.get("ignored_operators", {})
    if ignored:
        lines += ["", "ignored as zero-FLOP (not counted, by convention):"]
        lines += [f"  {op}: {e['calls']} call(s), {e['reason']}" for op, e in ignored.items()]
    if report.get("diagnostics"):
        lines += ["", "diagnostics:", *diagnostics_lines(report["diagnostics"])]
    lines += phase_lines(report)
    note = method_note(report)  # issue 23 item 7: why a FlopCounterMode cross-check reads lower
    if note is not None:
        lines += ["", *textwrap.wrap(note, 100, subsequent_indent="  ")]
    lines += ["", status_line(report["total"], report.get("diagnostics", []))]
    return "\n".join(lines)


def phase_lines(report: Mapping[str, Any]) -> list[str]:
    """The FLOPs of each phase of a FlopReport's ``by_phase``, when it has one."""
    phases = report.get("by_phase")
    if not isinstance(phases, Mapping):
        return []
    lines = ["", "by phase (operators while autograd, an optimizer step or a checkpoint re-run ran):"]
    total = report.get("total") or {}
    whole = total.get("value") if total.get("status") == "complete" else None
    for name in PHASES:
        if name in phases:
            result = phases[name]
            text = figure(result, lambda v: f"{count(v)} FLOPs ({human(v, 'FLOPs')})")
            if whole and result["status"] == "complete":
                text += f", {human(result['value'] / whole, 'ratio')} of the total"
            lines.append(f"  {name:<10} {text}")
    return lines


def comparison(diff: Mapping[str, Any], limit: int = 20) -> str:
    """Totals delta table and the added/removed/changed layer calls of a ReportDiff."""
    rows = [
        [name, metric(d.get("before")), metric(d.get("after")), change(d), delta(d)]
        for name, d in diff["totals"].items()
    ]
    lines = [table(["total", "before", "after", "change", "delta"], rows, right=[1, 2, 3])]
    layers = diff["layers"]
    added, removed, changed = layers["added"], layers["removed"], layers["changed"]
    lines += ["", f"layer calls: {len(added)} added, {len(removed)} removed, {len(changed)} changed"]
    for label, entries in (("added", added), ("removed", removed)):
        for entry in entries[:limit]:
            lines.append(f"  {label}: {_call(entry)}")
        if len(entries) > limit:
            lines.append(f"  ... {len(entries) - limit} more {label} (see --json)")
    for entry in changed[:limit]:
        parts = [
            f"{name} {metric(d.get('before'))} -> {metric(d.get('after'))} ({delta(d)}"
            + (f", {change(d)})" if change(d) != "-" else ")")
            for name, d in entry["metrics"].items()
        ]
        if "token_dependencies" in entry:
            parts.append("token dependencies changed")
        lines.append(f"  changed: {_call(entry)}: {'; '.join(parts)}")
    if len(changed) > limit:
        lines.append(f"  ... {len(changed) - limit} more changed (see --json)")
    lines += [
        "",
        "unknown: a side is partial, unavailable, missing or labelled differently; no number is implied.",
    ]
    return "\n".join(lines)


def _call(entry: Mapping[str, Any]) -> str:
    return f"{entry['path'] or '(root)'}#{entry['call_index']}"


def benchmark(report: Mapping[str, Any], label: str) -> str:
    """First call, median, IQR and throughput of a BenchmarkReport, with what they do not mean."""
    totals, context, measurement = report["totals"], report["context"], report["measurement"]
    raw = measurement.get("raw_times_seconds", [])
    return "\n".join(
        [
            f"latency of {label} on {context.get('device')} ({context.get('num_threads')} thread(s)): "
            f"{len(raw)} blocks × {measurement.get('number_per_run')} calls per block",
            f"first call   {seconds(totals['first_call_latency']['value'])}"
            "   (one synchronised call; excludes process start and model loading)",
            f"median       {seconds(totals['latency']['value'])} per call"
            "   (warmed block average, not a request percentile)",
            f"IQR          {seconds(totals['latency_iqr']['value'])}   (spread of block averages)",
            f"throughput   {human(totals['throughput']['value'], totals['throughput']['unit'])}"
            "   (this process, calls back to back)",
        ]
    )


def rss(result: Mapping[str, Any]) -> str:
    """Peak RSS in MiB with its scope."""
    value = result["value"]
    return (
        f"peak RSS: {value / MIB:.1f} MiB ({count(value)} bytes; whole child process lifetime, "
        f"{result['method']})"
    )
