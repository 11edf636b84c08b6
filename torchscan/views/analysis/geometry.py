"""Report -> view model: the module hierarchy, metric groups, subtotals, icicle geometry and rail.

One model per view feeds the HTML explorer and the SVG snapshot (render.md 2). Values are summed
only inside one ``(method, unit, scope)`` group; a container without its own formula stays
unknown, never zero; a partial value sizes only its known part. The hierarchy is the module tree
of executed calls, not a computational graph, and the schema cannot tie a child call to a parent
call, so repeated calls of a path are shown side by side, never nested.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from torchscan.report.schema import in_float_range, metric_result
from torchscan.views.analysis.geometry_layout import icicle_layout
from torchscan.views.analysis.row_values import NOT_CALLED_TEXT, is_called
from torchscan.views.analysis.tile_text import value_hidden
from torchscan.views.analysis.tree_order import all_paths, call_ordered, first_calls, parent_of
from torchscan.views.common.text import delta_text, long_text, path_label
from torchscan.views.comparison.delta_words import relative

VIEWS = ("module_flops", "operator_flops", "macs", "dmas", "parameters", "parameter_bytes")
COMPUTE_VIEWS = ("module_flops", "operator_flops", "macs", "dmas")
# The operator view sizes each call by the operators dispatched in its own frame
# (``metrics.operator_flops_self``, analysis.md 6.4), so a subtree subtotal equals the recorded
# inclusive per-call count; the counter's ``by_module`` labels never enter a map.
OPERATOR_SELF_METRIC = "operator_flops_self"
VIEW_LABELS = {
    "module_flops": "Module FLOPs",
    "operator_flops": "Operator FLOPs",
    "macs": "MACs",
    "dmas": "DMAs",
    "parameters": "Attributed parameters",
    "parameter_bytes": "Attributed parameter bytes",
}
VIEW_UNITS = {
    "module_flops": "FLOPs",
    "operator_flops": "FLOPs",
    "macs": "MACs",
    "dmas": "DMAs",
    "parameters": "elements",
    "parameter_bytes": "bytes",
}
VIEW_TOTALS = {
    "module_flops": "module_flops",
    "operator_flops": "operator_flops",
    "macs": "macs",
    "dmas": "dmas",
    "parameters": "parameters",
    "parameter_bytes": "parameter_bytes",
}
PARAMETER_SCOPE = "module_call_attribution"
PARAMETER_METHOD = "pytorch_shared_tensor_deduplication"
UNRECORDED_METHOD = "no_recorded_measurement"
SUBTOTAL_METHOD = "derived_recorded_subtotal"
SUBTOTAL_SCOPE = "observed_subtree"
NOT_CALLED_DISPLAY = "not called · the module never ran as a module call; no own value"

Result = dict[str, Any]
Triple = tuple[str, str, str]


def result(status: str, value: float | None, unit: str, scope: str, method: str) -> Result:
    """A MetricResult for derived view values (never written into a report), via the one constructor."""
    number = None if status == "unavailable" else value
    return dict(metric_result(status, number, unit=unit, scope=scope, method=method, signed=True))  # type: ignore[arg-type]


def summarize(results: Sequence[Result], unit: str, scope: str, method: str) -> Result | None:
    """Sum results of one group: none -> None; no known number -> unavailable; else partial/complete."""
    if not results:
        return None
    known = [r["known_value"] for r in results if r["known_value"] is not None]
    if not known:
        return result("unavailable", None, unit, scope, method)
    total = sum(known)
    if not in_float_range(total):  # every part fits a float but their sum does not: no subtotal
        return result("unavailable", None, unit, scope, method)
    status = "complete" if all(r["status"] == "complete" for r in results) else "partial"
    return result(status, total, unit, scope, method)


def call_value(layer: Mapping[str, Any], view: str) -> tuple[Result | None, dict[str, Any] | None]:
    """The call's own result for a view and, if an ancestor's inclusive estimate covers it, the owner."""
    if view == "parameters":
        stats = layer["parameters"]
        count = stats["trainable"] + stats["frozen"]
        return result("complete", count, "elements", PARAMETER_SCOPE, PARAMETER_METHOD), None
    if view == "parameter_bytes":
        return result(
            "complete", layer["parameters"]["bytes"], "bytes", PARAMETER_SCOPE, PARAMETER_METHOD
        ), None
    if view == "operator_flops":
        return layer["metrics"].get(OPERATOR_SELF_METRIC), None
    share = layer.get("attribution", {}).get(view)
    if share is not None:  # views-3.md 1: this row's part of an inclusive native estimate
        return share, None
    owner = layer.get("metric_owners", {}).get(view)
    if owner is not None:
        return None, owner
    return layer["metrics"].get(view), None


def triple(value: Mapping[str, Any]) -> Triple:
    """Group identity of a result."""
    return (value["method"], value["unit"], value["scope"])


class Hierarchy:
    """Node paths with parents, children in forward (call) order, pre-order and each path's calls.

    Node ids follow the numeric-aware path order (stable whatever ran first); the pre-order walk,
    and so every map, rail, keyboard order and hierarchy, follows the forward pass.
    """

    def __init__(self, report: Mapping[str, Any], before: Mapping[str, Any] | None) -> None:
        self.paths = all_paths([report, before])
        self.ids = {path: f"node-{k}" for k, path in enumerate(self.paths)}
        self.children: dict[str, list[str]] = {path: [] for path in self.paths}
        for path in self.paths:
            parent = parent_of(path)
            if parent is not None:
                self.children[parent].append(path)
        after_order, before_order = first_calls(report), first_calls(before)
        for path, children in self.children.items():
            self.children[path] = call_ordered(children, after_order, before_order)
        self.preorder: list[str] = []
        stack = [""]
        while stack:
            path = stack.pop()
            self.preorder.append(path)
            stack.extend(reversed(self.children[path]))
        self.calls = self._calls(report)
        self.before_calls = self._calls(before) if before is not None else None
        self.after_set = set(all_paths([report]))
        self.before_set = set(all_paths([before])) if before is not None else set()

    def _calls(self, report: Mapping[str, Any]) -> dict[str, list[tuple[int, Mapping[str, Any]]]]:
        calls: dict[str, list[tuple[int, Mapping[str, Any]]]] = {path: [] for path in self.paths}
        for index, layer in enumerate(report["layers"]):
            calls[layer["path"]].append((index, layer))
        return calls

    def depth(self, path: str) -> int:
        """Root 0, else the number of dotted components."""
        return 0 if path == "" else path.count(".") + 1

    def change(self, path: str) -> str:
        """``matched``, ``added`` (only after) or ``removed`` (only before)."""
        if self.before_calls is None or (path in self.after_set and path in self.before_set):
            return "matched"
        return "added" if path in self.after_set else "removed"


def _group_keys(hierarchy: Hierarchy, view: str) -> list[tuple[Triple, bool]]:
    triples: set[Triple] = set()
    unrecorded = False
    for calls in (hierarchy.calls, hierarchy.before_calls):
        if calls is None:
            continue
        for path, entries in calls.items():
            for _, layer in entries:
                value, owner = call_value(layer, view)
                if value is not None:
                    triples.add(triple(value))
                elif owner is None and not hierarchy.children[path] and is_called(layer):
                    unrecorded = True  # a module that never ran has no unknown work of its own
    keys = [(key, False) for key in triples]
    if unrecorded or not triples:
        keys.append(((UNRECORDED_METHOD, VIEW_UNITS[view], "module_call"), True))
    return sorted(keys)


def _group_calls(
    hierarchy: Hierarchy,
    calls: dict[str, list[tuple[int, Mapping[str, Any]]]],
    path: str,
    view: str,
    key: Triple,
    synthetic: bool,
) -> list[dict[str, Any]]:
    entries = []
    for index, layer in calls[path]:
        value, owner = call_value(layer, view)
        called = is_called(layer)
        if synthetic:
            in_group = value is None and owner is None and not hierarchy.children[path] and called
            shown = result("unavailable", None, key[1], key[2], key[0]) if in_group else value
        else:
            in_group = value is not None and triple(value) == key
            shown = value
        if owner is not None:
            owner_label = path_label(owner["path"])
            display = f"covered · included in {owner_label} · call #{owner['call_index']} inclusive estimate"
            status_word = "covered"
        elif not called and value is None:
            display = NOT_CALLED_DISPLAY
            status_word = NOT_CALLED_TEXT
        else:
            display = long_text(shown) if in_group else "not recorded in this method group"
            status_word = shown["status"] if in_group and shown is not None else "not in group"
        entries.append(
            {
                "index": index,
                "call_index": layer["call_index"],
                "result": shown,
                "shared": bool(layer["parameters"]["shared"]),
                "in_group": in_group,
                "covered_by": owner,
                "called": called,
                "display": display,
                "display_status": status_word,
            }
        )
    return entries


NO_CONTRIBUTION = "no comparable recorded contribution"
FOREIGN_REASON = "part of this branch is measured under another method or not recorded; no numeric delta"
INCOMPLETE_REASON = "complete measurements needed on both sides"


def _foreign(node: Mapping[str, Any], synthetic: bool, leaf: bool) -> bool:
    """Whether a call of the node sits outside the group (another method, or an unrecorded leaf).

    Such a branch's group subtotal leaves part of its work out, so no subtotal delta is claimed.
    Covered calls are not foreign (their work is in an ancestor's inclusive estimate), nor is a
    container without its own formula (its work is its children's).
    """
    for call in node["calls"] + node["before_calls"]:
        if call["in_group"] or call["covered_by"] is not None or not call["called"]:
            continue
        if call["result"] is not None or (leaf and not synthetic):
            return True
    return False


def _subtree_delta(
    node: Mapping[str, Any], after_present: bool, before_present: bool
) -> tuple[float | None, str | None]:
    """After minus before of a branch's group subtotal (issue 23): known whenever both sides are complete.

    A side where the branch did not run at all (an added or removed module) contributes an exact 0,
    so a removed branch reads -before and an added one +after.
    """
    if node["_foreign_all"]:
        return None, FOREIGN_REASON
    if not node["_all"] and not node["_before_all"]:
        return None, NO_CONTRIBUTION
    values = []
    for present, parts, subtotal in (
        (after_present, node["_all"], node["subtotal"]),
        (before_present, node["_before_all"], node["before_subtotal"]),
    ):
        if not present:
            values.append(0)
        elif not parts or subtotal is None or subtotal["status"] != "complete":
            return None, INCOMPLETE_REASON
        else:
            values.append(subtotal["value"])
    delta = values[0] - values[1]
    if not in_float_range(delta):
        return None, "the difference does not fit a float"
    return delta, None


def build_group(
    hierarchy: Hierarchy, view: str, key: Triple, synthetic: bool, gate: Sequence[str], k: int
) -> dict[str, Any]:
    """One map: nodes with direct values, subtotals, deltas, layout and rail kinds."""
    method, unit, scope = key
    comparing = hierarchy.before_calls is not None
    nodes: dict[str, dict[str, Any]] = {}
    for path in hierarchy.preorder:
        calls = _group_calls(hierarchy, hierarchy.calls, path, view, key, synthetic)
        before_calls = (
            _group_calls(hierarchy, hierarchy.before_calls, path, view, key, synthetic)
            if hierarchy.before_calls is not None
            else []
        )
        own = [c["result"] for c in calls if c["in_group"]]
        before_own = [c["result"] for c in before_calls if c["in_group"]]
        direct = summarize(own, unit, scope, method)
        before_direct = summarize(before_own, unit, scope, method)
        first = (calls or before_calls or [{}])[0]
        layer_type = ""
        for entries in (hierarchy.calls, hierarchy.before_calls or {}):
            if entries.get(path):
                layer_type = entries[path][0][1]["type"]
                break
        if not (calls or before_calls):
            kind = "structural"
        elif view in ("parameters", "parameter_bytes"):
            kind = "attributed"
        else:
            kind = "recorded" if own or before_own else "structural"
        nodes[path] = {
            "id": hierarchy.ids[path],
            "path": path,
            "label": path_label(path.rsplit(".", 1)[-1]) if path else "(root)",
            "type": layer_type,
            "parent": hierarchy.ids[p] if (p := parent_of(path)) is not None else None,
            "children": [hierarchy.ids[c] for c in hierarchy.children[path]],
            "depth": hierarchy.depth(path),
            "calls": calls,
            "before_calls": before_calls,
            "covered": bool(first.get("covered_by")) and not own,
            # views-3.md 1: every call of the path is the row of a module that never ran
            "not_called": bool(calls or before_calls) and not any(c["called"] for c in calls + before_calls),
            "direct": direct,
            "direct_kind": kind,
            "direct_known": (direct or {}).get("known_value") or 0,
            "before_direct": before_direct,
            "change": hierarchy.change(path),
            "_own": own,
            "_before_own": before_own,
        }
    # Subtotals and deltas bottom-up (reverse pre-order visits children before parents).
    for path in reversed(hierarchy.preorder):
        node = nodes[path]
        children = [nodes[c] for c in hierarchy.children[path]]
        node["_all"] = node["_own"] + [r for child in children for r in child["_all"]]
        node["_before_all"] = node["_before_own"] + [r for child in children for r in child["_before_all"]]
        subtotal = summarize(node["_all"], unit, SUBTOTAL_SCOPE, SUBTOTAL_METHOD)
        node["subtotal"] = subtotal or result("unavailable", None, unit, SUBTOTAL_SCOPE, SUBTOTAL_METHOD)
        node["known"] = node["subtotal"]["known_value"] or 0
        before_sub = (
            summarize(node["_before_all"], unit, SUBTOTAL_SCOPE, SUBTOTAL_METHOD) if comparing else None
        )
        node["before_subtotal"] = before_sub
        node["before_known"] = (before_sub or {}).get("known_value") or 0
        node["delta"], node["delta_reason"] = None, None
        node["_foreign_all"] = _foreign(node, synthetic, not children) or any(
            child["_foreign_all"] for child in children
        )
        if not comparing:
            continue
        if gate:
            node["delta_reason"] = "; ".join(gate)
        else:
            node["delta"], node["delta_reason"] = _subtree_delta(
                node, path in hierarchy.after_set, path in hierarchy.before_set
            )
    icicle_layout(hierarchy.preorder, hierarchy.children, nodes)
    root = nodes[""]
    structure = root["_scale"] == "structure"
    for path in hierarchy.preorder:
        node = nodes[path]
        rail = []
        if any(r["status"] != "complete" for r in node["_own"] + node["_before_own"]):
            rail.append("unknown")
        # "Too small to label": a drawn tile with no room for any value text (tile_text.py), so the
        # rail's count is exactly the tiles whose value the map cannot show.
        if not structure and not rail and node["width"] > 0 and value_hidden("known", node, root["subtotal"]):
            rail.append("small")
        own_all = node["_own"] + node["_before_own"]
        leaf = not hierarchy.children[path]
        if leaf and own_all and all(r["status"] == "complete" and r["value"] == 0 for r in own_all):
            rail.append("zero")
        node["rail"] = rail
        node["status"] = node["subtotal"]["status"]
        if node["covered"]:
            node["display_status"] = "covered"
        elif node["not_called"] and node["direct"] is None:
            node["display_status"] = NOT_CALLED_TEXT
        elif structure and node["direct"] is None:
            node["display_status"] = "structural"
        else:
            node["display_status"] = (node["direct"] or {}).get("status", "structural")
        node["display"] = long_text(node["subtotal"])
        node["before_display"] = long_text(node["before_subtotal"]) if comparing else None
        node["delta_display"] = delta_text(node["delta"], unit, node["delta_reason"]) if comparing else None
        if node["delta"] is not None and (percent := relative(node["delta"], _before_value(node))):
            node["delta_display"] += f" ({percent})"
        for name in (
            "_own",
            "_before_own",
            "_all",
            "_before_all",
            "_weight",
            "_span",
            "_scale",
            "_foreign_all",
        ):
            node.pop(name, None)
    label = f"{method} · {unit} · {scope}" if not synthetic else f"{UNRECORDED_METHOD} (no recorded value)"
    return {
        "id": f"map-{view}-{k}",
        "kind": "unrecorded" if synthetic else "recorded",
        "label": label,
        "method": method,
        "unit": unit,
        "scope": scope,
        "comparison": comparing,
        "scale": "structure" if structure else "known",
        "known_total": root["known"],
        "layout_total": root.get("layout_total", 0),
        "max_depth": max(node["depth"] for node in nodes.values()),
        "nodes": [nodes[path] for path in hierarchy.preorder],
        "rails": [],
    }


def _before_value(node: Mapping[str, Any]) -> float | None:
    """The complete baseline subtotal a relative delta is taken against, if any."""
    before = node["before_subtotal"]
    return before["value"] if before is not None and before["status"] == "complete" else None


def default_selection(groups: Sequence[Mapping[str, Any]]) -> str:
    """Largest positive direct value in the first group, else on before values, else a called node."""
    if not groups:
        return "node-0"
    nodes = groups[0]["nodes"]
    for field in ("direct", "before_direct"):
        best = None
        for node in nodes:
            value = (node[field] or {}).get("known_value") or 0
            if value > 0 and (best is None or value > best[0]):
                best = (value, node["id"])
        if best is not None:
            return best[1]
    for node in nodes:
        if node["direct_kind"] != "structural" and (node["calls"] or node["before_calls"]):
            return str(node["id"])
    return "node-0"


def group_default(group: Mapping[str, Any]) -> str:
    """The default selection inside one group."""
    return default_selection([group])


def build_maps(
    report: Mapping[str, Any], before: Mapping[str, Any] | None, gate: Sequence[str] = ()
) -> dict[str, dict[str, Any]]:
    """Every view's groups, totals and default selection (render.md 2)."""
    hierarchy = Hierarchy(report, before)
    maps: dict[str, dict[str, Any]] = {}
    for view in VIEWS:
        groups = [
            build_group(hierarchy, view, key, synthetic, gate, k)
            for k, (key, synthetic) in enumerate(_group_keys(hierarchy, view))
        ]
        for group in groups:
            order = {"unknown": 0, "small": 1, "zero": 2}
            cards = [
                (order[node["rail"][0]], i, node["id"])
                for i, node in enumerate(group["nodes"])
                if node["rail"]
            ]
            group["rails"] = [
                {"node": node_id, "kind": group["nodes"][i]["rail"][0]} for _, i, node_id in sorted(cards)
            ]
            group["default"] = group_default(group)
        total = report["totals"].get(VIEW_TOTALS[view])
        before_total = before["totals"].get(VIEW_TOTALS[view]) if before is not None else None
        maps[view] = {
            "view": view,
            "label": VIEW_LABELS[view],
            "groups": groups,
            "total": total,
            "before_total": before_total,
            "comparison_delta": None,
            "initial_node": default_selection(groups),
        }
    return maps
