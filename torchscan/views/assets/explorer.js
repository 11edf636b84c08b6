/* TorchScan module cost explorer: selection, keyboard navigation, collapse and zoom.
 * Constant file: html.py wraps it and explorer-draw.js in one strict function, and the page's
 * Content-Security-Policy allows exactly that script by its SHA-256.
 * Report text reaches the DOM only as text nodes (no innerHTML, eval or inline handlers). */
  var SVG = "http://www.w3.org/2000/svg";
  // The data object is embedded in the compact torchscan-embed-1 form (torchscan/views/common/embed.py).
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
  var currentBuild = null;
  var RAIL_WORDS = { unknown: "not complete", small: "too small to label", zero: "complete zero" };

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
      (node.type || "structural module (not called)") + " · " + (node.not_called ?
        "not called (the module never ran as a module call)" :
        count + (count === 1 ? " call" : " calls") + (count > 1 ? " (×" + count + " calls)" : ""))]));
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
        card.appendChild(el("progress", { max: "1", value: fraction.toFixed(6) }, [(Math.round(fraction * 1000) / 10).toFixed(1) + " %"]));
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
    [["Diagnostics", false], ["Not requested (informational)", true]].forEach(function (pair) {
      var listed = diags.filter(function (d) { return Boolean(d.informational) === pair[1]; });
      if (!listed.length) { return; }
      parts.push(el("h4", {}, [pair[0]]));
      parts.push(el("ul", {}, listed.map(function (d) {
        return el("li", {}, [el("a", { href: "#diagnostic-" + d.index }, [d.code]), " [" + d.metric + "]: " + d.message]);
      })));
    });
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

  // Zoom re-lays the whole map so the chosen branch spans the full width (issue 23): every tile is
  // moved and resized by the same horizontal transform, texts keep their normal size and are fitted
  // again to the new widths, and the viewBox starts at the branch's row. Tiles outside the branch
  // land outside the viewBox (still focusable: focusing one re-frames the map).
  var zoomed = new Map();
  function fitText(text, pixels) {
    var chars = Array.from(text);
    var limit = Math.trunc((pixels - 8) / 6.6);
    if (limit < 5 && chars.length > limit) { return ""; }
    return chars.length <= limit ? text : chars.slice(0, Math.max(limit - 1, 1)).join("") + "…";
  }
  // A value or change is shown whole or not at all (tile_text.py fit_value): never a stump of a number.
  function fitWhole(candidates, pixels) {
    var limit = Math.trunc((pixels - 8) / 6.6);
    for (var i = 0; i < candidates.length; i += 1) {
      if (Array.from(candidates[i]).length <= limit) { return candidates[i]; }
    }
    return "";
  }
  // The shorter forms of tile_text.py candidates and map_svg.py delta_candidates: a value line, then
  // its last "·" part; a change, then without "· complete", then without its relative share.
  function valueCandidates(text) {
    var last = text.split(" · ").pop();
    return last === text ? [text] : [text, last];
  }
  function deltaCandidates(text) {
    if (!text) { return []; }
    var shorter = text.replace(/ · complete$/, "");
    return [text, shorter, shorter.split(" (")[0]];
  }
  function zoomedBox(row, x, width, depth) {
    var pixels = width * 892;
    var gap = Math.min(1.5, pixels / 5);
    return [f3(4 + x * 892), f3(4 + depth * row), f3(Math.max(pixels - gap, 0)), f3(row - 6)];
  }
  function relayTile(a, group, node, frame) {
    var tile = node.tile;
    var d = tile;
    if (frame) {
      var row = group.comparison ? 76 : 58;
      var width = node.width / frame.width;
      var box = zoomedBox(row, (node.x - frame.x) / frame.width, width, node.depth);
      var pixels = parseFloat(box[2]);
      // Unfitted value and change lines worded once in Python (map_svg.py, tile_text.py), absent when
      // both fit whole; the label is map_svg.py node_label (a name, a call count, a change word).
      var full = tile.full === undefined ? [tile.value, tile.delta] : tile.full;
      if (typeof full === "string") { full = [full, ""]; }
      var count = Math.max(node.calls.length, node.before_calls.length);
      var label = node.label + (count > 1 ? " ×" + count + " calls" : "") + (node.change !== "matched" ? " · " + node.change : "");
      var bars = null;
      if (tile.bars) {
        var scale = group.scale === "known" ? 892 / (group.layout_total || 1) / frame.width : 0;
        bars = [node.before_known, node.known].map(function (known) { return f3(scale ? Math.min(known * scale, pixels) : 0); });
      }
      d = { box: box, label: fitText(label, pixels), value: fitWhole(valueCandidates(full[0]), pixels),
        bars: bars, delta: fitWhole(deltaCandidates(full[1]), pixels) };
    }
    Array.prototype.slice.call(a.childNodes).forEach(function (child) {
      if (child.nodeName !== "title") { a.removeChild(child); }
    });
    fillTile(a, group, tile, d);
    var own = a.ownerSVGElement.querySelector('g[data-own-node="' + node.id + '"]');
    if (own && tile.own) {
      own.replaceChildren();
      var ownBox = tile.own;
      if (frame) {
        ownBox = zoomedBox(group.comparison ? 76 : 58, (node.direct_x - frame.x) / frame.width,
          node.direct_width / frame.width, node.depth + 1);
      }
      fillOwn(own, tile, ownBox);
    }
  }
  function zoomTo(svg, nodeId) {
    var view = svg.closest(".metric-panel").getAttribute("data-view");
    var entry = index[view][svg.getAttribute("data-group-id")];
    var original = originals.get(svg);
    var target = nodeId && nodeId !== "node-0" ? entry.nodes[nodeId] : null;
    if ((zoomed.get(svg) || null) !== (target ? nodeId : null)) {
      var frame = target ? { x: target.x, width: target.width } : null;
      svg.querySelectorAll("a[data-map-node]").forEach(function (a) {
        relayTile(a, entry.group, entry.nodes[a.getAttribute("data-node-id")], frame);
      });
    }
    zoomed.set(svg, target ? nodeId : null);
    if (!target) {
      svg.setAttribute("viewBox", original.viewBox);
      svg.setAttribute("height", String(original.height));
      return;
    }
    var y = 4 + target.depth * (entry.group.comparison ? 76 : 58);
    svg.setAttribute("viewBox", "0 " + f3(y) + " 900 " + f3(original.height - y));
    svg.setAttribute("height", String(Math.round(original.height - y)));
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
  function isZoomed(svg) { return Boolean(zoomed.get(svg)); }
  function reveal(tile, scroll) {
    if (!inFrame(tile)) {
      var parentId = tile.getAttribute("data-parent");
      var parent = parentId ? tileOf(tile.getAttribute("data-group-id"), parentId) : null;
      zoomTo(tile.ownerSVGElement, parent && isZoomed(tile.ownerSVGElement) ? parentId : null);
      if (!inFrame(tile)) { zoomTo(tile.ownerSVGElement, null); }
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
    if (tile && tile.hasAttribute("hidden")) { expandTo(view, groupId, nodeId); }  // SVG <a> has no .hidden
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
      zoomTo(tile.ownerSVGElement, sel.node);
      reveal(tile);
    } else if (action === "up" && node.parent) {
      var parentTile = tileOf(sel.group, node.parent);
      if (parentTile && isZoomed(parentTile.ownerSVGElement)) {
        zoomTo(parentTile.ownerSVGElement, node.parent);
      }
      select(view, sel.group, node.parent, "inspector");
    } else if (action === "reset") {
      data.maps[view].groups.forEach(function (group) {
        collapsed.set(group.id, new Set());
        setCollapsed(view, group.id, "node-0", false);
        zoomTo(svgOf(group.id), null);
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
  // Search (views-3.md 6): an exact module path, else the shortest path containing the text (case
  // ignored, "(root)" for the root), is selected in the current view as a click would, its branch
  // expanded and brought into the map's frame; the status line says what was found, or that nothing was.
  var searchBox = document.getElementById("module-search");
  function findPath(view, query) {
    var text = query.trim();
    if (!text) { return null; }
    var nodes = data.maps[view].groups[0].nodes;
    var lower = text.toLowerCase();
    var exact = nodes.filter(function (n) { return n.path === text || (text === "(root)" && n.path === ""); })[0];
    if (exact) { return exact.path; }
    var matches = nodes.filter(function (n) { return n.path.toLowerCase().indexOf(lower) >= 0; });
    matches.sort(function (a, b) { return a.path.length - b.path.length || (a.path < b.path ? -1 : 1); });
    return matches.length ? matches[0].path : null;
  }
  function search(query) {
    var view = currentView();
    var status = document.getElementById("module-search-status");
    var path = findPath(view, query);
    if (path === null) {
      status.textContent = query.trim() ? "No module path contains \u201c" + neutral(query.trim()) + "\u201d." : "";
      return;
    }
    var panel = panelOf(view);
    if (panel.hasAttribute("data-lazy")) { activate(panel, path); }
    var choice = groupFor(view, path);
    var tile = tileOf(choice[0], choice[1]);
    select(view, choice[0], choice[1], tile ? "tile" : "inspector");
    status.textContent = "Showing " + pathLabel(path) + (tile ? "." : " (no tile in this view: see the inspector).");
  }
  if (searchBox) {
    var paths = data.maps[currentView()].groups[0].nodes.map(function (n) { return n.path; }).filter(Boolean);
    var list = document.getElementById("module-paths");
    paths.forEach(function (path) { list.appendChild(el("option", { value: path })); });
    searchBox.disabled = false;
    searchBox.addEventListener("keydown", function (event) {
      if (event.key === "Enter") { event.preventDefault(); search(searchBox.value); }
    });
    searchBox.addEventListener("change", function () { search(searchBox.value); });
  }
  window.addEventListener("hashchange", function () { follow(location.hash.slice(1)); });
  if (location.hash.length > 1) { follow(location.hash.slice(1)); }
