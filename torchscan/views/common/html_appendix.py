"""The explorer's closed appendix: every exact piece of evidence, readable without script.

In order (render.md 3.5): how to read the report, totals, the module hierarchy, every call's
metadata and metrics, baseline calls, operator counts, diagnostics, suggestions, the comparison,
and the inputs and contexts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from torchscan.report.schema import COMPUTE_FIELDS, FIELD_UNITS, metric_result
from torchscan.views.analysis.row_values import is_called
from torchscan.views.common.text import (
    delta_text,
    esc,
    long_parts,
    long_text,
    missing_delta_text,
    number,
    path_label,
    pretty_json,
)


def badge_measure(result: Mapping[str, Any] | None) -> str:
    """Long wording with the status word as a badge: ``complete 1,234 FLOPs``."""
    status, rest = long_parts(result)
    return f'<span class="badge {status}">{status}</span> {esc(rest)}'


NONE_ITEM = "<li>None.</li>"
HOW_TO_READ = (
    '<section id="how-to-read"><h3>How to read this report</h3><ul>'
    "<li>The map is the module hierarchy of executed calls: it is not a computational graph, and the report "
    "schema cannot tie a child call to a parent call.</li>"
    "<li>Module-formula FLOPs, MACs and DMAs are estimates from per-module formulas. FLOPs do not establish "
    "latency; measure latency on the target device.</li>"
    "<li>Parameter bytes are stored parameter sizes, not measured peak memory.</li>"
    "<li><strong>complete</strong>: the value is the full recorded value (zero is a valid value).</li>"
    "<li><strong>partial</strong>: the number is a lower bound only; the full value is unknown (a zero lower "
    "bound leaves the value unknown). It is never extrapolated.</li>"
    "<li><strong>unavailable</strong>: nothing was measured; it is never drawn or counted as zero.</li>"
    "<li>Values are summed only within one method, unit and scope; operator-dispatch FLOPs are a separate "
    "method and are never added to module rows.</li></ul>"
)


def _totals(report: Mapping[str, Any]) -> str:
    rows = "".join(
        f'<tr id="total-{i}"><th scope="row">{esc(name)}</th><td>{badge_measure(value)}</td>'
        f"<td>{esc(value['method'])}</td><td>{esc(value['scope'])}</td><td>{esc(value['unit'])}</td></tr>"
        for i, (name, value) in enumerate(sorted(report["totals"].items()))
    )
    return (
        '<section id="totals"><h3>Model '
        "totals</h3><table><thead><tr><th>Total</th><th>Value</th><th>Method</th>"
        f"<th>Scope</th><th>Unit</th></tr></thead><tbody>{rows}</tbody></table></section>"
    )


def _tree(data: Mapping[str, Any]) -> str:
    flops = data["maps"]["module_flops"]["groups"][0]["nodes"]
    params = {n["id"]: n for n in data["maps"]["parameters"]["groups"][0]["nodes"]}
    out = ['<section class="tree"><h3>Module hierarchy</h3>']
    depths: list[int] = []
    for node in flops:
        while depths and depths[-1] >= node["depth"]:
            out.append("</details>")
            depths.pop()
        calls = node["calls"] or node["before_calls"]
        prefix = "before-call" if not node["calls"] else "call"
        count = f" ×{len(calls)} calls" if len(calls) > 1 else ""
        change = f" · {node['change']}" if node["change"] != "matched" else ""
        links = " ".join(f'<a href="#{prefix}-{c["index"]}">call #{c["call_index"]}</a>' for c in calls)
        out.append(
            f'<details id="module-{node["id"]}" open><summary>{esc(path_label(node["path"]))} · '
            f"{esc(node['type'] or 'structural')}{count}{change} · Module FLOPs "
            f"{esc(long_text(node['subtotal']))} · "
            f"parameters {esc(long_text(params[node['id']]['subtotal']))}</summary>"
            f'<p class="calls">{links or "No recorded call (structural ancestor)."}</p>'
        )
        depths.append(node["depth"])
    out.extend("</details>" for _ in depths)
    out.append("</section>")
    return "".join(out)


def _flat(value: Any) -> bool:
    if isinstance(value, dict):
        return all(
            not isinstance(v, (dict, list)) or (isinstance(v, list) and _flat(v)) for v in value.values()
        )
    if isinstance(value, list):
        return all(not isinstance(v, (dict, list)) for v in value)
    return True


def evidence_json(value: Any, indent: int = 0) -> str:
    """Indented JSON whose innermost objects (a tensor's metadata, a shape) sit on one line.

    Same content and key order as ``pretty_json``; only the line breaks differ, which keeps a
    200-call appendix readable and about a third shorter.
    """
    if _flat(value):
        return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)
    pad = "  " * (indent + 1)
    if isinstance(value, dict):
        items = [
            f"{pad}{json.dumps(k, ensure_ascii=False)}: {evidence_json(v, indent + 1)}"
            for k, v in sorted(value.items())
        ]
        return "{\n" + ",\n".join(items) + "\n" + "  " * indent + "}"
    items = [f"{pad}{evidence_json(v, indent + 1)}" for v in value]
    return "[\n" + ",\n".join(items) + "\n" + "  " * indent + "]"


def _metric_rows(layer: Mapping[str, Any], structure: bool) -> str:
    rows = []
    metrics = dict(layer["metrics"])
    owners = layer.get("metric_owners", {})
    called = is_called(layer)
    for name in COMPUTE_FIELDS:
        if name not in metrics and name not in owners and called:
            method = "not_requested" if structure else "not_recorded"
            metrics[name] = metric_result(
                "unavailable", unit=FIELD_UNITS[name], scope="module_call", method=method
            )
    # One "method · scope · unit" cell per row keeps a 200-call page's evidence tables compact.
    for name, value in sorted(metrics.items()):
        rows.append(
            f'<tr><th scope="row">{esc(name)}</th><td>{badge_measure(value)}</td>'
            f"<td>{esc(value['method'])} · {esc(value['scope'])} · {esc(value['unit'])}</td></tr>"
        )
    for name, owner in sorted(owners.items()):
        rows.append(
            f'<tr><th scope="row">{esc(name)}</th><td colspan="2"><span class="badge covered">covered</span> '
            f"{esc(name)}: included in {esc(path_label(owner['path']))} · call #{owner['call_index']} "
            "inclusive estimate</td></tr>"
        )
    for name, share in sorted(layer.get("attribution", {}).items()):
        rows.append(
            f'<tr><th scope="row">{esc(name)} share</th><td>{badge_measure(share)}</td>'
            "<td>this row's part of the inclusive estimate, by the module formulas (already in it; "
            "never added again)</td></tr>"
        )
    if not called:
        rows.append(
            '<tr><th scope="row">calls</th><td colspan="2"><span class="badge">not called</span> the module '
            "never ran as a module call; its row holds its own parameters</td></tr>"
        )
    return (
        "<table><thead><tr><th>Metric</th><th>Value</th><th>Method · scope · unit</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _calls(report: Mapping[str, Any], diagnostics: list[Mapping[str, Any]], prefix: str, heading: str) -> str:
    structure = report["context"].get("analysis_mode") == "structure"
    diag_prefix = "before-diagnostic" if prefix == "before-call" else "diagnostic"
    out = [f'<section class="calls-evidence"><h3>{esc(heading)}</h3>']
    for i, layer in enumerate(report["layers"]):
        evidence = {key: layer[key] for key in ("input", "output", "parameters", "buffers")}
        for key in ("metric_ownership", "metric_owners", "token_dependencies", "called", "attribution"):
            if key in layer:
                evidence[key] = layer[key]
        links = " ".join(
            f'<a href="#{diag_prefix}-{d["index"]}">{esc(d["code"])}</a>'
            for d in diagnostics
            if d.get("path") == layer["path"]
        )
        out.append(
            f'<details id="{prefix}-{i}"><summary>{esc(path_label(layer["path"]))} · '
            f"{'call' if is_called(layer) else 'not called, row'} #{layer['call_index']} · "
            f"{esc(layer['type'])}</summary>{_metric_rows(layer, structure)}"
            f"<pre>{esc(evidence_json(evidence))}</pre>"
            f"<p>Diagnostics for this path: {links or 'none'}</p></details>"
        )
    out.append("</section>")
    return "".join(out)


def _operators(report: Mapping[str, Any]) -> str:
    flops = report["operator_flops"]
    ops = sorted(flops["by_operator"].items(), key=lambda item: (-item[1], item[0]))
    op_rows = "".join(f"<tr><td>{esc(name)}</td><td>{number(count)}</td></tr>" for name, count in ops)
    modules = "".join(
        f"<li>{esc(label)}: {number(count)} known inclusive FLOPs</li>"
        for label, count in sorted(flops["by_module"].items())
    )
    ignored = "".join(
        f"<li>{esc(name)}: {number(entry['calls'])} calls · {esc(entry['reason'])}</li>"
        for name, entry in sorted(flops["ignored_operators"].items())
    )
    return (
        f'<section id="operators"><h3>Operator-dispatch FLOPs</h3><p>Authoritative total: '
        f"{badge_measure(flops['total'])} · method {esc(flops['total']['method'])}</p>"
        "<table><caption>Known counts by operator (count descending, then "
        "name)</caption><thead><tr><th>Operator"
        f"</th><th>FLOPs</th></tr></thead><tbody>{op_rows}</tbody></table>"
        "<details><summary>Inclusive counts per PyTorch module label</summary><p>These labels are "
        "inclusive and "
        "must not be summed or joined to module rows.</p>"
        f"<ul>{modules}</ul></details><h4>Ignored operators (zero-FLOP by convention, distinct from "
        "uncounted "
        f"work)</h4><ul>{ignored or '<li>None.</li>'}</ul></section>"
    )


def _diagnostic_items(entries: list[Mapping[str, Any]], prefix: str) -> str:
    return "".join(
        f'<li id="{prefix}-{d["index"]}"><span class="badge '
        f'{esc(d["severity"])}">{esc(d["severity"])}</span> '
        f"<code>{esc(d['code'])}</code> · metric {esc(d['metric'])}"
        f"{' · path ' + esc(path_label(d['path'])) if 'path' in d else ' · Global'}"
        f"{' · operator ' + esc(d['operator']) if 'operator' in d else ''}: {esc(d['message'])}</li>"
        for d in entries
    )


def _comparison(data: Mapping[str, Any], before: Mapping[str, Any]) -> str:
    diff = data["comparison"]
    gate = data["gate"]
    parts = ['<section id="comparison"><h3>Before / after comparison</h3>']
    parts.extend(f'<p class="comparison-note">{esc(note)}</p>' for note in data["comparison_notes"])
    if gate:
        parts.append(
            "<p>Compute deltas are withheld because the two analyses are not comparable: "
            f"{esc('; '.join(gate))}. Storage totals keep their deltas.</p>"
        )
    rows = []
    for name, entry in sorted(diff["totals"].items()):
        unit = (entry.get("after") or entry.get("before") or {}).get("unit", "")
        if entry.get("withheld"):
            change = f"unavailable · {entry['withheld']}"
        elif entry["delta"] is None:
            change = missing_delta_text(entry)
        else:
            change = delta_text(entry["delta"], unit)
        rows.append(
            f'<tr><th scope="row">{esc(name)}</th><td>{badge_measure(entry.get("before"))}</td>'
            f"<td>{badge_measure(entry.get('after'))}</td><td>{esc(change)}</td></tr>"
        )
    parts.append(
        "<table><thead><tr><th>Total</th><th>Before</th><th>After</th><th>Change (after minus "
        "before)</th></tr>"
        f"</thead><tbody>{''.join(rows)}</tbody></table>"
    )
    layers = diff["layers"]
    for key, heading in (
        ("added", "Added calls"),
        ("removed", "Removed calls"),
        ("changed", "Changed calls"),
    ):
        items = []
        for entry in layers[key]:
            label = f"{path_label(entry['path'])} · call #{entry['call_index']}"
            if key == "changed":
                metrics = "; ".join(
                    f"{name}: "
                    + (
                        f"unavailable · {diffed['withheld']}"
                        if diffed.get("withheld")
                        else (
                            delta_text(diffed["delta"], (diffed.get("after") or {}).get("unit", ""))
                            if diffed["delta"] is not None
                            else missing_delta_text(diffed)
                        )
                    )
                    for name, diffed in sorted(entry["metrics"].items())
                )
                items.append(f"<li>{esc(label)}: {esc(metrics)}</li>")
            else:
                metrics = "; ".join(f"{n}: {long_text(v)}" for n, v in sorted(entry["metrics"].items()))
                items.append(f"<li>{esc(label)} (snapshot, no delta): {esc(metrics)}</li>")
        parts.append(f"<h4>{heading} ({len(items)})</h4><ul>{''.join(items)}</ul>")
    parts.append(
        "<p>Matching context does not establish equal latency or peak memory.</p>"
        f"<h4>Before input and measurement context</h4><pre>{esc(pretty_json(_context(before)))}</pre>"
        f"<h4>After input and measurement context</h4><pre>{esc(pretty_json(_context(data['report'])))}</pre>"
        "</section>"
    )
    return "".join(parts)


def _context(report: Mapping[str, Any]) -> dict[str, Any]:
    return {"inputs": report["inputs"], "context": report["context"]}


def appendix(data: Mapping[str, Any], report: Mapping[str, Any], before: Mapping[str, Any] | None) -> str:
    """The closed ``details.appendix`` with all exact evidence."""
    params_total = report["totals"].get("parameters")
    root = data["maps"]["parameters"]["groups"][0]["nodes"][0]["subtotal"]
    note = ""
    if (
        params_total
        and params_total["status"] == "complete"
        and params_total["value"] > (root["known_value"] or 0)
    ):
        note = (
            "<p>Some registered parameters belong to no executed call: the model total exceeds the "
            "attributed "
            "subtotal of the executed hierarchy.</p>"
        )
    suggestions = "".join(
        f'<li class="suggestion"><p><strong>Recorded fact:</strong> {esc(s["fact"])}</p>'
        f"<p><strong>Experiment to try:</strong> {esc(s['experiment'])}</p>"
        f'<p><a href="{s["href"]}">Evidence</a></p></li>'
        for s in data["suggestions"]
    )
    parts = [
        '<details class="appendix"><summary>Exact evidence: totals, hierarchy, every call, operators, '
        "diagnostics, suggestions</summary>",
        HOW_TO_READ + note + "</section>",
        _totals(report),
        _tree(data),
        _calls(report, data["diagnostics"], "call", "Call evidence"),
    ]
    if before is not None:
        parts.append(_calls(before, data["before_diagnostics"], "before-call", "Before call evidence"))
    parts.append(_operators(report))
    parts.append(
        '<section id="diagnostics"><h3>Diagnostics</h3>'
        f"<ul>{_diagnostic_items(data['diagnostics'], 'diagnostic')}"
        "</ul>"
    )
    if before is not None:
        parts.append(
            "<h4>Before diagnostics</h4>"
            f"<ul>{_diagnostic_items(data['before_diagnostics'], 'before-diagnostic') or NONE_ITEM}</ul>"
        )
    parts.append("</section>")
    parts.append(
        f'<section id="suggestions"><h3>Suggestions</h3><ul>{suggestions or "<li>None.</li>"}</ul>'
        "<p>No suggestion promises accuracy or speed.</p></section>"
    )
    if before is not None:
        parts.append(_comparison(data, before))
    parts.append(
        '<section id="inputs-context"><h3>Inputs and '
        f"context</h3><pre>{esc(pretty_json(_context(report)))}</pre>"
        "</section></details>"
    )
    return "".join(parts)
