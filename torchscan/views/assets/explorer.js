/* TorchScan module cost explorer: selection, keyboard navigation, collapse and zoom.
 * Constant file: the page's Content-Security-Policy allows exactly this script by its SHA-256.
 * Report text reaches the DOM only as text nodes (no innerHTML, eval or inline handlers). */
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  // The data object is embedded in the compact torchscan-embed-1 form (torchscan/views/embed.py).
  function decode(packed) {
    var keys = packed.keys;
    var table = [];
    function visit(value) {
      if (typeof value === "string") { table.push(value); return value; }
      if (!Array.isArray(value)) { return value; }
      var out;
      if (value[0] === -2) { return table[value[1]]; }
      if (value[0] === -1) {
        out = [];
        for (var i = 1; i < value.length; i += 1) { out.push(visit(value[i])); }
      } else {
        var names = keys[value[0]];
        out = {};
        for (var j = 1; j < value.length; j += 1) { out[names[j - 1]] = visit(value[j]); }
      }
      table.push(out);
      return out;
    }
    return visit(packed.value);
  }
  var data = decode(JSON.parse(document.getElementById("torchscan-data").textContent));
  var BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
  var state = {};
  var originals = new Map();
  var collapsed = new Map();
  var index = {};
  var lastPath = "";

  function neutral(text) {
    return String(text).replace(BIDI, function (c) {
      return "<U+" + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0") + ">";
    });
  }
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) { node.setAttribute(key, neutral(attrs[key])); });
    (children || []).forEach(function (child) {
      node.appendChild(typeof child === "string" ? document.createTextNode(neutral(child)) : child);
    });
    return node;
  }
  function svgEl(tag, attrs, text) {
    var node = document.createElementNS(SVG, tag);
    Object.keys(attrs || {}).forEach(function (key) { node.setAttribute(key, neutral(attrs[key])); });
    if (text !== undefined) { node.appendChild(document.createTextNode(neutral(text))); }
    return node;
  }
  function pathLabel(path) { return path === "" ? "(root)" : neutral(path); }
  function badgeParts(parts) {
    return el("span", {}, [el("span", { "class": "badge " + parts[0] }, [parts[0]]), " " + parts[1]]);
  }

  // ---- Lazy drawing of a panel (mirrors torchscan/views/html.py and map_svg.py) ----
  function describe(group, node) {
    var calls = Math.max(node.calls.length, node.before_calls.length);
    var parts = [pathLabel(node.path) + ", " + neutral(node.type || "structural")];
    parts.push(calls + " call" + (calls !== 1 ? "s" : "") + ".");
    if (group.scale === "structure") { parts.push("structural · unscaled: width shows shape only, not cost."); }
    parts.push("Derived subtree subtotal: " + node.display + ".");
    if (node.covered) { parts.push("Own calls are covered by an ancestor's inclusive estimate."); }
    else if (!node.direct) { parts.push("Own value: no direct estimate."); }
    else { parts.push("Own value: " + node.direct_display + "."); }
    parts.push("Method: " + neutral(group.method) + ". Scope: " + neutral(group.scope) + ".");
    if (group.comparison) {
      parts.push("Before: " + node.before_display + ".");
      if (node.delta !== null) { parts.push("Complete comparable delta: " + node.delta_display.replace(/^complete · /, "") + "."); }
      else { parts.push("Delta unknown: " + node.delta_reason + "."); }
      if (node.change !== "matched") { parts.push("This module was " + node.change + "."); }
    }
    return parts.join(" ");
  }
  function isNeutral(group, node) { return group.scale === "structure" || !(node.known || node.before_known); }
  function f3(value) { return value.toFixed(3); }
  function drawMap(group) {
    var row = group.comparison ? 76 : 58;
    var height = 4 + (group.max_depth + 1) * row;
    var gid = group.id;
    var svg = svgEl("svg", { "class": "module-map", xmlns: SVG, role: "group", "data-group-id": gid,
      "aria-label": group.label + " module map", viewBox: "0 0 900 " + height, width: "900", height: String(height) });
    var pattern = svgEl("pattern", { id: "hatch-" + gid, width: "8", height: "8", patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" });
    pattern.appendChild(svgEl("rect", { width: "8", height: "8", fill: "#ffffff", "fill-opacity": "0.25" }));
    pattern.appendChild(svgEl("line", { x1: "0", y1: "0", x2: "0", y2: "8", stroke: "#1a1a1a", "stroke-width": "3", "stroke-opacity": "0.55" }));
    var defs = svgEl("defs", {});
    defs.appendChild(pattern);
    svg.appendChild(defs);
    group.nodes.forEach(function (node) {
      var tile = node.tile;
      if (!tile) { return; }
      var box = tile.box;
      var attrs = { "data-map-node": "", "data-node-id": node.id, "data-group-id": gid, "data-parent": node.parent || "",
        "data-depth": String(node.depth), "data-neutral": isNeutral(group, node) ? "true" : "false", tabindex: "0",
        id: gid + "-" + node.id, href: "#module-" + node.id, "aria-label": describe(group, node) };
      if (node.id === group["default"]) { attrs["aria-current"] = "true"; }
      if (node.children.length) { attrs["aria-expanded"] = "true"; }
      var a = svgEl("a", attrs);
      a.appendChild(svgEl("title", {}, pathLabel(node.path) + ": " + node.display));
      a.appendChild(svgEl("rect", { "data-tile": "", x: box[0], y: box[1], width: box[2], height: box[3], fill: tile.fill, "class": "tile" }));
      if (tile.hatched) {
        a.appendChild(svgEl("rect", { "data-overlay": "partial", x: box[0], y: box[1], width: box[2], height: box[3], fill: "url(#hatch-" + gid + ")" }));
      }
      var left = f3(parseFloat(box[0]) + 4);
      var y = parseFloat(box[1]);
      if (tile.label) { a.appendChild(svgEl("text", { x: left, y: f3(y + 16), fill: tile.ink }, tile.label)); }
      if (tile.value) { a.appendChild(svgEl("text", { x: left, y: f3(y + 32), fill: tile.ink, "class": "v" }, tile.value)); }
      if (tile.bars) {
        ["before", "after"].forEach(function (bar, i) {
          a.appendChild(svgEl("rect", { "data-bar": bar, x: f3(parseFloat(box[0])), y: f3(y + 38 + i * 9), width: tile.bars[i], height: "7", "class": "bar-" + bar }));
        });
        if (tile.delta) { a.appendChild(svgEl("text", { x: left, y: f3(y + row - 10), fill: tile.ink }, tile.delta)); }
      }
      svg.appendChild(a);
      if (tile.own) {
        var own = tile.own;
        var g = svgEl("g", { "data-own-node": node.id, "data-group-id": gid, "class": "own-slot" });
        g.appendChild(svgEl("rect", { x: own[0], y: own[1], width: own[2], height: own[3], fill: tile.fill, "fill-opacity": "0.45", stroke: "#555", "stroke-dasharray": "3 2" }));
        if (parseFloat(own[2]) > 30) { g.appendChild(svgEl("text", { x: f3(parseFloat(own[0]) + 4), y: f3(parseFloat(own[1]) + 16) }, "own")); }
        svg.appendChild(g);
      }
    });
    return svg;
  }
  var RAIL_WORDS = { unknown: "not complete", small: "too small to draw", zero: "complete zero" };
  function drawRail(group) {
    if (!group.rails.length) { return null; }
    var nodes = index[currentBuild][group.id].nodes;
    var cards = group.rails.map(function (card) {
      var node = nodes[card.node];
      return el("a", { "class": "rail-card " + node.rail.join(" "), "data-node-id": node.id, "data-group-id": group.id, href: "#module-" + node.id }, [
        el("span", { "class": "rail-path" }, [pathLabel(node.path)]),
        el("span", { "class": "rail-kind" }, [RAIL_WORDS[card.kind]]),
        el("span", { "class": "rail-value" }, [card.text]),
        el("span", { "class": "rail-note" }, [card.note + " · deliberately unscaled, not sized by cost"])]);
    });
    var counts = ["unknown", "small", "zero"].map(function (kind) {
      var n = group.rails.filter(function (c) { return c.kind === kind; }).length;
      return n ? n + " " + RAIL_WORDS[kind] : "";
    }).filter(Boolean).join(", ");
    var details = el("details", { "class": "rail-list" }, [
      el("summary", {}, [group.label + ": " + cards.length + " module" + (cards.length !== 1 ? "s" : "") + " the map cannot size (" + counts + ")"]),
      el("div", { "class": "rail-cards" }, cards)]);
    if (cards.length <= 12) { details.open = true; }
    return el("div", { "class": "rail-group", "data-group-id": group.id }, [details]);
  }
  function drawTop(group) {
    if (!group.top.length) { return null; }
    var headers = [["rank", "Rank"], ["order", "Module call"], ["type", "Type"], ["value", "Value"]].map(function (pair) {
      var th = el("th", pair[0] === "rank" ? { "aria-sort": "ascending" } : {}, [el("button", { type: "button", "data-sort": pair[0] }, [pair[1]])]);
      return th;
    });
    headers.push(el("th", {}, ["% of model total"]));
    var rows = group.top.map(function (row) {
      return el("tr", { "data-rank": String(row.rank), "data-order": String(row.order), "data-type": row.type }, [
        el("td", {}, [String(row.rank)]), el("td", {}, [el("a", { href: "#call-" + row.index }, [row.call])]),
        el("td", {}, [row.type]), el("td", {}, [row.text]), el("td", {}, [row.share])]);
    });
    return el("table", { "class": "top-layers", "data-group-id": group.id }, [
      el("caption", {}, ["Top " + group.top.length + " of " + group.complete_calls + " complete calls in " + group.label +
        " by own value, with the share of the authoritative model total (sortable; incomplete calls are listed under Rankings)"]),
      el("thead", {}, [el("tr", {}, headers)]), el("tbody", {}, rows)]);
  }
  function drawRanking(view, group, total) {
    var calls = {};
    var unranked = [];
    group.nodes.forEach(function (node) {
      node.calls.forEach(function (c) {
        if (!c.in_group) { return; }
        calls[c.index] = c;
        if (c.result.status !== "complete") { unranked.push(c); }
      });
    });
    var compute = ["module_flops", "operator_flops", "macs", "dmas"].indexOf(view) >= 0;
    var rows = group.ranking.map(function (row, i) {
      var c = calls[row.index];
      var cell = [el("a", { href: "#call-" + c.index }, [c.label])];
      if (!compute && c.shared) { cell.push(el("br")); cell.push(el("small", {}, ["shared tensors are accounted to an earlier call"])); }
      return el("tr", {}, [el("td", {}, [String(i + 1)]), el("td", {}, cell),
        el("td", {}, [badge(c.result), " ", el("progress", { max: "1", value: row.fraction }, [row.percent + " of the largest complete call"])]),
        el("td", {}, [c.result.method])]);
    });
    if (!rows.length) { rows = [el("tr", {}, [el("td", { colspan: "4" }, ["No complete calls in this group."])])]; }
    return el("div", { "class": "ranking-group" }, [
      el("p", {}, ["Authoritative model total: ", badge(total)]),
      el("table", {}, [el("caption", {}, ["Top complete calls in " + group.label + " (ranks restart in each method group; bars compare with the largest complete call, not a share of the total)"]),
        el("thead", {}, [el("tr", {}, ["Rank", "Call", "Value", "Method"].map(function (h) { return el("th", {}, [h]); }))]),
        el("tbody", {}, rows)]),
      el("details", {}, [el("summary", {}, ["Unranked incomplete or absent measurements (" + unranked.length + ")"]),
        el("ul", {}, unranked.map(function (c) { return el("li", {}, [el("a", { href: "#call-" + c.index }, [c.label]), ": " + c.display]); }))])]);
  }
  var currentBuild = null;
  function buildPanel(panel) {
    var view = panel.getAttribute("data-view");
    var map = data.maps[view];
    currentBuild = view;
    var total = [el("p", {}, ["Authoritative model total: ", badgeParts(map.total_parts)])];
    if (data.before && map.comparison_delta) { total[0].appendChild(document.createTextNode(" · change " + map.change_text)); }
    var toolbar = el("div", { "class": "toolbar", role: "toolbar", "aria-label": "Map controls" }, [
      ["collapse", "Collapse branch"], ["zoom", "Zoom into branch"], ["up", "Parent module"], ["reset", "Reset map"]].map(function (pair) {
      return el("button", { type: "button", "data-action": pair[0], disabled: "" }, [pair[1]]);
    }));
    var column = el("div", { "class": "map-column" }, [
      el("h3", { "class": "panel-title" }, [map.label + " by module"]),
      el("p", { "class": "note" }, ["This is the module hierarchy of executed calls, not a computational graph. Tile width is the known recorded value of a module and its descendants within one method group; hatched tiles are lower bounds and grey tiles are unknown or unscaled."]),
      total[0], toolbar]);
    var rails = [];
    var tops = [];
    var rankings = [];
    map.groups.forEach(function (group) {
      column.appendChild(el("section", { "class": "map-group", "aria-labelledby": "title-" + group.id }, [
        el("h4", { id: "title-" + group.id }, [group.heading]),
        el("div", { "class": "map-scroll" }, [drawMap(group)])]));
      var rail = drawRail(group);
      if (rail) { rails.push(rail); }
      var top = drawTop(group);
      if (top) { tops.push(top); }
      rankings.push(drawRanking(view, group, map.total));
    });
    if (!rails.length) { rails.push(el("p", {}, ["Every module with a value is drawn at its size."])); }
    column.appendChild(el("div", { "class": "rail", "aria-label": "Modules the map cannot size" }, [el("h4", {}, ["Rail: unknown, tiny and zero modules"])].concat(rails)));
    column.appendChild(el("section", { "class": "top", "aria-label": "Largest calls" }, tops));
    column.appendChild(el("details", { "class": "ranking" }, [el("summary", {}, ["Rankings of complete calls"])].concat(rankings)));
    var aside = el("aside", { "data-inspector": "", "aria-live": "polite", "aria-label": "Inspector" }, []);
    panel.replaceChildren(column, aside);
    panel.removeAttribute("data-lazy");
    panel.querySelectorAll("svg.module-map").forEach(function (svg) {
      originals.set(svg, { viewBox: svg.getAttribute("viewBox"), height: Number(svg.getAttribute("height")) });
    });
  }
  function sortTop(button) {
    var table = button.closest("table");
    var key = button.getAttribute("data-sort");
    var th = button.closest("th");
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("th[aria-sort]").forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    function value(row) {
      if (key === "type") { return row.getAttribute("data-type"); }
      if (key === "value") { return -Number(row.getAttribute("data-rank")); }
      return Number(row.getAttribute("data-" + key));
    }
    rows.sort(function (a, b) {
      var x = value(a);
      var y = value(b);
      var order = x < y ? -1 : (x > y ? 1 : Number(a.getAttribute("data-rank")) - Number(b.getAttribute("data-rank")));
      return ascending ? order : -order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }
  function fmt(value) {
    if (Number.isInteger(value)) { return value.toLocaleString("en-US"); }
    return Number(value.toPrecision(6)).toLocaleString("en-US", { maximumSignificantDigits: 6 });
  }
  function badge(result) {
    var status = !result || result.status === "unavailable" ? "unavailable" : result.status;
    var rest = "unknown";
    if (status === "partial") { rest = "at least " + fmt(result.known_value) + " " + result.unit + " (lower bound; full value unknown)"; }
    if (status === "complete") { rest = fmt(result.value) + " " + result.unit; }
    var span = el("span", {}, [el("span", { "class": "badge " + status }, [status]), " " + rest]);
    return span;
  }

  Object.keys(data.maps).forEach(function (view) {
    index[view] = {};
    data.maps[view].groups.forEach(function (group) {
      var nodes = {};
      group.nodes.forEach(function (node) { nodes[node.id] = node; });
      index[view][group.id] = { group: group, nodes: nodes };
    });
  });

  function panelOf(view) { return document.querySelector('.metric-panel[data-view="' + view + '"]'); }
  function tileOf(groupId, nodeId) { return document.getElementById(groupId + "-" + nodeId); }
  function svgOf(groupId) { return document.querySelector('svg.module-map[data-group-id="' + groupId + '"]'); }
  function currentView() {
    var checked = document.querySelector('input[name="view"]:checked');
    return checked ? checked.value : "module_flops";
  }

  function renderInspector(view, groupId, nodeId) {
    var entry = index[view][groupId];
    var group = entry.group;
    var node = entry.nodes[nodeId];
    var aside = panelOf(view).querySelector("aside[data-inspector]");
    var calls = node.calls;
    var count = calls.length || node.before_calls.length;
    var parts = [];
    parts.push(el("h3", { tabindex: "-1" }, [pathLabel(node.path)]));
    parts.push(el("p", { "class": "inspector-type" }, [
      (node.type || "structural module (not called)") + " · " + count + (count === 1 ? " call" : " calls") +
      (count > 1 ? " (×" + count + " calls)" : "")]));
    parts.push(el("p", {}, ["Subtotal: ", el("span", { "class": "metric-value" }, [badge(node.subtotal)])]));
    parts.push(el("p", { "class": "note" }, ["Derived from this path and its descendants (derived_recorded_subtotal, observed_subtree), not a new measurement."]));
    if (node.covered) {
      parts.push(el("p", {}, ["Own calls are covered by an ancestor's inclusive estimate."]));
    } else if (!node.direct) {
      parts.push(el("p", {}, ["Own value: no direct estimate."]));
    } else {
      parts.push(el("p", {}, ["Own value: ", badge(node.direct)]));
    }
    if (node.shapes) { parts.push(el("p", {}, ["First call: " + node.shapes])); }
    var largest = 0;
    calls.forEach(function (c) {
      if (c.in_group && c.result.status === "complete" && c.result.value > largest) { largest = c.result.value; }
    });
    calls.forEach(function (c) {
      var card = el("div", { "class": "call-card" }, [el("a", { href: "#call-" + c.index }, [c.label]), el("br"), c.display]);
      if (c.in_group && c.result.status === "complete") {
        var fraction = largest ? c.result.value / largest : 0;
        card.appendChild(document.createTextNode(" "));
        card.appendChild(el("progress", { max: "1", value: fraction.toFixed(6) }, [Math.round(fraction * 100) + "%"]));
      }
      if (c.attribution) { card.appendChild(el("br")); card.appendChild(document.createTextNode(c.attribution)); }
      card.appendChild(el("br"));
      card.appendChild(document.createTextNode(neutral(c.shapes)));
      parts.push(card);
    });
    if (node.change === "removed") {
      node.before_calls.forEach(function (c) {
        parts.push(el("div", { "class": "call-card" }, [el("a", { href: "#before-call-" + c.index }, ["Before: " + c.label]), el("br"), c.display, el("br"), c.shapes]));
      });
    }
    if (count > 1) { parts.push(el("p", { "class": "note" }, ["The schema cannot tie a child call to a parent call."])); }
    parts.push(el("p", {}, ["Method: " + group.method, el("br"), "Scope: " + group.scope, el("br"), "Unit: " + group.unit]));
    var diags = data.diagnostics.filter(function (d) { return d.path === node.path; });
    if (diags.length) {
      parts.push(el("h4", {}, ["Diagnostics"]));
      parts.push(el("ul", {}, diags.map(function (d) {
        return el("li", {}, [el("a", { href: "#diagnostic-" + d.index }, [d.code]), ": " + d.message]);
      })));
    }
    if (data.before) {
      parts.push(el("p", {}, ["Before: " + node.before_display, el("br"), "After: " + node.display, el("br"), "Delta: " + node.delta_display]));
      var before = data.before_diagnostics.filter(function (d) { return d.path === node.path || d.path === undefined; });
      parts.push(el("h4", {}, ["Before diagnostics"]));
      parts.push(el("ul", {}, before.length ? before.map(function (d) {
        return el("li", {}, [el("a", { href: "#before-diagnostic-" + d.index }, [(d.path === undefined ? "Global" : "This path") + ": " + d.code]), " " + d.message]);
      }) : [el("li", {}, ["None recorded."])]));
    }
    var indexes = calls.map(function (c) { return c.index; });
    data.suggestions.forEach(function (s) {
      if (s.view === view && indexes.indexOf(s.target.index) >= 0) {
        parts.push(el("p", { "class": "experiment" }, ["Experiment to try: " + s.experiment]));
      }
    });
    aside.replaceChildren.apply(aside, parts);
    return aside;
  }

  function descendants(view, groupId, nodeId) {
    var nodes = index[view][groupId].nodes;
    var out = [];
    var stack = nodes[nodeId].children.slice();
    while (stack.length) {
      var id = stack.pop();
      out.push(id);
      stack.push.apply(stack, nodes[id].children);
    }
    return out;
  }

  function frameOf(tile) {
    var rect = tile.querySelector("rect[data-tile]");
    var svg = tile.ownerSVGElement;
    var height = originals.get(svg).height;
    var x = parseFloat(rect.getAttribute("x"));
    var y = parseFloat(rect.getAttribute("y"));
    var w = Math.max(parseFloat(rect.getAttribute("width")), 900 / 8);
    if (x + w > 900) { x = 900 - w; }
    return { x: x, y: y, w: w, h: height - y };
  }
  function setFrame(svg, frame) {
    var original = originals.get(svg);
    if (!frame) {
      svg.setAttribute("viewBox", original.viewBox);
      svg.setAttribute("height", String(original.height));
      return;
    }
    svg.setAttribute("viewBox", frame.x.toFixed(3) + " " + frame.y.toFixed(3) + " " + frame.w.toFixed(3) + " " + frame.h.toFixed(3));
    svg.setAttribute("height", String(Math.round(frame.h * 900 / frame.w)));
  }
  function inFrame(tile) {
    var svg = tile.ownerSVGElement;
    var box = svg.getAttribute("viewBox").split(" ").map(Number);
    var rect = tile.querySelector("rect[data-tile]");
    var x = parseFloat(rect.getAttribute("x"));
    var y = parseFloat(rect.getAttribute("y"));
    var w = parseFloat(rect.getAttribute("width"));
    var h = parseFloat(rect.getAttribute("height"));
    return x >= box[0] - 0.01 && y >= box[1] - 0.01 && x + w <= box[0] + box[2] + 0.01 && y + h <= box[1] + box[3] + 0.01;
  }
  function isZoomed(svg) { return svg.getAttribute("viewBox") !== originals.get(svg).viewBox; }
  function reveal(tile, scroll) {
    if (!inFrame(tile)) {
      var parentId = tile.getAttribute("data-parent");
      var parent = parentId ? tileOf(tile.getAttribute("data-group-id"), parentId) : null;
      setFrame(tile.ownerSVGElement, parent && isZoomed(tile.ownerSVGElement) ? frameOf(parent) : null);
      if (!inFrame(tile)) { setFrame(tile.ownerSVGElement, null); }
    }
    // Scrolling is for keyboard and focus only: on load or a view switch the page must not move.
    var rect = tile.querySelector("rect[data-tile]");
    if (scroll !== false && rect.scrollIntoView) { rect.scrollIntoView({ block: "nearest", inline: "nearest" }); }
  }

  function updateToolbar(view) {
    var panel = panelOf(view);
    var sel = state[view];
    var entry = index[view][sel.group];
    var node = entry.nodes[sel.node];
    var tile = tileOf(sel.group, sel.node);
    var hasChildren = node.children.some(function (id) { return tileOf(sel.group, id); });
    var collapse = panel.querySelector('button[data-action="collapse"]');
    collapse.disabled = !(tile && hasChildren);
    var isCollapsed = (collapsed.get(sel.group) || new Set()).has(sel.node);
    collapse.textContent = isCollapsed ? "Expand branch" : "Collapse branch";
    panel.querySelector('button[data-action="zoom"]').disabled = !(tile && hasChildren);
    panel.querySelector('button[data-action="up"]').disabled = !node.parent;
    panel.querySelector('button[data-action="reset"]').disabled = false;
  }

  function select(view, groupId, nodeId, focus) {
    var panel = panelOf(view);
    panel.querySelectorAll('[aria-current="true"]').forEach(function (t) { t.removeAttribute("aria-current"); });
    state[view] = { group: groupId, node: nodeId, path: index[view][groupId].nodes[nodeId].path };
    if (view === currentView()) { lastPath = state[view].path; }
    var tile = tileOf(groupId, nodeId);
    if (tile) { tile.setAttribute("aria-current", "true"); }
    panel.querySelectorAll('.rail-card[data-group-id="' + groupId + '"][data-node-id="' + nodeId + '"]').forEach(function (card) {
      card.setAttribute("aria-current", "true");
    });
    var aside = renderInspector(view, groupId, nodeId);
    updateToolbar(view);
    if (tile && tile.hidden) { expandTo(view, groupId, nodeId); }
    if (tile) { reveal(tile, focus !== null); }
    if (focus === "tile" && tile) { tile.focus({ preventScroll: true }); reveal(tile); }
    if (focus === "inspector") { aside.querySelector("h3").focus(); }
  }

  function setCollapsed(view, groupId, nodeId, value) {
    var set = collapsed.get(groupId) || new Set();
    collapsed.set(groupId, set);
    if (value) { set.add(nodeId); } else { set.delete(nodeId); }
    var hiddenIds = new Set();
    set.forEach(function (id) { descendants(view, groupId, id).forEach(function (d) { hiddenIds.add(d); }); });
    var svg = svgOf(groupId);
    svg.querySelectorAll("a[data-map-node]").forEach(function (t) {
      var id = t.getAttribute("data-node-id");
      if (hiddenIds.has(id)) { t.setAttribute("hidden", ""); } else { t.removeAttribute("hidden"); }
      if (t.hasAttribute("aria-expanded")) { t.setAttribute("aria-expanded", set.has(id) ? "false" : "true"); }
    });
    svg.querySelectorAll("g[data-own-node]").forEach(function (g) {
      var id = g.getAttribute("data-own-node");
      if (hiddenIds.has(id) || set.has(id)) { g.setAttribute("hidden", ""); } else { g.removeAttribute("hidden"); }
    });
  }
  function expandTo(view, groupId, nodeId) {
    var nodes = index[view][groupId].nodes;
    var id = nodes[nodeId].parent;
    while (id) { setCollapsed(view, groupId, id, false); id = nodes[id].parent; }
  }

  function visibleTiles(groupId) {
    return Array.prototype.filter.call(svgOf(groupId).querySelectorAll("a[data-map-node]"), function (t) { return !t.hasAttribute("hidden"); });
  }

  function onTileKey(event) {
    var tile = event.target.closest("a[data-map-node]");
    if (!tile) { return; }
    var view = tile.closest(".metric-panel").getAttribute("data-view");
    var groupId = tile.getAttribute("data-group-id");
    var nodeId = tile.getAttribute("data-node-id");
    var tiles = visibleTiles(groupId);
    var position = tiles.indexOf(tile);
    var target = null;
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      select(view, groupId, nodeId, "inspector");
      return;
    }
    if (event.key === "ArrowDown") { target = tiles[Math.min(position + 1, tiles.length - 1)]; }
    else if (event.key === "ArrowUp") { target = tiles[Math.max(position - 1, 0)]; }
    else if (event.key === "Home") { target = tiles[0]; }
    else if (event.key === "End") { target = tiles[tiles.length - 1]; }
    else if (event.key === "ArrowLeft") {
      var parentId = tile.getAttribute("data-parent");
      target = parentId ? tileOf(groupId, parentId) : tile;
    } else if (event.key === "ArrowRight") {
      var set = collapsed.get(groupId);
      if (set && set.has(nodeId)) { setCollapsed(view, groupId, nodeId, false); }
      var children = index[view][groupId].nodes[nodeId].children;
      for (var i = 0; i < children.length && !target; i += 1) {
        var child = tileOf(groupId, children[i]);
        if (child && !child.hasAttribute("hidden")) { target = child; }
      }
      target = target || tile;
    } else { return; }
    event.preventDefault();
    if (target) { select(view, groupId, target.getAttribute("data-node-id"), "tile"); }
  }

  function onClick(event) {
    var tile = event.target.closest("a[data-map-node]");
    var card = event.target.closest("a.rail-card");
    var button = event.target.closest("button[data-action]");
    var panel = event.target.closest(".metric-panel");
    if (tile || card) {
      event.preventDefault();
      var source = tile || card;
      select(panel.getAttribute("data-view"), source.getAttribute("data-group-id"), source.getAttribute("data-node-id"), "inspector");
      return;
    }
    if (button) { runAction(panel.getAttribute("data-view"), button.getAttribute("data-action")); return; }
    var sorter = event.target.closest("button[data-sort]");
    if (sorter) { sortTop(sorter); return; }
    var link = event.target.closest('a[href^="#"]');
    if (link) {
      event.preventDefault();
      var id = link.getAttribute("href").slice(1);
      if (history.replaceState) { history.replaceState(null, "", "#" + id); }
      follow(id);
    }
  }
  function onRailKey(event) {
    var card = event.target.closest("a.rail-card");
    if (card && event.key === "Enter") {
      event.preventDefault();
      var view = card.closest(".metric-panel").getAttribute("data-view");
      select(view, card.getAttribute("data-group-id"), card.getAttribute("data-node-id"), "inspector");
    }
  }

  function runAction(view, action) {
    var sel = state[view];
    var tile = tileOf(sel.group, sel.node);
    var node = index[view][sel.group].nodes[sel.node];
    if (action === "collapse") {
      var set = collapsed.get(sel.group) || new Set();
      setCollapsed(view, sel.group, sel.node, !set.has(sel.node));
      updateToolbar(view);
    } else if (action === "zoom" && tile) {
      setFrame(tile.ownerSVGElement, frameOf(tile));
      reveal(tile);
    } else if (action === "up" && node.parent) {
      var parentTile = tileOf(sel.group, node.parent);
      if (parentTile && isZoomed(parentTile.ownerSVGElement)) {
        setFrame(parentTile.ownerSVGElement, node.parent === "node-0" ? null : frameOf(parentTile));
      }
      select(view, sel.group, node.parent, "inspector");
    } else if (action === "reset") {
      data.maps[view].groups.forEach(function (group) {
        collapsed.set(group.id, new Set());
        setCollapsed(view, group.id, "node-0", false);
        setFrame(svgOf(group.id), null);
      });
      updateToolbar(view);
    }
  }

  function groupFor(view, path) {
    var fallback = null;
    var groups = data.maps[view].groups;
    for (var i = 0; i < groups.length; i += 1) {
      var group = groups[i];
      var node = group.nodes.filter(function (n) { return n.path === path; })[0];
      if (!node) { continue; }
      var recorded = node.calls.some(function (c) { return c.in_group; }) || node.before_calls.some(function (c) { return c.in_group; });
      if (recorded && tileOf(group.id, node.id)) { return [group.id, node.id]; }
      if (!fallback && (tileOf(group.id, node.id) || i === groups.length - 1)) { fallback = [group.id, node.id]; }
    }
    return fallback || [groups[0].id, groups[0].nodes[0].id];
  }

  function follow(id) {
    var target = document.getElementById(id);
    if (!target) { return; }
    if (target.matches && target.matches("a[data-map-node]")) { target.focus(); return; }
    var parent = target.parentElement;
    while (parent) {
      if (parent.tagName === "DETAILS") { parent.open = true; }
      parent = parent.parentElement;
    }
    if (target.tagName === "DETAILS") { target.open = true; }
    if (!target.hasAttribute("tabindex") && !target.matches("a, button, input, summary")) { target.setAttribute("tabindex", "-1"); }
    target.focus({ preventScroll: true });
    target.scrollIntoView({ block: "start" });
  }

  document.querySelectorAll("svg.module-map").forEach(function (svg) {
    originals.set(svg, { viewBox: svg.getAttribute("viewBox"), height: Number(svg.getAttribute("height")) });
  });
  function activate(panel, path) {
    var view = panel.getAttribute("data-view");
    if (panel.hasAttribute("data-lazy")) { buildPanel(panel); }
    panel.querySelectorAll("button[data-action], button[data-sort]").forEach(function (b) { b.disabled = false; });
    if (path === undefined) {
      var initial = panel.getAttribute("data-initial-node");
      path = index[view][data.maps[view].groups[0].id].nodes[initial].path;
    }
    var choice = groupFor(view, path);
    select(view, choice[0], choice[1], null);
  }
  document.querySelectorAll(".metric-panel").forEach(function (panel) {
    if (!panel.hasAttribute("data-lazy")) { activate(panel); }
    panel.addEventListener("keydown", onTileKey);
    panel.addEventListener("keydown", onRailKey);
    panel.addEventListener("focusin", function (event) {
      var tile = event.target.closest && event.target.closest("a[data-map-node]");
      if (tile) { reveal(tile); }
    });
  });
  document.addEventListener("click", onClick);
  if (state[currentView()]) { lastPath = state[currentView()].path; }
  document.querySelectorAll('input[name="view"]').forEach(function (radio) {
    radio.addEventListener("change", function () {
      var panel = panelOf(currentView());
      if (panel.hasAttribute("data-lazy")) { activate(panel, lastPath); return; }
      var choice = groupFor(currentView(), lastPath);
      select(currentView(), choice[0], choice[1], null);
    });
  });
  window.addEventListener("hashchange", function () { follow(location.hash.slice(1)); });
  if (location.hash.length > 1) { follow(location.hash.slice(1)); }
})();
