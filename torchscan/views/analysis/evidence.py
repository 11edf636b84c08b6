"""The explorer's data object (render.md 3.9): maps, combined diagnostics, suggestions, call texts.

Built once from validated reports and shared by the HTML explorer (which embeds it) and the SVG
snapshot. Suggestions state a recorded fact and an experiment to try; none promises accuracy or
speed, and incomplete calls may cost more than the largest complete one.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from torchscan.report.diagnostics import concerns_requested_metric
from torchscan.views.analysis.geometry import COMPUTE_VIEWS, VIEW_LABELS, build_maps
from torchscan.views.analysis.map_svg import attach_tiles
from torchscan.views.analysis.panel_data import attach_panel_texts
from torchscan.views.common.text import long_text, number, path_label
from torchscan.views.comparison.gate import source_note

COMPUTE_DIAGNOSTIC_METRICS = ("module_flops", "macs", "dmas", "flops")


def shape_text(meta: Any) -> str:
    """Short shape wording of input/output metadata (analysis.md 5.4); never a value."""
    if not isinstance(meta, Mapping):
        return "?"
    kind = meta.get("kind")
    if kind == "tensor" and isinstance(meta.get("shape"), list):
        return "[" + ", ".join(str(d) for d in meta["shape"]) + "]"
    if kind == "size" and isinstance(meta.get("shape"), list):
        return "Size[" + ", ".join(str(d) for d in meta["shape"]) + "]"
    if kind == "nested_tensor":
        return "nested"  # ragged: no single shape describes it
    if kind in ("tuple", "list") and isinstance(meta.get("items"), list):
        inner = ", ".join(shape_text(item) for item in meta["items"][:6])
        more = ", …" if len(meta["items"]) > 6 else ""
        return f"{kind}({inner}{more})"
    if kind == "mapping" and isinstance(meta.get("items"), list):
        return f"mapping({len(meta['items'])} items)"
    if kind == "scalar":
        return f"scalar {meta.get('type', '?')}"
    if kind == "object":
        return f"object {meta.get('type', '?')}"
    return str(kind)


def input_line(report: Mapping[str, Any]) -> str:
    """The inputs' shapes in one line: positionals, then keyword inputs by name (``none`` if none)."""
    inputs = report["inputs"]
    args = inputs.get("args") if isinstance(inputs.get("args"), list) else []
    kwargs = inputs.get("kwargs") if isinstance(inputs.get("kwargs"), Mapping) else {}
    # transformers models are called with keyword inputs only: list them, named, after the positionals
    parts = [shape_text(arg) for arg in args] + [
        f"{name}={shape_text(meta)}" for name, meta in kwargs.items()
    ]
    return ", ".join(parts) or "none"


def call_shapes(layer: Mapping[str, Any]) -> str:
    """``[1, 4] → [1, 8]`` for one call's positional inputs and output."""
    args = layer["input"].get("args")
    inputs = ", ".join(shape_text(a) for a in args) if isinstance(args, list) else "?"
    kwargs = layer["input"].get("kwargs")
    if isinstance(kwargs, Mapping) and kwargs:
        inputs += (", " if inputs else "") + ", ".join(
            f"{k}={shape_text(v)}" for k, v in sorted(kwargs.items())
        )
    return f"{inputs or '(no inputs)'} → {shape_text(layer['output'])}"


def attribution(layer: Mapping[str, Any], view: str) -> str:
    """First-attribution wording of a call's own parameters (render.md 3.4)."""
    stats = layer["parameters"]
    count = stats["trainable"] + stats["frozen"]
    if view == "parameter_bytes":
        count = stats["bytes"]
        noun = "newly attributed parameter bytes"
    else:
        noun = "newly attributed parameters"
    if stats["shared"] and count == 0:
        return "Shared tensors · no new parameter attribution"
    text = f"{number(count)} {noun}"
    if stats["shared"]:
        text += " (some tensors were attributed to an earlier call)"
    return text


def combined_diagnostics(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Report diagnostics, then operator diagnostics not already present; each gains ``index``.

    An entry about a metric the explorer was not asked for (receptive-field geometry, issue 23
    item 1) also gains ``"informational": True`` so the inspector can say so beside complete costs.
    """
    entries = list(report["diagnostics"])
    for entry in report["operator_flops"]["diagnostics"]:
        if entry not in entries:
            entries.append(entry)
    out = []
    for i, entry in enumerate(entries):
        item = {**copy.deepcopy(entry), "index": i}
        if not concerns_requested_metric(entry):
            item["informational"] = True
        out.append(item)
    return out


def _top_call(maps: Mapping[str, Any], view: str) -> tuple[float, dict[str, Any], dict[str, Any]] | None:
    best = None
    for group in maps[view]["groups"]:
        for node in group["nodes"]:
            for call in node["calls"]:
                value = call["result"]
                if call["in_group"] and value and value["status"] == "complete" and value["value"] > 0:
                    key = (-value["value"], node["path"], call["call_index"])
                    if best is None or key < best[0]:
                        best = (key, call, node, group)
    if best is None:
        return None
    return best[0][0], best[1], best[2]


def suggestions(
    report: Mapping[str, Any], maps: Mapping[str, Any], diagnostics: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Recorded facts paired with experiments to try (render.md 3.5)."""
    out = []
    for view, fact_name, experiment in (
        (
            "module_flops",
            "largest complete Module FLOPs contribution",
            "Try smaller dimensions or another implementation for this module, check output quality, "
            "then benchmark latency on the target device.",
        ),
        (
            "parameters",
            "largest complete attributed parameters",
            "Try smaller dimensions or parameter sharing for this module, then measure peak memory on "
            "the intended workload.",
        ),
    ):
        top = _top_call(maps, view)
        if top is None:
            continue
        _, call, node = top
        layer = report["layers"][call["index"]]
        value = call["result"]
        fact = (
            f"The {fact_name} is {path_label(node['path'])} · call #{call['call_index']} ({layer['type']}): "
            f"{long_text(value)} (method {value['method']}, scope {value['scope']}, unit {value['unit']}). "
            "Incomplete calls may cost more."
        )
        target = {"path": node["path"], "call_index": call["call_index"], "index": call["index"]}
        out.append(
            {
                "view": view,
                "fact": fact,
                "experiment": experiment,
                "target": target,
                "href": f"#call-{call['index']}",
            }
        )
    compute = [d for d in diagnostics if d["metric"] in COMPUTE_DIAGNOSTIC_METRICS]
    if compute:
        first = compute[0]
        out.append(
            {
                "view": "module_flops",
                "fact": f"{len(compute)} diagnostics concern compute metrics "
                "(module FLOPs, MACs, DMAs or FLOPs).",
                "experiment": "Resolve them, for example with a verified custom formula, before trusting a "
                "compute budget built on these totals.",
                "target": {"path": first.get("path"), "diagnostic": first["index"]},
                "href": f"#diagnostic-{first['index']}",
            }
        )
    return out


def _annotate_calls(
    maps: dict[str, Any], report: Mapping[str, Any], before: Mapping[str, Any] | None
) -> None:
    for view, view_map in maps.items():
        for group in view_map["groups"]:
            for node in group["nodes"]:
                for key, source in (("calls", report), ("before_calls", before)):
                    for call in node[key]:
                        assert source is not None
                        layer = source["layers"][call["index"]]
                        call["shapes"] = call_shapes(layer)
                        which = f"call #{call['call_index']}" if call["called"] else "not called"
                        call["label"] = f"{path_label(node['path'])} · {which} · {layer['type']}"
                        if view not in COMPUTE_VIEWS:
                            call["attribution"] = attribution(layer, view)
                first = node["calls"] or node["before_calls"]
                source = report if node["calls"] else before
                node["shapes"] = call_shapes(source["layers"][first[0]["index"]]) if first and source else ""


def build_data(
    report: Mapping[str, Any],
    before: Mapping[str, Any] | None,
    diff: Mapping[str, Any] | None,
    gate: Sequence[str],
) -> dict[str, Any]:
    """The complete data object embedded in the explorer (render.md 3.9)."""
    maps = build_maps(report, before, gate)
    _annotate_calls(maps, report, before)
    if diff is not None:
        for view, view_map in maps.items():
            view_map["comparison_delta"] = diff["totals"].get(view)
    for view_map in maps.values():
        for group in view_map["groups"]:
            attach_tiles(group)
        attach_panel_texts(view_map, before is not None)
    diagnostics = combined_diagnostics(report)
    return {
        "report": copy.deepcopy(dict(report)),
        "before": copy.deepcopy(dict(before)) if before is not None else None,
        "comparison": copy.deepcopy(dict(diff)) if diff is not None else None,
        "gate": list(gate),
        "comparison_notes": [note] if before is not None and (note := source_note(before, report)) else [],
        "maps": maps,
        "diagnostics": diagnostics,
        "before_diagnostics": combined_diagnostics(before) if before is not None else [],
        "suggestions": suggestions(report, maps, diagnostics),
        "labels": VIEW_LABELS,
    }
